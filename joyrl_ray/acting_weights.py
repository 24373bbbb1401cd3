"""The weights a worker acts with: loaded when a newer version has reached it, and waited
for when the next chunk needs a newer version."""

from __future__ import annotations

import time

from algos.base import Policy
from joyrl_ray.handles import ObjectStore
from joyrl_ray.messages import Weights


class ActingWeights:
    """The version of the acting policy's weights, and a newer one still travelling."""

    def __init__(
        self,
        store: ObjectStore,
        policy: Policy,
        fetch_timeout_s: float,
        train: bool,
        on_policy: bool,
        async_rollouts: bool,
    ) -> None:
        self.store = store
        self.policy = policy
        self.fetch_timeout_s = fetch_timeout_s
        self.train = train
        self.on_policy = on_policy
        self.async_rollouts = async_rollouts
        self.version = 0
        self.pending: Weights | None = None
        self.rollout_version = -1  # on-policy: the version of the worker's last rollout

    def take(self, weights: Weights | None, *, now: bool) -> float:
        """Load the newest weights known (``weights`` if newer), once fetched or, ``now``,
        waiting for them; returns the seconds spent fetching."""
        if weights is not None and weights.version > self.version:
            self.pending = weights
        pending = self.pending
        if pending is None or not (now or self.store.ready(pending.box)):
            return 0.0  # still travelling: keep acting with the current weights meanwhile
        t0 = time.monotonic()
        self.policy.set_weights(self.store.get(pending.box, timeout_s=self.fetch_timeout_s))
        self.version = pending.version
        self.pending = None
        return time.monotonic() - t0

    def needs_newer(self) -> bool:
        """Whether the next chunk must wait for a newer version than this one."""
        if not self.train:
            return self.version == 0  # test mode acts only with the checkpoint's
        if self.async_rollouts:  # any recent version will do, but the learner's, not its own
            return self.version == 0
        # On-policy: every rollout needs a version newer than the last one's (and the first
        # needs the learner's first one; a worker's own initial weights would be stale).
        return self.on_policy and self.version <= max(self.rollout_version, 0)
