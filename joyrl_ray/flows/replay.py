"""Off-policy replay (DQN family, SAC, TD3): workers insert into replay shards, learners
sample every shard in turn.

Data plane: ``n_replay_shards`` replay shards (``DataServer``), restarted by Ray when one
dies (empty, or with the replay the run resumed with). Worker ``k`` inserts into shard
``k mod n``: its chunks are n-step folded at the worker, stacked frames travel once each,
and its report rides with the rows (the shard forwards reports to the coordinator). A
learner samples rounds from each shard in turn and sends new priorities back to the shard
a batch came from. A saved replay (``save_buffer``) is every shard's contents, keys
prefixed by shard.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.spaces import Space

from joyrl_ray.batch import GENERATIONS, SLOTS, TRUNCATED, Batch, batch_rows
from joyrl_ray.config import ConfigError
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.data.buffers.frames import FrameEncoder
from joyrl_ray.data.buffers.nstep import NStepFolder
from joyrl_ray.data.clients import DataServerClient
from joyrl_ray.data.replay_shard import DataServer
from joyrl_ray.data_needs import ReplayNeeds
from joyrl_ray.flows.base import (
    CALL_TIMEOUT_S,
    ActorFactory,
    AfterRoom,
    DataFlow,
    DataPlane,
    DataPlaneStats,
    DataSetup,
)
from joyrl_ray.roles.learner.sampling import ShardSampler
from joyrl_ray.roles.learner.source import LearnerSource, Round
from joyrl_ray.roles.worker.sender import Payload, SenderSetup, WorkerSender
from joyrl_ray.wire.handles import Call, RoleDied, RoleError
from joyrl_ray.wire.messages import Frames, InsertAck, PushAck, WorkerReport

SHARD_KEY = "shard{}/"  # a saved replay's keys, per shard: shard0/obs, shard1/obs, ...


def shard_of(worker_id: int, n_shards: int) -> int:
    return worker_id % n_shards


def join_shard_states(states: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every shard's replay in one mapping (``save_buffer``), keys prefixed by shard."""
    return {SHARD_KEY.format(i) + k: v for i, state in enumerate(states) for k, v in state.items()}


