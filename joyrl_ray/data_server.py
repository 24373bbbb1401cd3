"""The DataServer: replay (or the rollout queue), global counters, weights and the stop rule.

Every other role talks to it with short calls. Workers push columns with a report and get
an ack that carries the newest weights when they are newer than theirs; learners sample
rounds of batches (or take rollouts), write priorities back, publish weights and hand in
checkpoints; the driver drains the reports. It holds no reference to any other actor.

Nobody polls it. A caller that must wait (a throttled worker, an on-policy worker waiting
for the next weights, a learner ahead of the data) blocks inside the call on a condition
until the wait is over, the run stops, or the call's deadline passes; on Ray it is a
threaded actor so that waiting callers do not block the others. In one process
(``mp_backend: single``) every deadline is 0 and a call that would wait returns at once.

Accounting: every env step a worker reports is *collected*; each ends up *stored* (in
replay, or learned from on-policy) or *dropped* with a reason, so
``transitions_collected == transitions_stored + sum(transitions_dropped)``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from joyrl_ray.batch import NEXT_OBS, OBS, Batch, batch_rows, concat, take_envs
from joyrl_ray.buffers import PrioritizedReplayBuffer, ReplayBuffer
from joyrl_ray.buffers.frames import FrameStore, frame_capacity
from joyrl_ray.data_needs import DataNeeds, ReplayNeeds, RolloutNeeds
from joyrl_ray.env_error_budget import EnvErrorBudget
from joyrl_ray.handles import LocalStore, ObjectStore
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.messages import (
    CheckpointReport,
    Counters,
    EpisodeReport,
    Frames,
    LearnerReport,
    LearnerStart,
    LearnerTimes,
    Placement,
    PushAck,
    Reports,
    RolloutGrant,
    SampleGrant,
    StallReport,
    Trajectory,
    WaitState,
    Weights,
    WorkerReport,
    WorkerStart,
    WorkerTimes,
)
from joyrl_ray.placement import node_here

# Stops after which learners may still catch up with the update-to-data ratio.
DRAINING_STOPS = ("max_env_steps", "max_episode")


@dataclass
class StopRule:
    """When a run ends; ``-1`` / None disables a limit."""

    max_env_steps: int = -1
    max_episode: int = -1
    max_env_errors_per_1000: float = -1  # env errors per 1,000 env steps (-1: no limit)
    env_error_window_steps: int = 50_000  # ... over this many recent env steps


@dataclass
class DataServerStats:
    transitions_collected: int
    transitions_stored: int
    transitions_dropped: dict[str, int]
    priorities_applied: int
    weights_versions: int
    weights_rejected: int
    env_errors: int
    episodes_dropped: int
    stop_reason: str | None
    stop_detail: str | None
    buffer: dict[str, float]
    busy_s: float


class _Rollout(NamedTuple):
    """A worker's on-policy rollout, queued until every active worker has sent one."""

    version: int  # the weights version it was collected with
    steps: int  # env steps in it
    worker_id: int
    batch: Batch


@dataclass
class _Round:
    """One learner round: decided by the first learner that asks, served to every rank."""

    updates: int = 0
    stop: bool = False
    shares: list[Batch | None] = field(default_factory=list)  # on-policy: per rank
    served: set[int] = field(default_factory=set)


def _build_buffer(needs: ReplayNeeds, seed: int | None) -> ReplayBuffer:
    if needs.prioritized:
        return PrioritizedReplayBuffer(
            needs.buffer_size,
            alpha=needs.per_alpha,
            beta_start=needs.per_beta_start,
            beta_annealing_samples=needs.per_beta_samples,
            eps=needs.per_eps,
            seed=seed,
        )
    return ReplayBuffer(needs.buffer_size, seed=seed)


