"""A learner's view of the replay shards: rounds from each shard in turn, a few in flight.

Round robin, not weighted by size: each shard's own rate limiter already grants updates in
proportion to the rows inserted into it, so asking every shard in turn takes batches from
each in proportion to its inserts, while a size-weighted pick would need every shard's
size first (one more call per round) and would favour a shard that has stopped growing.
Every rank of a learner group asks the same shards for the same rounds in the same order,
so all ranks get the same number of batches from each round.

A shard that died (Ray restarts it empty) answers nothing for a while: its rounds come
back empty, priorities meant for rows it held are dropped with them, and the learner goes
on with the others.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from joyrl_ray.wire.handles import Call, RoleDied
from joyrl_ray.wire.messages import SampleGrant

if TYPE_CHECKING:
    from joyrl_ray.data.clients import DataServerClient

MAX_IN_FLIGHT = 3  # sample requests in flight across shards (at most one per shard)
MAX_PRIORITY_CALLS = 16  # priority updates unanswered; the next waits for the oldest
CALL_SLACK_S = 60.0


class ShardSampler:
    """Requests rounds of ``rows``-row batches from every shard in turn."""

    def __init__(
        self, shards: Sequence[DataServerClient], *, rank: int, rows: int, max_updates: int
    ) -> None:
        self.shards = list(shards)
        self.rank, self.rows, self.max_updates = rank, rows, max_updates
        self.depth = max(1, min(MAX_IN_FLIGHT, len(self.shards)))
        self.round_ids = [0] * len(self.shards)
        self.next_shard = 0
        self.in_flight: deque[tuple[int, Call[SampleGrant]]] = deque()
        self.stopped: set[int] = set()
        self.lost: dict[int, str] = {}  # shards that died during a call: why
        self.priority_calls: deque[Call[int]] = deque()

    @property
    def all_stopped(self) -> bool:
        return len(self.stopped) == len(self.shards)

    def _request(self, wait_s: float) -> None:
        shard = self.next_shard
        self.next_shard = (shard + 1) % len(self.shards)
        self.round_ids[shard] += 1
        call = self.shards[shard].sample_round(
            self.rank, self.round_ids[shard], self.rows, self.max_updates, wait_s
        )
        self.in_flight.append((shard, call))

    def next_round(self, wait_s: float) -> tuple[int, SampleGrant]:
        """The oldest requested round (its shard, its grant); the next is requested at once,
        so it is fetched while the learner learns."""
        while len(self.in_flight) < self.depth:
            self._request(wait_s)
        shard, call = self.in_flight.popleft()
        try:
            grant = call.result(timeout_s=wait_s + CALL_SLACK_S)
        except RoleDied as exc:
            self.lost[shard] = str(exc)
            grant = SampleGrant([], False)
        if grant.stop:
            self.stopped.add(shard)
        self._request(wait_s)
        return shard, grant

    def update_priorities(
        self, shard: int, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> None:
        """New priorities, to the shard the rows came from (not waited for)."""
        call = self.shards[shard].update_priorities(slots, generations, priorities)
        self.priority_calls.append(call)
        while len(self.priority_calls) > MAX_PRIORITY_CALLS:
            _settle(self.priority_calls.popleft(), CALL_SLACK_S)

    def check(self) -> None:
        """Raise the error of an answered priority update that failed (a dead shard aside)."""
        while self.priority_calls and self.priority_calls[0].done():
            _settle(self.priority_calls.popleft(), CALL_SLACK_S)

    def settle(self) -> None:
        """Wait for the calls still in flight (rounds granted at the stop are not learned)."""
        while self.priority_calls:
            _settle(self.priority_calls.popleft(), CALL_SLACK_S)
        while self.in_flight:
            _settle(self.in_flight.popleft()[1], CALL_SLACK_S)


def _settle(call: Call[object], timeout_s: float) -> None:
    try:
        call.result(timeout_s=timeout_s)
    except RoleDied:  # the shard died: what the call was about died with it
        pass