def split_shard_states(saved: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    """A saved replay back into per-shard states; an unprefixed file is one shard's."""
    if not any(k.startswith("shard") and "/" in k for k in saved):
        return [dict(saved)]
    shards: dict[int, dict[str, np.ndarray]] = {}
    for key, value in saved.items():
        head, _, name = key.partition("/")
        shards.setdefault(int(head.removeprefix("shard")), {})[name] = value
    return [shards[i] for i in sorted(shards)]


def frame_encoder_for(space: Space, n_envs: int, stacked: bool) -> FrameEncoder | None:
    """Stacked uint8 frames (frame_stack the last wrapper) are sent to replay once each."""
    shape = tuple(space.shape or ())
    if not stacked or space.dtype != np.uint8 or len(shape) < 3:
        return None
    return FrameEncoder(n_envs, shape[0])


class ReplayFlow(DataFlow):
    name = "replay"
    update_unit = "grad_steps"

    def __init__(self, needs: ReplayNeeds) -> None:
        self.needs = needs

    def build(self, factory: ActorFactory, setup: DataSetup) -> ReplayPlane:
        saved = split_shard_states(setup.saved_replay) if setup.saved_replay else []
        shards = []
        for i in range(setup.n_shards):
            kwargs: dict[str, Any] = {
                "needs": self.needs,
                "shard": i,
                "n_shards": setup.n_shards,
                "n_learners": setup.n_learners,
                "learner_lag_tolerance": setup.learner_lag_tolerance,
                "seed": setup.seed,
                "buffer_state": saved[i] if i < len(saved) else None,
                "dataset": setup.dataset,
                "coordinator": factory.report_sink,
            }
            if factory.forward_every_s is not None:
                kwargs["forward_every_s"] = factory.forward_every_s
            kwargs.update(self.shard_kwargs())
            callers = len(range(i, setup.n_workers, setup.n_shards))
            handle = factory.start(
                DataServer,
                "DataServer",
                f"replay-shard-{i}",
                kwargs,
                callers=callers,
                restartable=True,
            )
            shards.append(DataServerClient(handle))
        return self.plane(shards)

    def shard_kwargs(self) -> dict[str, Any]:
        """What this flow's shards take besides what every replay shard does."""
        return {}

    def dataset_needs(self) -> ReplayNeeds | None:
        return self.needs  # transitions: a dataset's episodes fold as a worker's steps

    def plane(self, shards: list[DataServerClient]) -> ReplayPlane:
        return ReplayPlane(self.needs, shards)

    def check_resume(
        self, general: GeneralConfig, saved_replay: dict[str, Any] | None, source: str
    ) -> None:
        """A kept replay goes back into as many shards, of the same size, as it was saved
        from."""
        if saved_replay is None:
            return
        shards = split_shard_states(saved_replay)
        count = len(shards)
        if count != general.n_replay_shards:
            raise ConfigError(
                f"general_cfg.n_replay_shards={general.n_replay_shards}, but the replay saved in "
                f"{source} has {count} shard(s); allowed: {count} (or "
                "general_cfg.save_buffer=false to start with an empty replay)"
            )
        size = self.needs.buffer_size
        capacities = {int(shard["ring"][3]) for shard in shards if "ring" in shard}
        if capacities and capacities != {math.ceil(size / count)}:
            saved_size = max(capacities) * count
            raise ConfigError(
                f"algo_cfg.buffer_size={size}, but the replay saved in {source} was saved with "
                f"buffer_size={saved_size}; allowed: {saved_size} (or "
                "general_cfg.save_buffer=false to start with an empty replay)"
            )


class ReplayPlane(DataPlane):
    """The replay shards."""

    def __init__(self, needs: ReplayNeeds, shards: list[DataServerClient]) -> None:
        super().__init__(list(shards))
        self.needs = needs
        self.shards = shards

    def worker_sender(self, worker_id: int, coordinator: CoordinatorClient) -> ReplaySender:
        shard = shard_of(worker_id, len(self.shards))
        return ReplaySender(coordinator, self.shards[shard], shard, self.needs.n_step)

    def learner_source(self) -> ReplaySource:
        return ReplaySource(self.shards, self.needs)

    def saved_replay(self) -> dict[str, np.ndarray] | None:
        """Every shard's contents (a dead shard raises: its replay is gone)."""
        calls = [shard.buffer_state() for shard in self.shards]
        states = [call.result(CALL_TIMEOUT_S) for call in calls]
        if not states:
            return None
        return join_shard_states(states) if len(states) > 1 else states[0]

    def flush_reports(self) -> None:
        """The workers' reports still in the shards, to the coordinator. A shard that died
        took its reports with it."""
        calls = [shard.flush_reports(CALL_TIMEOUT_S) for shard in self.shards]
        for call in calls:
            try:
                call.result(CALL_TIMEOUT_S + 5)
            except RoleError:
                continue

    def stats(self) -> DataPlaneStats:
        stored, priorities, busy = 0, 0, 0.0
        dropped: dict[str, int] = {}
        buffer: dict[str, float] = {}
        shards: list[dict[str, Any]] = []
        for shard in self.shards:
            s = shard.stats().result(CALL_TIMEOUT_S)
            stored, busy = stored + s.transitions_stored, busy + s.busy_s
            priorities += s.priorities_applied
            for k, v in s.transitions_dropped.items():
                dropped[k] = dropped.get(k, 0) + v
            for k, x in s.buffer.items():
                buffer[k] = buffer.get(k, 0.0) + x
            shards.append(
                {
                    "shard": s.shard,
                    "stored": s.transitions_stored,
                    "dropped": sum(s.transitions_dropped.values()),
                    "priorities_applied": s.priorities_applied,
                    "busy_s": s.busy_s,
                }
            )
        return DataPlaneStats(stored, dropped, priorities, buffer, round(busy, 3), shards)


# ----- the worker's half -----
class ReplaySender(WorkerSender):
    """Folds a chunk into n-step transitions and inserts it, with the report, into the
    worker's shard, a few inserts in flight (a slow shard slows the worker instead of
    filling memory). A worker waits only when its shard is throttled."""

    def __init__(
        self,
        coordinator: CoordinatorClient,
        shard: DataServerClient,
        shard_index: int = 0,
        n_step: int = 1,
    ) -> None:
        super().__init__(coordinator)
        self.shard, self.shard_index, self.n_step = shard, shard_index, n_step
        self.folder: NStepFolder | None = None
        self.encoder: FrameEncoder | None = None

    def bind(self, setup: SenderSetup) -> None:
        super().bind(setup)
        self.folder = NStepFolder(setup.n_envs, self.n_step, setup.gamma)
        self.encoder = frame_encoder_for(setup.obs_space, setup.n_envs, setup.frame_stacked)
        if self.encoder is not None:
            # Frame ids refer to frames sent with earlier pushes, and a shard takes calls on
            # several threads: two pushes of one worker in flight could be stored out of
            # order. A worker that sends frames has one push in flight.
            self.max_in_flight = 1

    def needs_newer(self, version: int) -> bool:
        return False  # any weights will do: a worker acts with the newest it has

    def wait_for_turn(
        self, worker_id: int, known_version: int, need_weights: bool, timeout_s: float
    ) -> Call[PushAck]:
        if need_weights:
            return self.coordinator.wait_for_weights(worker_id, known_version, timeout_s)
        room = self.shard.wait_for_room(worker_id, timeout_s, known_version)
        return AfterRoom(room, self.coordinator, worker_id, known_version)

    def prepare(self, chunk: Batch, version: int) -> Payload:
        assert self.folder is not None, "bind() first"
        frames = None
        if self.encoder is not None:
            chunk, ids, pixels = self.encoder.encode(chunk)
            frames = Frames(ids, pixels)
        folded = self.folder.fold(chunk)
        return Payload(folded, batch_rows(folded), version, frames)

    def send(
        self, worker_id: int, payload: Payload, report: WorkerReport, known_version: int
    ) -> Call[PushAck]:
        insert = self.shard.insert(worker_id, payload.batch, payload.frames, report, known_version)
        return ShardAck(insert, report, payload.rows, known_version, self)

    def after_env_error(self, chunk: Batch) -> tuple[Batch | None, int]:
        """The steps before the error are real transitions: kept, cut off as truncated
        episodes (bootstrapping from their last observation, as at a time limit)."""
        kept: Batch | None = None
        dropped = 0
        if chunk:
            kept = chunk
            kept[TRUNCATED][-1] = True  # every env's episode ends here for the n-step fold
        else:
            dropped = self.unfinished()
        if self.encoder is not None:
            self.encoder.reset()
        return kept, dropped

    def unfinished(self) -> int:
        return self.folder.reset() if self.folder is not None else 0


class ShardAck:
    """A worker's insert into its replay shard (rows and report in one call), as a ``PushAck``.

    A shard that died (Ray is restarting it) does not stop the worker: the rows it sent
    are counted as lost with the shard, the report's counts from its totals (see
    :mod:`joyrl_ray.control.report_gaps`), and the worker goes on (its next insert waits
    for the restarted shard).
    """

    def __init__(
        self,
        insert: Call[InsertAck],
        report: WorkerReport,
        rows: int,
        known: int,
        sender: ReplaySender,
    ) -> None:
        self.insert, self.report, self.rows = insert, report, rows
        self.known, self.sender = known, sender

    def done(self) -> bool:
        return self.insert.done()

    def result(self, timeout_s: float | None = None) -> PushAck:
        try:
            ack = self.insert.result(timeout_s)
        except RoleDied as exc:
            # The shard may have forwarded the report before it died, or not: the report
            # goes on with its totals alone, from which the coordinator counts it if not.
            coordinator, shard, report = (
                self.sender.coordinator,
                self.sender.shard_index,
                self.report,
            )
            alone = WorkerReport(
                report.worker_id,
                0,
                fatal_env_error=report.fatal_env_error,
                incarnation=report.incarnation,
                totals=report.totals,
                norm_delta=report.norm_delta,  # merged once, even if the shard forwarded it
            )
            answer = coordinator.report_worker(alone, 0, self.known, shard).result(timeout_s)
            if self.rows:
                line = f"{self.rows} rows were lost with replay shard {shard} ({exc})"
                coordinator.count_lost(shard, self.rows, line).result(timeout_s)
            return answer
        return PushAck(ack.stop, ack.throttled, ack.env_steps, ack.weights, ack.normalization)


# ----- the learner's half -----
class ReplaySource(LearnerSource):
    """Rounds of ``batch_size / N`` rows from every shard in turn (see
    :class:`~joyrl_ray.roles.learner.sampling.ShardSampler`); new priorities back to the
    shard a round came from, one call per round."""

    def __init__(self, shards: list[DataServerClient], needs: ReplayNeeds) -> None:
        self.shards, self.needs = shards, needs
        self.sampler: ShardSampler | None = None

    def bind(self, rank: int, world_size: int, max_updates: int) -> None:
        super().bind(rank, world_size, max_updates)
        rows = self.needs.batch_size // world_size
        self.sampler = ShardSampler(self.shards, rank=rank, rows=rows, max_updates=max_updates)

    def learner_started(self, generation: int) -> None:
        for call in [shard.learner_started(generation) for shard in self.shards]:
            try:
                call.result(timeout_s=CALL_TIMEOUT_S)
            except RoleDied:  # a shard Ray restarts: its rounds start afresh anyway
                pass

    def check(self) -> None:
        assert self.sampler is not None, "bind() first"
        self.sampler.check()

    def next_round(self, version: int, wait_s: float) -> Round:
        assert self.sampler is not None, "bind() first"
        shard, grant = self.sampler.next_round(wait_s)
        return Round(grant.batches, self.sampler.all_stopped, shard)

    def learned(self, round_: Round, priorities: list[np.ndarray | None]) -> None:
        assert self.sampler is not None, "bind() first"
        if not self.needs.prioritized or any(p is None for p in priorities):
            return
        # One call per round, not one per batch: the shard samples the same rows either
        # way, since its next round was asked for before this one was learned and the round
        # after is asked for after this call.
        batches = round_.batches
        self.sampler.update_priorities(
            round_.tag,
            np.concatenate([batch[SLOTS] for batch in batches]),
            np.concatenate([batch[GENERATIONS] for batch in batches]),
            np.concatenate([p for p in priorities if p is not None]),
        )

    def settle(self) -> None:
        if self.sampler is not None:
            self.sampler.settle()
