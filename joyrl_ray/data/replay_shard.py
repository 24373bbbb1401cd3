"""The DataServer: one shard of the replay, with its own rate limiter.

Off-policy runs have ``general_cfg.n_replay_shards`` of them. Worker ``k`` inserts into
shard ``k mod n`` (its frames stay with the shard that holds its steps); learners sample
every shard in turn (see :mod:`joyrl_ray.roles.learner.sampling`) and write priorities back to the
shard a row came from. A shard knows nothing of the run beyond its rows: the coordinator
counts env steps and tells it when the run stops. A worker's report travels with its rows;
the shard forwards its workers' reports to the coordinator a few times a second (see
:mod:`joyrl_ray.data.report_forwarder`) and its insert acks pass the coordinator's answer
on (the stop, newer weights), so no worker calls the coordinator per chunk.

Prioritized replay is per shard (as in Ape-X): priorities, the sum tree and the importance
weights' normalisation are this shard's own.

Nobody polls it: a throttled worker and a learner ahead of the data block inside the call
until the wait is over, the run stops, or the call's deadline passes (a threaded actor on
Ray; in one process every deadline is 0).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from joyrl_ray.batch import NEXT_OBS, OBS, Batch, batch_rows
from joyrl_ray.data.buffers import PrioritizedReplayBuffer, ReplayBuffer
from joyrl_ray.data.buffers.frames import FrameStore, frame_capacity
from joyrl_ray.data.dataset_rows import DatasetSource
from joyrl_ray.data.rate_limiter import DRAINING_STOPS, SampleToInsertRatio
from joyrl_ray.data.report_forwarder import FORWARD_EVERY_S, ReportForwarder, ReportSink
from joyrl_ray.data.role import DataPlaneRole
from joyrl_ray.data_needs import ReplayNeeds
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.wire.messages import (
    Frames,
    InsertAck,
    Placement,
    PushAck,
    SampleGrant,
    WorkerReport,
)

CONTROL_WAIT_S = 5.0  # how long a worker done waiting for room waits for the newest weights


@dataclass
class ShardStats:
    shard: int
    transitions_stored: int
    transitions_dropped: dict[str, int]
    priorities_applied: int
    buffer: dict[str, float]
    busy_s: float


def build_buffer(needs: ReplayNeeds, capacity: int, seed: int | None) -> ReplayBuffer:
    if needs.prioritized:
        return PrioritizedReplayBuffer(
            capacity,
            alpha=needs.per_alpha,
            beta_start=needs.per_beta_start,
            beta_annealing_samples=needs.per_beta_samples,
            eps=needs.per_eps,
            seed=seed,
        )
    return ReplayBuffer(capacity, seed=seed)


class DataServer(DataPlaneRole):
    """One replay shard: inserts, samples, priority updates, and its rate limiter."""

    def __init__(
        self,
        *,
        needs: ReplayNeeds,
        shard: int = 0,
        n_shards: int = 1,
        n_learners: int = 1,
        learner_lag_tolerance: int = 64,
        seed: int | None = None,
        buffer_state: dict[str, np.ndarray] | None = None,
        dataset: DatasetSource | None = None,
        coordinator: ReportSink | None = None,
        forward_every_s: float = FORWARD_EVERY_S,
        steps_column: str | None = None,
    ) -> None:
        role = "data server" if n_shards == 1 else f"data server {shard}"
        super().__init__(role)
        self.needs = needs
        self.shard = shard
        #: The column holding the env steps each row stores (None: a row is one step); what
        #: the shard counts as stored, dropped and inserted (the update-to-data ratio).
        self.steps_column = steps_column
        self.capacity = math.ceil(needs.buffer_size / n_shards)
        rows = dataset.part(shard, n_shards) if dataset is not None else None
        if rows is not None:  # the whole of its part stays: nothing is overwritten
            self.capacity = max(self.capacity, batch_rows(rows))
        shard_seed = None if seed is None else seed + 7919 * shard
        self.buffer = build_buffer(needs, self.capacity, shard_seed)
        self.frames: FrameStore | None = None  # stacked image observations, one frame each
        warmup = math.ceil(needs.learn_start / n_shards)
        if buffer_state is not None:  # a resume that kept its replay: no refill needed
            self.buffer.load_state_dict(buffer_state)
            if "frame_ring" in buffer_state:
                self.frames = FrameStore(frame_capacity(self.capacity))
                self.frames.load_state_dict(buffer_state)
            warmup = 0
        if rows is not None:  # a run with no workers: its replay is its part of a dataset
            self.buffer.add(rows)
        self.limiter = SampleToInsertRatio(
            updates_per_step=needs.updates_per_step,
            warmup=warmup,
            min_rows=needs.batch_size,
            lag_tolerance=learner_lag_tolerance,
            n_learners=n_learners,
            unlimited=dataset is not None,
        )
        self.stored = 0
        self.dropped: Counter[str] = Counter()
        self.priorities_applied = 0
        self.busy_s = 0.0
        self.reports = ReportForwarder(shard, coordinator, forward_every_s)
        freeze_startup_heap()

    def _throttled(self) -> bool:
        return self.limiter.throttled(len(self.buffer), self.stop_reason is not None)

    # ----- workers -----
    def insert(
        self,
        worker_id: int,
        batch: Batch | None,
        frames: Frames | None = None,
        report: WorkerReport | None = None,
        known_version: int = 0,
    ) -> InsertAck:
        """Store a worker's folded transitions (with ``frames``, observations are frame ids)
        and take its ``report`` for the coordinator; the ack carries the stop and weights
        newer than ``known_version`` as the coordinator last answered this shard."""
        t0 = time.monotonic()
        with self._cond:
            rows = self._env_steps(batch)
            stored = self.stop_reason is None
            if not stored:  # a chunk that raced the stop: not learned from
                self.dropped["after_stop"] += rows
            elif rows:
                assert batch is not None
                if frames is not None:
                    batch = self._frame_indices(worker_id, batch, frames)
                self.buffer.add(batch)
                self.stored += rows
                self.limiter.inserted += rows
                self._cond.notify_all()
            throttled = self._throttled()
        if report is not None:
            self.reports.add(report, rows, stored)
        ack = self._ack(rows if stored else 0, throttled, self.reports.latest(), known_version)
        self.busy_s += time.monotonic() - t0
        return ack

    def _env_steps(self, batch: Batch | None) -> int:
        """The env steps ``batch`` stores: its rows, or the sum of its steps column."""
        if not batch:
            return 0
        if self.steps_column is None:
            return batch_rows(batch)
        return int(np.sum(batch[self.steps_column]))

    def flush_reports(self, timeout_s: float) -> bool:
        """Forward the reports still here and wait for the answer (at the end of a run)."""
        return self.reports.flush(timeout_s)

    def _frame_indices(self, worker_id: int, batch: Batch, frames: Frames) -> Batch:
        if self.frames is None:
            self.frames = FrameStore(frame_capacity(self.capacity))
        self.frames.add(worker_id, frames.ids, frames.pixels)
        return {
            **batch,
            OBS: self.frames.translate(worker_id, batch[OBS]),
            NEXT_OBS: self.frames.translate(worker_id, batch[NEXT_OBS]),
        }

    def wait_for_room(self, worker_id: int, timeout_s: float, known_version: int = 0) -> InsertAck:
        """Block while the learners trail this shard's ratio; the ack says if they still do,
        with the stop and weights newer than ``known_version`` as they are after the wait."""
        with self._cond:
            self._wait(
                f"worker {worker_id}",
                f"the learner to catch up (replay shard {self.shard})",
                lambda: not self._throttled(),
                timeout_s,
            )
            throttled = self._throttled()
        return self._ack(0, throttled, self.reports.fresh(CONTROL_WAIT_S), known_version)

    def _ack(self, rows: int, throttled: bool, control: PushAck, known_version: int) -> InsertAck:
        newer = control.weights
        return InsertAck(
            self.shard,
            rows,
            throttled,
            stop=control.stop or self.stop_reason is not None,
            env_steps=control.env_steps,
            weights=newer if newer is not None and newer.version > known_version else None,
            normalization=control.normalization,
        )

    # ----- learners -----
    def learner_started(self, generation: int) -> Placement:
        """A learner group (re)starts: the old group's rounds are void. Says where this runs."""
        with self._cond:
            self.limiter.new_generation(generation)
            self._cond.notify_all()
            return self.placement

    def _learning_over(self) -> bool:
        if self.stop_reason is None:
            return False
        if self.stop_reason not in DRAINING_STOPS:
            return True
        return self.limiter.grantable(len(self.buffer)) <= 0

    def sample_round(
        self, rank: int, round_id: int, rows: int, max_updates: int, timeout_s: float
    ) -> SampleGrant:
        """Batches of ``rows`` for learner ``rank``'s part of this shard's round ``round_id``
        (as many as the ratio allows, at most ``max_updates``, waiting up to ``timeout_s``)."""
        with self._cond:
            limiter = self.limiter

            def decidable() -> bool:
                return (
                    round_id in limiter.rounds
                    or limiter.grantable(len(self.buffer)) > 0
                    or self._learning_over()
                )

            what = f"data (replay shard {self.shard}'s update-to-data ratio)"
            self._wait(f"learner {rank}", what, decidable, timeout_s)
            decided = limiter.decide(round_id, max_updates, len(self.buffer), self._learning_over())
            t0 = time.monotonic()  # busy from here: the wait above is idle time
            batches = [self._sample(rows) for _ in range(decided.updates)]
            limiter.served(round_id, decided, rank)
            self._cond.notify_all()
            self.busy_s += time.monotonic() - t0
        return SampleGrant(batches, decided.stop)

    def _sample(self, rows: int) -> Batch:
        batch = self.buffer.sample(rows)
        if self.frames is not None:  # rebuild the stacked observations from their frames
            batch[OBS] = self.frames.gather(batch[OBS])
            batch[NEXT_OBS] = self.frames.gather(batch[NEXT_OBS])
        return batch

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> int:
        """New priorities for rows sampled from this shard; refuses non-finite or negative."""
        priorities = np.asarray(priorities)
        bad = ~np.isfinite(priorities) | (priorities < 0)
        if bad.any():
            raise ValueError(
                f"update_priorities got {int(bad.sum())} of {len(priorities)} priorities that "
                f"are not finite and >= 0 (e.g. {priorities[bad][0]!r}): the learner's TD errors "
                "diverged; check the env's rewards or lower algo_cfg.lr"
            )
        t0 = time.monotonic()
        with self._cond:
            applied = self.buffer.update_priorities(slots, generations, priorities)
            self.priorities_applied += applied
        self.busy_s += time.monotonic() - t0
        return applied

    # ----- the run -----
    def buffer_state(self) -> dict[str, np.ndarray]:
        """This shard's contents, for ``general_cfg.save_buffer``."""
        with self._cond:
            state = self.buffer.state_dict()
            if self.frames is not None:
                state.update(self.frames.state_dict())
            return state

    def stats(self) -> ShardStats:
        with self._cond:
            buffer = self.buffer.stats()
            if self.frames is not None:
                buffer.update(self.frames.stats())
            return ShardStats(
                shard=self.shard,
                transitions_stored=self.stored,
                transitions_dropped={k: v for k, v in self.dropped.items() if v},
                priorities_applied=self.priorities_applied,
                buffer=buffer,
                busy_s=round(self.busy_s, 3),
            )