class DataServer:
    """Replay or rollouts, counters, weights, reports and the stop flag for one run."""

    def __init__(
        self,
        *,
        stop_rule: StopRule,
        needs: DataNeeds | None,
        n_workers: int,
        n_learners: int = 1,
        learner_lag_tolerance: int = 64,
        counters: Counters | None = None,
        seed: int | None = None,
        store: ObjectStore | None = None,
        buffer_state: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._cond = threading.Condition()
        self.stop_rule = stop_rule
        self.replay = needs if isinstance(needs, ReplayNeeds) else None
        self.rollouts_needed = needs if isinstance(needs, RolloutNeeds) else None
        self.n_learners = n_learners
        self.active_workers = set(range(n_workers))
        self.learner_lag_tolerance = learner_lag_tolerance
        self.store = store or LocalStore()
        self.buffer = _build_buffer(self.replay, seed) if self.replay is not None else None
        self.frames: FrameStore | None = None  # stacked image observations, one frame each
        if self.buffer is not None and buffer_state is not None:
            self.buffer.load_state_dict(buffer_state)
            if "frame_ring" in buffer_state:
                assert self.replay is not None
                self.frames = FrameStore(frame_capacity(self.replay.buffer_size))
                self.frames.load_state_dict(buffer_state)
        self.rollouts: list[_Rollout] = []
        start = counters or Counters()
        self.counters = Counters(start.env_steps, start.episodes, start.updates)
        self.updates_granted = start.updates
        # The update-to-data ratio counts from here (reset when a learner group restarts).
        self.ratio_base_updates = start.updates
        self.ratio_base_env_steps = start.env_steps
        self.warmup = self.replay.learn_start if self.replay is not None else 0
        if buffer_state is not None:  # a resume that kept its replay: no refill needed
            self.warmup = 0
        self.collected = 0
        self.stored = 0
        self.dropped: Counter[str] = Counter()
        self.priorities_applied = 0
        self.weights_version = 0  # the newest version published (0: none yet)
        self.unshared_weights: dict[str, np.ndarray] | None = None  # newest, not yet put
        self.shared_weights: Weights | None = None  # the newest version put in the store
        self.weights_rejected = 0
        self.stop_reason: str | None = None
        self.stop_detail: str | None = None
        self.env_error_count = 0
        rule = self.stop_rule
        self.env_error_budget = (
            EnvErrorBudget(rule.max_env_errors_per_1000, rule.env_error_window_steps)
            if rule.max_env_errors_per_1000 >= 0
            else None
        )
        self.episodes_dropped = 0  # finished past max_episode: not counted, not logged
        self.learner_generation = 0
        self.rounds: dict[int, _Round] = {}
        self.pending_episodes: list[EpisodeReport] = []
        self.pending_learner: list[LearnerReport] = []
        self.pending_checkpoints: list[CheckpointReport] = []
        # Counts what the driver should see at once: checkpoints handed in and the stop.
        self.news_seq = 0
        self.pending_trajectories: list[Trajectory] = []
        self.pending_env_errors: list[str] = []
        # Where each role runs, this one first (the driver's "cluster: ..." line).
        self.pending_placements = [Placement("data server", *node_here(), os.getpid())]
        self.worker_times = WorkerTimes()
        self.learner_times = LearnerTimes()
        self.waiting: dict[str, WaitState] = {}
        self.last_push: dict[int, float] = {}
        # Per worker: env steps counted but not yet delivered as transitions or drops (the
        # n-step steps a worker holds back). Lost with the worker if it dies.
        self.owed: Counter[int] = Counter()
        self.registered: set[int] = set()
        self.worker_restarts: Counter[int] = Counter()
        self.pending_events: list[str] = []  # lines for the run's log
        self.busy_s = 0.0
        freeze_startup_heap()

    # ----- waiting -----
    def _wait(self, who: str, what: str, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (the lock released meanwhile) until ``ready()`` or the deadline passes."""
        if ready() or timeout_s <= 0:
            return ready()
        self.waiting[who] = WaitState(what, time.monotonic())
        try:
            return self._cond.wait_for(ready, timeout=timeout_s)
        finally:
            self.waiting.pop(who, None)

    def _changed(self) -> None:
        self._cond.notify_all()

    # ----- the update-to-data ratio -----
    def _allowed_updates(self) -> int:
        """Updates the ratio allows now (all learners together count one per round)."""
        assert self.replay is not None and self.buffer is not None
        collected = self.counters.env_steps - self.ratio_base_env_steps
        if collected < self.warmup or len(self.buffer) < self.replay.batch_size:
            return self.ratio_base_updates
        steps = collected - self.warmup + 1
        return self.ratio_base_updates + int(steps * self.replay.updates_per_step)

    def _grantable(self) -> int:
        return self._allowed_updates() - self.updates_granted

    def _throttled(self) -> bool:
        if self.replay is None or self.learner_lag_tolerance < 0 or self.stop_reason:
            return False
        return self._grantable() > self.learner_lag_tolerance

    # ----- workers -----
    def _newest_weights(self) -> Weights | None:
        """The newest weights as a store reference, put on first use.

        Workers take weights only with an ack, so a version that no ack hands out before
        the next publish is never put (with the defaults and one worker, three in four):
        putting costs this process, on the learner's machine, far more than holding the
        arrays does.
        """
        if self.unshared_weights is not None:
            self.shared_weights = Weights(
                self.weights_version, self.store.put(self.unshared_weights)
            )
            self.unshared_weights = None
        return self.shared_weights

    def _ack(self, known_version: int) -> PushAck:
        newer = self._newest_weights() if self.weights_version > known_version else None
        return PushAck(
            stop=self.stop_reason is not None,
            throttled=self._throttled(),
            env_steps=self.counters.env_steps,
            weights=newer,
        )

    def register_worker(self, worker_id: int, where: Placement) -> WorkerStart:
        """A worker (new, or restarted by Ray) starts: where it runs and what it continues.

        A second registration means Ray restarted the worker's process: the env steps it
        held back died with it and are counted as lost.
        """
        with self._cond:
            self.pending_placements.append(where)
            self.last_push[worker_id] = time.monotonic()
            if worker_id in self.registered:
                self.worker_restarts[worker_id] += 1
                lost = self._lose_worker_steps(worker_id)
                self.pending_events.append(
                    f"worker {worker_id} was restarted on {where.ip} (restart "
                    f"{self.worker_restarts[worker_id]}); {lost} env steps it held back were lost"
                )
            self.registered.add(worker_id)
            stopped = self.stop_reason is not None
            return WorkerStart(self.counters.env_steps, stopped, self._newest_weights())

    def _lose_worker_steps(self, worker_id: int) -> int:
        lost = self.owed.pop(worker_id, 0)
        if lost:
            self.dropped["lost_with_worker"] += lost
        return lost

    def _count(self, report: WorkerReport) -> bool:
        """Count a worker's report; False when it came after the run was told to stop."""
        self.collected += report.env_steps
        self.dropped.update(report.dropped)
        self.worker_times.add(report.times)
        self.last_push[report.worker_id] = time.monotonic()
        if report.env_errors:
            self.env_error_count += len(report.env_errors)
            self.pending_env_errors.extend(report.env_errors)
        if self.env_error_budget is not None:
            last = report.env_errors[-1] if report.env_errors else ""
            over = self.env_error_budget.record(report.env_steps, len(report.env_errors), last)
            if over is not None:
                self._stop("env_errors", over)
        if report.fatal_env_error:
            self._stop("env_failed", report.fatal_env_error)
        if self.stop_reason is not None:
            return False
        self.counters.env_steps += report.env_steps
        episodes, trajs = report.episodes, report.trajectories
        keep = len(episodes)
        limit = self.stop_rule.max_episode
        if limit > 0:
            room = max(limit - self.counters.episodes, 0)
            self.episodes_dropped += max(keep - room, 0)
            keep, trajs = min(keep, room), trajs[: room if trajs else 0]
        self.counters.episodes += keep
        self.pending_episodes.extend(episodes.reports(report.worker_id, keep))
        self.pending_trajectories.extend(trajs)
        self._check_limits()
        return True

    def push_transitions(
        self,
        worker_id: int,
        batch: Batch | None,
        report: WorkerReport,
        known_version: int,
        frames: Frames | None = None,
    ) -> PushAck:
        """Store a worker's folded transitions (off-policy; None in test mode) and count.

        With ``frames``, the transitions' observations are frame ids (see buffers/frames.py).
        """
        t0 = time.monotonic()
        with self._cond:
            accepted = self._count(report)
            rows = batch_rows(batch) if batch else 0
            if self.buffer is not None:
                owed = report.env_steps - rows - sum(report.dropped.values())
                self.owed[worker_id] += owed
            if not accepted:
                self.dropped["after_stop"] += rows
            elif self.buffer is None:
                self.dropped["not_learned_in_test_mode"] += report.env_steps
            elif batch is not None and rows:
                if frames is not None:
                    batch = self._frame_indices(worker_id, batch, frames)
                self.buffer.add(batch)
                self.stored += rows
            self._changed()
            ack = self._ack(known_version)
        self.busy_s += time.monotonic() - t0
        return ack

    def _frame_indices(self, worker_id: int, batch: Batch, frames: Frames) -> Batch:
        assert self.replay is not None
        if self.frames is None:
            self.frames = FrameStore(frame_capacity(self.replay.buffer_size))
        self.frames.add(worker_id, frames.ids, frames.pixels)
        return {
            **batch,
            OBS: self.frames.translate(worker_id, batch[OBS]),
            NEXT_OBS: self.frames.translate(worker_id, batch[NEXT_OBS]),
        }

    def _sample(self, rows: int) -> Batch:
        assert self.buffer is not None
        batch = self.buffer.sample(rows)
        if self.frames is not None:  # rebuild the stacked observations from their frames
            batch[OBS] = self.frames.gather(batch[OBS])
            batch[NEXT_OBS] = self.frames.gather(batch[NEXT_OBS])
        return batch

    def push_rollout(
        self,
        worker_id: int,
        version: int,
        rollout: Batch,
        report: WorkerReport,
        known_version: int,
    ) -> PushAck:
        """Queue an on-policy rollout; one made with stale weights is dropped and counted."""
        t0 = time.monotonic()
        with self._cond:
            steps = int(np.prod(np.shape(rollout["rewards"])[:2]))
            if not self._count(report):
                self.dropped["after_stop"] += steps
            elif version != self.weights_version:
                self.dropped["stale_rollout"] += steps
            else:
                self.rollouts.append(_Rollout(version, steps, worker_id, rollout))
            self._changed()
            ack = self._ack(known_version)
        self.busy_s += time.monotonic() - t0
        return ack

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_newer_weights: bool, timeout_s: float
    ) -> PushAck:
        """Block while this worker must not collect: the learner trails the ratio, or it
        needs weights newer than ``known_version`` (on-policy, test mode) that are not out."""

        def free() -> bool:
            if self.stop_reason is not None:
                return True
            if need_newer_weights:
                return self.weights_version > known_version
            return not self._throttled()

        what = "newer weights" if need_newer_weights else "the learner to catch up"
        with self._cond:
            self._wait(f"worker {worker_id}", what, free, timeout_s)
            return self._ack(known_version)

    def drop_worker(self, worker_id: int) -> int:
        """A worker is gone for good: on-policy rounds expect one rollout fewer. Returns the
        env steps it held back, lost with it."""
        with self._cond:
            lost = self._lose_worker_steps(worker_id)
            self.active_workers.discard(worker_id)
            self.last_push.pop(worker_id, None)
            if not self.active_workers:
                self._stop("no_workers_left", "every worker died past its restart budget")
            self._changed()
            return lost

    # ----- learners -----
    def learner_started(
        self, rank: int, generation: int, restored: Counters, where: Placement
    ) -> LearnerStart:
        """A learner (re)starts from ``restored``: fence weights versions, rebase the ratio."""
        with self._cond:
            self.pending_placements.append(where)
            if generation > self.learner_generation:
                # A new group: rounds of the old one are void. After a restart the group
                # continues from an older checkpoint, so the ratio counts from its update
                # count and from now (the buffer is already warm).
                self.learner_generation = generation
                self.rounds.clear()
                if generation > 1:
                    self.ratio_base_updates = restored.updates
                    self.ratio_base_env_steps = self.counters.env_steps
                    self.warmup = 0
                self.updates_granted = restored.updates
                self.counters.updates = restored.updates
                self._changed()
            return LearnerStart(Counters(**vars(self.counters)), self.weights_version)

    def _decide_round(self, round_id: int, wanted: int, timeout_s: float, rank: int) -> _Round:
        def decidable() -> bool:
            return round_id in self.rounds or self._grantable() > 0 or self._learning_over()

        self._wait(f"learner {rank}", "data (the update-to-data ratio)", decidable, timeout_s)
        decided = self.rounds.get(round_id)
        if decided is None:
            over = self._learning_over()
            n = 0 if over else max(min(wanted, self._grantable()), 0)
            decided = _Round(updates=n, stop=over and n == 0)
            self.rounds[round_id] = decided
            self.updates_granted += n
            self._changed()
        return decided

    def _learning_over(self) -> bool:
        if self.stop_reason is None:
            return False
        if self.replay is None or self.stop_reason not in DRAINING_STOPS:
            return True
        return self._grantable() <= 0

    def _served(self, round_id: int, decided: _Round, rank: int) -> None:
        decided.served.add(rank)
        if len(decided.served) >= self.n_learners:
            self.rounds.pop(round_id, None)

    def sample_round(
        self, rank: int, round_id: int, rows: int, max_updates: int, timeout_s: float
    ) -> SampleGrant:
        """Batches of ``rows`` for learner ``rank``'s part of round ``round_id``.

        The first learner to ask decides how many updates the round has (as many as the
        update-to-data ratio allows now, at most ``max_updates``, waiting up to
        ``timeout_s`` for one); every learner gets that many batches, so all of them make
        the same number of gradient steps (and collective calls).
        """
        with self._cond:
            assert self.buffer is not None, "sample_round needs replay (an off-policy algorithm)"
            decided = self._decide_round(round_id, max_updates, timeout_s, rank)
            t0 = time.monotonic()  # busy from here: the wait above is idle time
            batches = [self._sample(rows) for _ in range(decided.updates)]
            self._served(round_id, decided, rank)
            self.busy_s += time.monotonic() - t0
        return SampleGrant(batches, decided.stop)

    def take_rollouts(self, rank: int, round_id: int, timeout_s: float) -> RolloutGrant:
        """Learner ``rank``'s env columns of this iteration's rollouts (one per worker).

        The first learner to ask waits for a fresh rollout from every active worker; the
        joined ``[time, env]`` rollout is split into equal env slices, one per learner
        (env columns that do not divide evenly are dropped and counted).
        """
        with self._cond:

            def ready() -> bool:
                fresh = sum(1 for r in self.rollouts if self._fresh(r.version))
                return (
                    round_id in self.rounds
                    or self.stop_reason is not None
                    or (fresh >= len(self.active_workers) > 0)
                )

            self._wait(f"learner {rank}", "rollouts from every worker", ready, timeout_s)
            decided = self.rounds.get(round_id)
            if decided is None:
                decided = self._make_rollout_round()
                self.rounds[round_id] = decided
            share = decided.shares[rank] if decided.shares else None
            self._served(round_id, decided, rank)
            return RolloutGrant(share, decided.stop)

    def _fresh(self, version: int) -> bool:
        return self.weights_version > 0 and version == self.weights_version

    def _make_rollout_round(self) -> _Round:
        for stale in (r for r in self.rollouts if not self._fresh(r.version)):
            self.dropped["stale_rollout"] += stale.steps
        # In worker order, not in order of arrival: a seeded run learns from the same
        # joined rollout on either backend, however the workers' pushes raced.
        self.rollouts = sorted(
            (r for r in self.rollouts if self._fresh(r.version)), key=lambda r: r.worker_id
        )
        if self.stop_reason is not None:
            return _Round(stop=True)
        count = len(self.active_workers)
        if len(self.rollouts) < count:
            return _Round()  # the deadline passed first: an empty round for every learner
        taken, self.rollouts = self.rollouts[:count], self.rollouts[count:]
        joined = concat([r.batch for r in taken], axis=1)
        n_envs = joined["rewards"].shape[1]
        per_rank = n_envs // self.n_learners
        length = joined["rewards"].shape[0]
        self.stored += length * per_rank * self.n_learners
        uneven = length * (n_envs - per_rank * self.n_learners)
        if uneven:
            self.dropped["uneven_learner_split"] += uneven
        shares: list[Batch | None] = [
            take_envs(joined, r * per_rank, (r + 1) * per_rank) for r in range(self.n_learners)
        ]
        return _Round(updates=1, shares=shares)

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> int:
        """New priorities for sampled rows; refuses non-finite or negative values."""
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
            assert self.buffer is not None
            applied = self.buffer.update_priorities(slots, generations, priorities)
            self.priorities_applied += applied
        self.busy_s += time.monotonic() - t0
        return applied

    def publish_weights(self, weights: dict[str, np.ndarray], version: int) -> bool:
        """Make ``weights`` the newest version; a version not newer than the newest is refused.

        The DataServer keeps a copy (on Ray the arrays may be views of the call's argument,
        which the learner owns) and puts it in the object store itself when an ack first
        hands it out (:meth:`_newest_weights`), so it owns them: they stay fetchable when the
        learner that made them dies.
        """
        with self._cond:
            if version <= self.weights_version:
                self.weights_rejected += 1
                return False
            self.weights_version = version
            self.unshared_weights = {name: np.array(a, copy=True) for name, a in weights.items()}
            self._changed()
            return True

    def report_learner(self, report: LearnerReport) -> Counters:
        """Learner progress; returns the global counters (the learner checkpoints them)."""
        with self._cond:
            if report.rank == 0:
                self.counters.updates = report.updates
            self.learner_times.add(report.times)
            if report.metrics:
                self.pending_learner.append(report)
            return Counters(**vars(self.counters))

    def submit_checkpoint(self, report: CheckpointReport) -> None:
        """A checkpoint for the driver to write (and to evaluate when ``report.evaluate``)."""
        with self._cond:
            self.pending_checkpoints.append(report)
            self._news()

    # ----- driver -----
    def _check_limits(self) -> None:
        rule, counters = self.stop_rule, self.counters
        if rule.max_env_steps > 0 and counters.env_steps >= rule.max_env_steps:
            self._stop("max_env_steps")
        elif rule.max_episode > 0 and counters.episodes >= rule.max_episode:
            self._stop("max_episode")

    def _stop(self, reason: str, detail: str | None = None) -> None:
        if self.stop_reason is None:
            self.stop_reason, self.stop_detail = reason, detail
            self._news()

    def _news(self) -> None:
        self.news_seq += 1
        self._changed()

    def wait_for_news(self, seen: int, timeout_s: float) -> int:
        """Answers once there is news past ``seen`` (a checkpoint, the stop) or after
        ``timeout_s``: the news count to pass next time.

        The driver on Ray waits on this beside its roles, so a checkpoint is written and
        evaluated when it comes, not at the driver's next periodic drain.
        """
        with self._cond:
            self._cond.wait_for(lambda: self.news_seq > seen, timeout=timeout_s)
            return self.news_seq

    def request_stop(self, reason: str, detail: str | None = None) -> None:
        with self._cond:
            self._stop(reason, detail)

    def drain_reports(self) -> Reports:
        """Everything reported since the last drain, plus the counters and the stop state."""
        with self._cond:
            reports = Reports(
                episodes=self.pending_episodes,
                learner=self.pending_learner,
                checkpoints=self.pending_checkpoints,
                trajectories=self.pending_trajectories,
                env_errors=self.pending_env_errors,
                placements=self.pending_placements,
                events=self.pending_events,
                worker_restarts=dict(self.worker_restarts),
                counters=Counters(**vars(self.counters)),
                stop_reason=self.stop_reason,
                stop_detail=self.stop_detail,
                worker_times=WorkerTimes(**vars(self.worker_times)),
                learner_times=LearnerTimes(**vars(self.learner_times)),
            )
            self.pending_episodes, self.pending_learner, self.pending_checkpoints = [], [], []
            self.pending_trajectories, self.pending_env_errors = [], []
            self.pending_placements, self.pending_events = [], []
            return reports

    def stall_report(self) -> StallReport:
        with self._cond:
            now = time.monotonic()
            return StallReport(
                waiting=dict(self.waiting),
                last_push_age_s={w: round(now - t, 1) for w, t in self.last_push.items()},
                active_workers=len(self.active_workers),
            )

    def finish(self) -> None:
        """At the end of a run: queued rollouts nobody learned from are dropped, counted."""
        with self._cond:
            for unused in self.rollouts:
                self.dropped["unused_at_stop"] += unused.steps
            self.rollouts = []

    def buffer_state(self) -> dict[str, np.ndarray] | None:
        """The replay buffer's contents, for ``general_cfg.save_buffer``."""
        with self._cond:
            if self.buffer is None:
                return None
            state = self.buffer.state_dict()
            if self.frames is not None:
                state.update(self.frames.state_dict())
            return state

    def stats(self) -> DataServerStats:
        with self._cond:
            buffer = self.buffer.stats() if self.buffer is not None else {}
            if self.frames is not None:
                buffer.update(self.frames.stats())
            return DataServerStats(
                transitions_collected=self.collected,
                transitions_stored=self.stored,
                transitions_dropped={k: v for k, v in self.dropped.items() if v},
                priorities_applied=self.priorities_applied,
                weights_versions=self.weights_version,
                weights_rejected=self.weights_rejected,
                env_errors=self.env_error_count,
                episodes_dropped=self.episodes_dropped,
                stop_reason=self.stop_reason,
                stop_detail=self.stop_detail,
                buffer=buffer,
                busy_s=round(self.busy_s, 3),
            )
