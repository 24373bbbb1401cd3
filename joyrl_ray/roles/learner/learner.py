"""The Learner: owns the model, learns from the data plane's data, publishes weights.

One or more learners run as a data-parallel group (``general_cfg.n_learners``). Off-policy,
each learner samples its ``batch_size / N`` rows per update in rounds that each replay
shard decides once for all of them (as many updates as the update-to-data ratio allows), and
keeps its next round's request in flight while it learns. On-policy, each takes its env
slice of one rollout per worker, learns, and rank 0 publishes the next weights version.
Gradients are averaged inside the algorithm (``Algorithm.optimize``), so every learner takes
the same steps. Rank 0 alone publishes weights, reports and checkpoints.

A learner never writes files and never evaluates: it puts each checkpoint (the state as
bytes, and the acting weights) in the object store and hands the coordinator only the
reference; the driver fetches it, writes it and has it evaluated beside learning. Its
final checkpoint travels as the result of :meth:`run`, so it reaches the driver even when
the coordinator is gone.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from algos import get_algorithm
from algos.parallel import DataParallel
from joyrl_ray.batch import Batch
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.league.checkpoint import LEAGUE_KEY
from joyrl_ray.normalization import CHECKPOINT_KEY
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.distributed import ProcessGroup, Rendezvous
from joyrl_ray.roles.learner.source import IDLE, LEARNED, STOPPED, LearnerLinks
from joyrl_ray.seeding import derive_seed
from joyrl_ray.wire.handles import RoleDied, RoleError
from joyrl_ray.wire.messages import (
    CheckpointRef,
    CheckpointReport,
    Counters,
    LearnerReport,
    LearnerTimes,
    Placement,
)
from joyrl_ray.wire.pending import PendingCalls

CALL_SLACK_S = 60.0  # beyond a call's own wait: how long an answer may take before it is stuck
REPORT_EVERY_S = 0.5
MAX_UPDATES_PER_ROUND = 32
WAIT_S = 1.0  # deadline of one blocking wait for data; the loop then checks again


def pick_device(name: str) -> torch.device:
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise RuntimeError("general_cfg.device=cuda but no GPU is visible to the learner")
        return torch.device("cuda")
    return torch.device("cpu")


def state_to_bytes(state: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def state_from_bytes(data: bytes) -> dict[str, Any]:
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


@dataclass
class LearnerStats:
    rank: int
    updates: int
    weights_version: int
    device: str
    params_digest: str  # equal on every learner of a group (the parameters are identical)
    times: LearnerTimes


@dataclass
class LearnerResult:
    """What :meth:`Learner.run` returns: its stats, and rank 0's final checkpoint."""

    stats: LearnerStats
    final_checkpoint: CheckpointReport | None
    data_server_lost: str | None = None  # why the loop ended early, if a peer it needs died


