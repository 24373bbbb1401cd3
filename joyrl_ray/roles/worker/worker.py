"""The Worker: steps a vector of envs with an acting copy of the policy.

Per vector step it does one policy forward and one env step and writes what they return
into the chunk's ``[time, env]`` columns; ``next_obs``, episode returns (as columns) and
trajectories are built once per chunk (``_take_chunk``). How long a chunk is, how it
travels and when the worker may collect the next are its flow's (its
:class:`~joyrl_ray.roles.worker.sender.WorkerSender`: n-step folded into a replay shard,
a whole rollout into the rollout queue, or only the report in test mode); the worker keeps
at most ``sender.max_in_flight`` sends unacknowledged (a slow peer slows the worker
instead of filling memory). The acks carry the newest weights when they are newer than
the worker's, so a publish costs a worker one object fetch and no extra call.

A worker never polls: when it must wait it blocks inside its sender's wait (for room, or
for newer weights) until the wait is over. An exception from an env's
``reset`` or ``step`` does not end the run: the env is rebuilt and collection goes on;
what is kept of the steps taken before the error is the flow's to say, see
``_recover_from_env_error`` (an env that keeps failing stops the run).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch

from algos import get_algorithm
from envs.rewards import learning_rewards
from envs.vector import EnvCallTimeout
from joyrl_ray.batch import REWARDS, TERMINATED, TRUNCATED, Batch, batch_rows
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.normalization import NormSettings
from joyrl_ray.roles.worker.channel import ACK_TIMEOUT_S, PolicyChannel
from joyrl_ray.roles.worker.chunk import Chunk
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.env_guard import ENV_ERROR, EnvKeepsFailing
from joyrl_ray.roles.worker.envs import FAILED_REBUILDS_BEFORE_GIVING_UP, WorkerEnvs
from joyrl_ray.roles.worker.episodes import EpisodeTracker, TrajectoryCutter
from joyrl_ray.roles.worker.kill_schedule import KillSchedule
from joyrl_ray.roles.worker.normalizer import WorkerNormalizer
from joyrl_ray.roles.worker.random_actions import RandomActions
from joyrl_ray.roles.worker.sender import Payload, SenderSetup, WorkerSender
from joyrl_ray.seeding import derive_seed
from joyrl_ray.wire.handles import ObjectStore, first_line
from joyrl_ray.wire.messages import EpisodeColumns, Placement, WorkerReport, WorkerTimes

WAIT_S = 1.0  # deadline of one blocking wait (coordinator or shard); the loop then checks again


@dataclass
class WorkerStats:
    worker_id: int
    env_steps: int  # env steps this incarnation took
    env_errors: int
    times: WorkerTimes


def initial_net_seed(seed: int, worker_id: int) -> int | None:
    """Torch seed of worker ``worker_id``'s own initial acting net (a seeded run's workers
    act alike before the first weights arrive, on either backend)."""
    return derive_seed(seed, "torch", worker_id, "init")


class WorkerLoop(ABC):
    """What every worker runs (one policy's, or a multi-agent env's): register, step until
    the coordinator says stop, finish; and its closing figures."""

    worker_id: int
    total_env_steps: int
    times: WorkerTimes

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def step(self, wait_s: float) -> bool:
        """One step of the loop; False once the run is over for this worker."""

    @abstractmethod
    def finish(self) -> WorkerStats: ...

    @property
    @abstractmethod
    def env_error_count(self) -> int:
        """Env errors this incarnation met."""

    def run(self) -> WorkerStats:
        """Step until the coordinator says stop (the Ray backend's long-running task)."""
        self.start()
        while self.step(WAIT_S):
            pass
        return self.finish()

    def stats(self) -> WorkerStats:
        times = WorkerTimes(**vars(self.times))
        return WorkerStats(self.worker_id, self.total_env_steps, self.env_error_count, times)


class Worker(WorkerLoop):
    """Collects experience for one run; the same class is a Ray actor or a plain object."""

    def __init__(
        self, worker_id: int, cfg: WorkerConfig, sender: WorkerSender, store: ObjectStore
    ) -> None:
        self.loaded_at = time.time()  # its modules are in: the constructor begins
        torch.set_num_threads(1)
        self.worker_id = worker_id
        self.cfg = cfg
        self.sender = sender
        self.store = store
        self.train = cfg.train
        spec = get_algorithm(cfg.algo_name)
        self.n_envs = cfg.n_envs
        self.envs = WorkerEnvs(worker_id, cfg, guard=sender.keeps_failed_steps)
        space = self.envs.vector.single_observation_space
        net_seed = initial_net_seed(cfg.seed, worker_id)
        if net_seed is not None:  # the net it acts with until the learner's weights arrive
            torch.manual_seed(net_seed)
        self.policy = spec.policy_cls(
            cfg.algo,
            space,
            self.envs.vector.single_action_space,
            torch.device("cpu"),
        )
        self.random_actions: RandomActions | None = None
        if cfg.random_action_rate > 0:
            self.random_actions = RandomActions(
                space, self.envs.vector.single_action_space, cfg.random_action_rate
            )
        settings = NormSettings.of(cfg.env)
        self.norm: WorkerNormalizer | None = None
        if settings.on:  # test mode: the checkpoint's statistics, never updated
            shape = tuple(space.shape or ())
            gamma = self.policy.gamma
            self.norm = WorkerNormalizer(
                worker_id, settings, shape, self.n_envs, gamma, frozen=not cfg.train
            )
        wrappers = list(cfg.env.wrappers or [])
        sender.bind(
            SenderSetup(
                n_envs=self.n_envs,
                gamma=self.policy.gamma,
                obs_space=space,
                frame_stacked=bool(wrappers) and wrappers[-1] == "frame_stack",
                chunk_steps=cfg.chunk_steps,
                max_pushes_in_flight=cfg.max_pushes_in_flight,
            )
        )
        self.tracker = EpisodeTracker(self.n_envs)
        self.cutter = TrajectoryCutter(self.n_envs) if cfg.collect_traj else None
        self.chunk = Chunk(sender.chunk_len, valid=sender.keeps_failed_steps)
        self.obs: np.ndarray | None = None
        self.global_env_steps = 0
        self.stop = False
        self.times = WorkerTimes()
        self.kills = KillSchedule()
        self.channel = PolicyChannel(
            worker_id, self.policy, sender, store, self, lockstep=cfg.lockstep
        )
        self.weights = self.channel.weights
        self.incarnation = 0  # the coordinator says which start of this worker this is
        self.own_env_steps = 0  # taken since the last report (the schedule adds them)
        self.total_env_steps = 0
        self.stream_steps = 0  # set at registration (start)
        freeze_startup_heap()

    @property
    def report(self) -> WorkerReport:
        """What the next push reports."""
        return self.channel.report

    @property
    def throttled(self) -> bool:
        """Whether the worker waits for room before its next chunk."""
        return self.channel.throttled

    # ----- env errors -----
    def _recover_from_env_error(self, exc: Exception, chunk: Batch) -> Batch | None:
        """Rebuild the envs and go on; returns what it keeps of ``chunk``, the steps taken
        before the error.

        The flow decides what is kept (off-policy, the steps are real transitions; on-policy
        a rollout must be whole, so its steps are dropped and counted). The running episodes
        are not reported (they did not end) and their trajectories are dropped.
        """
        self.envs.error_count += 1
        where = "reset" if self.obs is None else "step"
        text = f"worker {self.worker_id}: env {where} raised {first_line(exc)}"
        if isinstance(exc, EnvKeepsFailing | EnvCallTimeout):  # says where itself
            text = f"worker {self.worker_id}: env {exc}"
        self.report.env_errors.append(text)
        kept, dropped = self.sender.after_env_error(chunk)
        if dropped:
            self.report.dropped["env_error"] = self.report.dropped.get("env_error", 0) + dropped
        self.tracker.reset()
        if self.norm is not None:
            self.norm.episodes_dropped()
        if self.cutter is not None:
            self.cutter.reset()
        if not self.envs.close_broken() or isinstance(exc, EnvKeepsFailing):
            self.report.fatal_env_error = (
                f"{text}, and failed again each of the {FAILED_REBUILDS_BEFORE_GIVING_UP} "
                "times it was rebuilt"
            )
            self.stop = True
            return kept
        self.obs = None
        self.envs.rebuild()
        return kept

    # ----- stepping -----
    def start(self) -> None:
        """Register with the coordinator: the global step count and the newest weights."""
        where = Placement.here(f"worker {self.worker_id}", loaded_at=self.loaded_at)
        start = self.sender.register(self.worker_id, where).result(ACK_TIMEOUT_S)
        self.global_env_steps = start.env_steps
        self.incarnation = self.report.incarnation = start.incarnation
        self.stop = start.stop
        if start.weights is not None:
            self.times.weights_wait_s += self.weights.take(start.weights, now=True)
        if self.norm is not None:
            self.norm.take_shared(start.normalization)
        seed = self.cfg.seed
        # A restarted worker (or a resumed run) draws fresh streams from where the run is.
        self.stream_steps = start.stream_steps
        stream = (start.stream_steps,) if start.stream_steps else ()
        self.policy.seed(derive_seed(seed, "policy", self.worker_id, *stream))
        if self.random_actions is not None:
            self.random_actions.seed(derive_seed(seed, "random_actions", self.worker_id, *stream))
        if seed:
            torch.manual_seed(derive_seed(seed, "torch", self.worker_id, *stream))
        self.kills.arm(self.cfg.fault_injection, self.worker_id, self.global_env_steps)

    def _step(self) -> None:
        """One vector step, added to the chunk (bookkeeping waits for the whole chunk)."""
        norm = self.norm
        if self.obs is None:
            # The first reset starts from the streams' steps; one after an env error from
            # where the run is (the env's error count makes it fresh too).
            errors = self.envs.error_count
            obs = self.envs.reset(self.global_env_steps if errors else self.stream_steps)
            self.obs = obs if norm is None else norm.observe(obs)
            self.policy.reset_memory(self.n_envs)
        assert self.obs is not None
        env_steps = self.global_env_steps + self.own_env_steps
        actions, extras = self.policy.act(self.obs, explore=self.train, env_steps=env_steps)
        if self.random_actions is not None:
            actions = self.random_actions.mix(actions, self.obs)
        next_obs, rewards, terminated, truncated, info = self.envs.step(
            self.policy.env_action(actions)
        )
        self.policy.episodes_ended(terminated | truncated)
        if norm is not None:  # what is stored is what the policy sees
            next_obs, info = norm.observe(next_obs), norm.normalized_info(info)
        self.chunk.add(self.obs, actions, rewards, terminated, truncated, extras, info)
        self.obs = next_obs
        self.own_env_steps += self.n_envs
        failed = info.get(f"_{ENV_ERROR}")
        if failed is not None and failed.any():
            self._steps_failed(np.flatnonzero(failed), info[ENV_ERROR])

    def _steps_failed(self, envs: np.ndarray, errors: np.ndarray) -> None:
        """Envs ``envs`` raised in the step just taken and were rebuilt (on-policy flows:
        see :mod:`~joyrl_ray.roles.worker.env_guard`): each failed step is lost, counted."""
        for i in envs.tolist():
            self.envs.error_count += 1
            self.report.env_errors.append(f"worker {self.worker_id}: env {i} {errors[i]}")
            self.chunk.step_failed(i)
        dropped = self.report.dropped
        dropped["env_error"] = dropped.get("env_error", 0) + len(envs)

    def _take_chunk(self) -> Batch:
        """The chunk's columns, its finished episodes reported and trajectories cut.

        Rewards in the chunk are the env's own until here: episode returns and trajectories
        keep them, and the returned columns hold the learning rewards (maybe clipped, maybe
        normalized).
        """
        chunk = self.chunk.take(self.obs)
        if not chunk:
            return chunk
        steps = batch_rows(chunk) * self.n_envs
        self.total_env_steps += steps
        self.report.env_steps += steps
        rewards = chunk[REWARDS]
        ends = chunk[TERMINATED] | chunk[TRUNCATED]
        cut = self.chunk.cut  # episodes cut by an env error: never reported as ended
        returns, lengths, rows = self.tracker.track(rewards, ends, cut)
        if len(rows):
            first_row_steps = self.global_env_steps + self.own_env_steps - steps
            ended_at = first_row_steps + rows.astype(np.int64) * self.n_envs  # their last steps
            stats = [self.policy.exploration_stats(s) for s in ended_at.tolist()]
            explore = {key: np.array([s[key] for s in stats]) for key in stats[0]}
            versions = np.full(len(rows), self.weights.version, dtype=np.int64)
            ended = EpisodeColumns(returns, lengths, ended_at, versions, explore)
            self.report.episodes = self.report.episodes.extend(ended)
        if self.cutter is not None:
            self.report.trajectories.extend(self.cutter.cut(chunk, cut))
        chunk[REWARDS] = learning_rewards(rewards, self.cfg.env)  # unclipped: the same array
        if self.norm is not None:
            chunk[REWARDS] = self.norm.rewards(chunk[REWARDS], ends)
        return chunk

    def _collect(self) -> Batch | None:
        """Step until the chunk is full; after an env error, what it kept (maybe None)."""
        t0 = time.monotonic()
        error: Exception | None = None
        try:
            while not self.chunk.full:
                self._step()
        except Exception as exc:  # any env failure: rebuild and go on (see module doc)
            error = exc
        self.times.step_s += time.monotonic() - t0
        chunk = self._take_chunk()
        return chunk if error is None else self._recover_from_env_error(error, chunk)

    def _take_report(self, rows: int) -> WorkerReport:
        """The report to send with ``rows`` rows (-1: a rollout, all its steps)."""
        report = self.channel.take_report(rows)
        if self.norm is not None:
            report.norm_delta = self.norm.take_delta()
        report.times = WorkerTimes(**vars(self.times))
        self.times = WorkerTimes()
        self.global_env_steps += report.env_steps
        self.own_env_steps = 0
        return report

    def step(self, wait_s: float) -> bool:
        """Collect and push one chunk (or rollout); False once the run has stopped."""
        if self.stop:
            return False
        if not self.channel.wait_for_turn(wait_s):
            return not self.stop
        self.times.weights_wait_s += self.weights.take(None, now=False)
        version = self.weights.version
        chunk = self._collect()
        if self.stop:  # the env kept failing: report it (and what it kept) and stop
            self._push(chunk, version)
            return False
        if chunk is None:
            return True
        self._push(chunk, version)
        return not self.stop

    def _push(self, chunk: Batch | None, version: int) -> None:
        """Send ``chunk`` (collected with weights ``version``) as the flow has it travel, or
        only the report when there is no chunk."""
        if chunk:
            payload = self.sender.prepare(chunk, version)
        else:
            payload = Payload(None, 0, version)
        self.channel.send(payload, self._take_report(payload.rows), collected=bool(chunk))

    def finish(self) -> WorkerStats:
        """At the stop: settle the acks and report the n-step steps that never completed."""
        self.channel.wait_for_acks(0)
        unfinished = self.sender.unfinished()
        if unfinished or self.report.env_steps or self.report.env_errors:
            if unfinished:
                self.report.dropped["nstep_unfinished"] = unfinished
            self._push(None, self.weights.version)
            self.channel.wait_for_acks(0)
        return self.stats()

    @property
    def env_error_count(self) -> int:
        return self.envs.error_count

    def close(self) -> None:
        self.envs.close()
