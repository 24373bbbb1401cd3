"""What a learner needs of its data flow: rounds of data to learn from.

A learner knows nothing of replay shards or rollout queues. Its flow (:mod:`joyrl_ray.flows`)
builds a :class:`LearnerSource` on the driver, with the clients it calls; the source
travels to each learner (pickled, on Ray) and is bound there to the learner's rank.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joyrl_ray.batch import Batch
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.wire.handles import ObjectStore

LEARNED, IDLE, STOPPED = "learned", "idle", "stopped"


@dataclass
class Round:
    """What one call for data brought: batches to learn (maybe none), or the stop."""

    batches: list[Batch] = field(default_factory=list)
    stopped: bool = False
    tag: Any = None  # the source's own note of where the round came from


class LearnerSource(ABC):
    """The learner's half of a data flow."""

    #: Whether every update is a new weights version (on-policy: the next rollouts need it).
    publishes_every_update: bool = False
    #: Env steps of the data handed to the learner so far, where the flow knows them (the
    #: synchronous rollouts); 0 where it does not.
    env_steps_learned: int = 0

    def bind(self, rank: int, world_size: int, max_updates: int) -> None:
        """At the learner: its rank, the group's size, the most updates one round may grant."""
        self.rank, self.world_size = rank, world_size

    @abstractmethod
    def learner_started(self, generation: int) -> None:
        """Tell the data plane a (re)started learner group is here; raises ``RoleDied`` when
        an actor the flow cannot do without is gone."""

    def check(self) -> None:
        """Raise the error of an earlier call that failed."""
        return None

    @abstractmethod
    def next_round(self, version: int, wait_s: float) -> Round:
        """The next round of data (waiting up to ``wait_s``); ``version`` is the learner's
        weights version."""

    def learned(self, round_: Round, priorities: list[np.ndarray | None]) -> None:
        """The round was learned; ``priorities`` are each batch's new ones (PER), if any."""
        return None

    def settle(self) -> None:
        """At the stop: wait for the calls still in flight."""
        return None


@dataclass
class LearnerLinks:
    """A learner's peers: the coordinator, its flow's source of data, and the object store
    its checkpoints go into."""

    coordinator: CoordinatorClient
    source: LearnerSource
    store: ObjectStore