class Learner:
    """Trains one algorithm (one rank of the learner group); a Ray actor or a plain object."""

    def __init__(
        self,
        cfg: LearnerConfig,
        links: LearnerLinks,
        spaces: tuple[gym.Space, gym.Space],
        *,
        rank: int = 0,
        world_size: int = 1,
        generation: int = 1,
        start_state: bytes | None = None,
    ) -> None:
        self.loaded_at = time.time()  # its modules are in: the constructor begins
        torch.set_num_threads(cfg.threads)
        self.cfg = cfg
        self.links = links
        self.coordinator = links.coordinator
        self.rank, self.world_size, self.generation = rank, world_size, generation
        self.device = pick_device(cfg.device)
        spec = get_algorithm(cfg.algo_name)
        # A multi-agent run's policies each draw streams of their own.
        streams = () if cfg.policy == DEFAULT_POLICY else (cfg.policy,)
        if cfg.seed:  # before the policy exists: its initial weights follow the seed
            torch.manual_seed(derive_seed(cfg.seed, "torch", "learner", *streams))
        self.algorithm = spec.algorithm_cls(cfg.algo, *spaces, self.device)
        self.source = links.source
        self.source.bind(rank, world_size, MAX_UPDATES_PER_ROUND)
        self.algorithm.seed(derive_seed(cfg.seed, "learner", *streams))
        self.weights_version = 0
        self.counters = Counters()
        self.normalization: dict[str, Any] | None = None  # as the coordinator last said
        self.league: dict[str, Any] | None = None  # the league's state, as last said (its main)
        # A restored learner has a checkpoint to go back to; a new one makes its first
        # within first_checkpoint_s of its first update (see _first_checkpoint_due).
        self.has_checkpoint = start_state is not None
        self.first_update_at: float | None = None
        if start_state is not None:
            self._restore(state_from_bytes(start_state))
        self.pending = PendingCalls()
        self.metric_sums: dict[str, float] = defaultdict(float)
        self.metric_count = 0
        self.last_report = time.monotonic()
        self.times = LearnerTimes()
        self.reported_times = LearnerTimes()
        self.meeting: Rendezvous | None = None  # rank 0's, from rendezvous() on
        self.group: ProcessGroup | None = None
        freeze_startup_heap()

    # ----- state -----
    def _restore(self, checkpoint: dict[str, Any]) -> None:
        self.algorithm.load_state_dict(checkpoint["policy"])
        self.weights_version = int(checkpoint.get("weights_version", 0))
        self.counters = Counters(**checkpoint.get("counters", {}))
        self.normalization = checkpoint.get(CHECKPOINT_KEY)
        self.league = checkpoint.get(LEAGUE_KEY)
        rng = checkpoint.get("rng")
        if rng is not None:
            torch.set_rng_state(rng["torch"])
            self.algorithm.rng.bit_generator.state = rng["numpy"]
            if "learning" in rng:
                self.algorithm.torch_rng.set_state(rng["learning"])

    def state(self) -> dict[str, Any]:
        """Everything a resumed learner needs (see :meth:`_restore`), and a league's state
        (its main policy's learner: a resume takes the league from the checkpoint)."""
        state = {
            "algo_name": self.cfg.algo_name,
            "policy": self.algorithm.state_dict(),
            "weights_version": self.weights_version,
            "counters": vars(self.counters).copy(),
            CHECKPOINT_KEY: self.normalization,
            "rng": {
                "torch": torch.get_rng_state(),
                "numpy": self.algorithm.rng.bit_generator.state,
                "learning": self.algorithm.torch_rng.get_state(),
            },
        }
        if self.league is not None:
            state[LEAGUE_KEY] = self.league
        return state

    @property
    def updates(self) -> int:
        return self.algorithm.updates

    def params_digest(self) -> str:
        digest = hashlib.sha256()
        for tensor in self.algorithm.synced_tensors():
            digest.update(tensor.detach().cpu().numpy().tobytes())
        return digest.hexdigest()[:16]

    # ----- the group -----
    def rendezvous(self) -> tuple[str, int]:
        """Rank 0: the address the group meets at (this node, a port held for the group)."""
        self.meeting = Rendezvous()
        return self.meeting.address

    def start(self, group_address: tuple[str, int] | None) -> None:
        """Join the group (rank 0's state wins), fence versions with the coordinator, publish."""
        if self.world_size > 1:
            assert group_address is not None
            self.group = ProcessGroup.join(
                group_address,
                rank=self.rank,
                world_size=self.world_size,
                device=self.device,
                rendezvous=self.meeting,
            )
            self.algorithm.join(DataParallel(self.rank, self.world_size))
        where = Placement.here(self.cfg.role(self.rank), loaded_at=self.loaded_at)
        restored = replace(self.counters)
        started = self.coordinator.learner_started(
            self.rank, self.generation, restored, where
        ).result(timeout_s=CALL_SLACK_S)
        self.source.learner_started(self.generation)
        # Versions only grow: a restarted group publishes newer versions than any published.
        self.weights_version = max(self.weights_version, started.weights_version)
        self.counters = started.counters
        self.counters.updates = self.updates
        if self.rank == 0:
            self.publish_weights()

    def publish_weights(self) -> None:
        self.weights_version += 1
        call = self.coordinator.publish_weights(self.algorithm.get_weights(), self.weights_version)
        self.pending.add(call)

    # ----- learning -----
    def train_step(self, wait_s: float) -> str:
        """Learn from one round of data, waiting up to ``wait_s`` for it.

        Returns LEARNED, IDLE (no data within the deadline) or STOPPED (the run is over).
        """
        self.pending.check()
        self.source.check()
        t0 = time.monotonic()
        data = self.source.next_round(self.weights_version, wait_s)
        self.times.data_wait_s += time.monotonic() - t0
        if data.stopped:
            return STOPPED
        if not data.batches:
            if time.monotonic() - self.last_report > REPORT_EVERY_S:
                self.report()  # the coordinator hears from a waiting learner too
            return IDLE
        if self.cfg.max_updates > 0:  # never past the limit; the coordinator stops the run
            room = max(self.cfg.max_updates - self.updates, 0)
            data = replace(data, batches=data.batches[:room])
            if not data.batches:
                return IDLE
        priorities = [self._learn(batch) for batch in data.batches]
        self.source.learned(data, priorities)
        if 0 < self.cfg.max_updates <= self.updates:
            self.report()  # at once: the coordinator stops the run on it
        return LEARNED

    def _learn(self, batch: Batch) -> np.ndarray | None:
        """One update on ``batch``; returns its rows' new priorities (PER), if any."""
        t0 = time.monotonic()
        sync_before = self.algorithm.parallel.sync_s
        result = self.algorithm.learn(batch)
        sync = self.algorithm.parallel.sync_s - sync_before
        self.times.sync_s += sync
        self.times.learn_s += time.monotonic() - t0 - sync
        for key, value in result.metrics.items():
            self.metric_sums[key] += value
        self.metric_count += 1
        self.counters.updates = self.updates
        cfg = self.cfg
        if self.rank == 0:
            every = self.source.publishes_every_update
            if every or self.updates % cfg.weights_publish_every == 0:
                self.publish_weights()
            if self.updates % cfg.model_save_fre == 0:
                self.checkpoint(evaluate=cfg.online_eval)
            elif self._first_checkpoint_due():
                self.checkpoint(evaluate=False)
        if time.monotonic() - self.last_report > REPORT_EVERY_S:
            self.report()
        return result.priorities

    def report(self) -> None:
        """Send averaged metrics (rank 0) and time shares; the reply refreshes the counters."""
        metrics: dict[str, float] = {}
        if self.rank == 0 and self.metric_count:
            metrics = {k: v / self.metric_count for k, v in self.metric_sums.items()}
            metrics.update(self.algorithm.exploration_stats(self.counters.env_steps))
        times = LearnerTimes(
            **{k: v - getattr(self.reported_times, k) for k, v in vars(self.times).items()}
        )
        self.reported_times = LearnerTimes(**vars(self.times))
        report = LearnerReport(self.rank, self.updates, metrics, times, self.cfg.policy)
        reply = self.coordinator.report_learner(report).result(timeout_s=CALL_SLACK_S)
        counters = reply.counters
        self.counters = Counters(counters.env_steps, counters.episodes, self.updates)
        self.normalization = reply.normalization
        if reply.league is not None:
            self.league = reply.league
        self.metric_sums.clear()
        self.metric_count = 0
        self.last_report = time.monotonic()

    def make_checkpoint(self, *, evaluate: bool) -> CheckpointReport:
        # The run's env steps as the coordinator counts them, and never fewer than the
        # learner has learned from: a worker's report may reach the coordinator after the
        # round its rollout was in was learned (on Ray), and a seeded run's checkpoints say
        # the same on either backend.
        env_steps = max(self.counters.env_steps, self.source.env_steps_learned)
        counters = replace(self.counters, env_steps=env_steps)
        return CheckpointReport(
            updates=self.updates,
            counters=counters,
            state=state_to_bytes(self.state()),
            weights=self.algorithm.get_weights(),
            evaluate=evaluate,
            normalization=self.normalization,
            policy=self.cfg.policy,
        )

    def _first_checkpoint_due(self) -> bool:
        """Whether a learner without any checkpoint has learnt for first_checkpoint_s: a
        run whose model_save_fre is far off still has one to restart from early on."""
        if self.has_checkpoint or self.cfg.first_checkpoint_s is None:
            return False
        now = time.monotonic()
        if self.first_update_at is None:
            self.first_update_at = now
        return now - self.first_update_at >= self.cfg.first_checkpoint_s

    def checkpoint(self, *, evaluate: bool) -> None:
        """Put a checkpoint in the object store and hand its reference to the coordinator,
        for the driver; never waits for its evaluation."""
        self.has_checkpoint = True
        t0 = time.monotonic()
        self.report()
        checkpoint = self.make_checkpoint(evaluate=evaluate)
        box = self.links.store.put(checkpoint)
        ref = CheckpointRef(checkpoint.updates, box, evaluate, self.cfg.policy)
        self.pending.add(self.coordinator.submit_checkpoint(ref))
        self.times.checkpoint_s += time.monotonic() - t0

    # ----- the loop -----
    def run(self, group_address: tuple[str, int] | None = None) -> LearnerResult:
        """Learn until the data plane says stop; rank 0 returns the final checkpoint."""
        try:
            self.start(group_address)
            while self.train_step(WAIT_S) != STOPPED:
                pass
        except RoleDied as exc:  # the coordinator is gone: stop here and keep what we learned
            return self.finish(lost=str(exc))
        return self.finish()

    def finish(self, lost: str | None = None) -> LearnerResult:
        """Settle the calls in flight; rank 0 makes the final checkpoint."""
        if lost is None:
            self.pending.drain(timeout_s=CALL_SLACK_S)
            self.source.settle()
            self.report()
        else:
            try:  # the rollout queue died, not the coordinator: the updates are counted
                self.report()
            except RoleError:
                pass
        final = self.make_checkpoint(evaluate=False) if self.rank == 0 else None
        if self.group is not None:
            self.group.leave()
        return LearnerResult(self.stats(), final, lost)

    def stats(self) -> LearnerStats:
        return LearnerStats(
            rank=self.rank,
            updates=self.updates,
            weights_version=self.weights_version,
            device=str(self.device),
            params_digest=self.params_digest(),
            times=LearnerTimes(**{k: round(v, 3) for k, v in vars(self.times).items()}),
        )


def learner_seconds(stats: list[LearnerStats]) -> dict[str, float]:
    """Seconds summed over learners, by activity."""
    total = LearnerTimes()
    for s in stats:
        total.add(s.times)
    return {k: round(v, 3) for k, v in vars(total).items()}
