"""The weights a worker acts with: loaded when a newer version has reached it (whether the
next chunk must wait for a newer one is the flow's to say: its sender's ``needs_newer``)."""

from __future__ import annotations

import time

from algos.base import Policy
from joyrl_ray.wire.handles import ObjectStore
from joyrl_ray.wire.messages import Weights


class ActingWeights:
    """The version of the acting policy's weights, and a newer one still travelling."""

    def __init__(
        self,
        store: ObjectStore,
        policy: Policy,
        fetch_timeout_s: float,
        *,
        always_wait: bool = False,
    ) -> None:
        self.store = store
        self.policy = policy
        self.fetch_timeout_s = fetch_timeout_s
        #: Load newer weights as soon as they are known, waiting for them (lockstep: when
        #: they arrive must not change what the worker does).
        self.always_wait = always_wait
        self.version = 0
        self.pending: Weights | None = None

    def take(self, weights: Weights | None, *, now: bool) -> float:
        """Load the newest weights known (``weights`` if newer), once fetched or, ``now``,
        waiting for them; returns the seconds spent fetching."""
        if weights is not None and weights.version > self.version:
            self.pending = weights
        pending = self.pending
        if pending is None or not (now or self.always_wait or self.store.ready(pending.box)):
            return 0.0  # still travelling: keep acting with the current weights meanwhile
        t0 = time.monotonic()
        self.policy.set_weights(self.store.get(pending.box, timeout_s=self.fetch_timeout_s))
        self.version = pending.version
        self.pending = None
        return time.monotonic() - t0
