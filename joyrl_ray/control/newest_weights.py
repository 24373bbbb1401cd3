"""The newest weights a run has published, as the coordinator hands them to workers."""

from __future__ import annotations

import numpy as np

from joyrl_ray.wire.handles import ObjectStore
from joyrl_ray.wire.messages import Weights


class NewestWeights:
    """The newest published weights and their version, fenced so that versions only grow."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.version = 0  # the newest version published (0: none yet)
        self.unshared: dict[str, np.ndarray] | None = None  # newest, not yet put
        self.shared: Weights | None = None  # the newest version put in the store
        self.rejected = 0

    def publish(self, weights: dict[str, np.ndarray], version: int) -> bool:
        """Keep a copy of ``weights`` as the newest version; refuse a version not newer.

        The copy, because on Ray the arrays may be views of the call's argument, which the
        learner owns: the weights stay fetchable when the learner that made them dies.
        """
        if version <= self.version:
            self.rejected += 1
            return False
        self.version = version
        self.unshared = {name: np.array(a, copy=True) for name, a in weights.items()}
        return True

    def newest(self) -> Weights | None:
        """The newest weights as a store reference, put on first use.

        Workers take weights only with an ack, so a version that no ack hands out before
        the next publish is never put: putting costs this process far more than holding
        the arrays does.
        """
        if self.unshared is not None:
            self.shared = Weights(self.version, self.store.put(self.unshared))
            self.unshared = None
        return self.shared

    def newer_than(self, known_version: int) -> Weights | None:
        return self.newest() if self.version > known_version else None
