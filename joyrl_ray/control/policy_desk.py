"""One policy's share of the control plane.

The coordinator keeps a desk per policy: the policy's newest weights (fenced: versions only
grow), its learner group's generation and update count, and the books of its transitions;
plus the data-plane actors that hold its rows, which it tells of the stop. A single-agent
run has one desk (:data:`~joyrl_ray.policies.DEFAULT_POLICY`); a multi-agent run one per
policy its workers act with and report for.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.control.newest_weights import NewestWeights
from joyrl_ray.control.transition_books import TransitionBooks
from joyrl_ray.wire.handles import ObjectStore


class PolicyDesk:
    """A policy's weights, learner generation and updates, and transition books."""

    def __init__(self, policy: str, store: ObjectStore, learning: bool) -> None:
        self.policy = policy
        self.learning = learning  # a learner trains it (not a fixed policy, nor test mode)
        self.weights = NewestWeights(store)
        self.books = TransitionBooks(learning)
        self.learner_generation = 0
        self.updates = 0
        self.data_plane: list[Any] = []  # clients with request_stop(reason)
