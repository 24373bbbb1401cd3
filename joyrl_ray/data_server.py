"""The DataServer: replay (or the rollout queue), global counters and the stop condition.

Every other role talks to it with short calls: workers push columns and read back the
newest weights version and whether to stop; the learner samples, writes priorities back
and publishes weights; the driver drains episode and metric reports for the logs. It
keeps no reference to any other actor, so it never blocks.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from joyrl_ray.buffers import PrioritizedReplayBuffer, ReplayBuffer

Batch = dict[str, np.ndarray]


@dataclass
class StopRule:
    """When a run ends; ``-1`` / None disables a limit."""

    max_env_steps: int = -1
    max_episode: int = -1
    reward_threshold: float | None = None


@dataclass
class ReplaySpec:
    """How to build replay and pace the learner (read from an off-policy ``algo_cfg``)."""

    buffer_type: str = "REPLAY_QUE"
    buffer_size: int = 100_000
    learn_start: int = 1_000
    updates_per_step: float = 1.0
    per_alpha: float = 0.6
    per_beta_start: float = 0.4
    per_beta_samples: int = 2_000_000
    per_eps: float = 1e-6

    @classmethod
    def from_algo_cfg(cls, algo_cfg: Any) -> ReplaySpec:
        return cls(**{k: getattr(algo_cfg, k) for k in cls.__dataclass_fields__})


class DataServer:
    """Replay or rollouts, counters, reports and the stop flag for one run."""

    def __init__(
        self,
        *,
        stop_rule: StopRule,
        replay: ReplaySpec | None,
        n_workers: int,
        learner_lag_tolerance: int = 64,
        counters: dict[str, int] | None = None,
        seed: int | None = None,
    ) -> None:
        self.stop_rule = stop_rule
        self.replay = replay
        self.n_workers = n_workers
        self.learner_lag_tolerance = learner_lag_tolerance
        self.buffer: ReplayBuffer | None = None
        if replay is not None:
            if replay.buffer_type == "PER":
                self.buffer = PrioritizedReplayBuffer(
                    replay.buffer_size,
                    alpha=replay.per_alpha,
                    beta_start=replay.per_beta_start,
                    beta_annealing_samples=replay.per_beta_samples,
                    eps=replay.per_eps,
                    seed=seed,
                )
            else:
                self.buffer = ReplayBuffer(replay.buffer_size, seed=seed)
        self.rollouts: list[tuple[int, int, Batch]] = []  # (weights version, env steps, rollout)
        start = counters or {}
        self.env_steps = int(start.get("env_steps", 0))
        self.episodes = int(start.get("episodes", 0))
        self.updates_granted = int(start.get("updates", 0))
        self.updates_done = int(start.get("updates", 0))
        self.env_steps_at_start = self.env_steps
        self.updates_at_start = self.updates_done
        self.transitions_stored = 0
        self.dropped: Counter[str] = Counter()
        self.priorities_applied = 0
        self.weights_version = 0
        self.weights_box: list[Any] | None = None
        self.stop_reason: str | None = None
        self.pending: dict[str, list[Any]] = {
            "episodes": [],
            "learner": [],
            "evals": [],
            "trajs": [],
        }
        self.busy_s = 0.0
        self.started = time.monotonic()

    # ----- workers -----
    def _ack(self) -> dict[str, Any]:
        return {
            "weights_version": self.weights_version,
            "stop": self.stop_reason is not None,
            "env_steps": self.env_steps,
            "throttle": self._learner_lagging(),
        }

    def _learner_lagging(self) -> bool:
        if self.replay is None or self.learner_lag_tolerance < 0:
            return False
        return self._allowed_updates() - self.updates_granted > self.learner_lag_tolerance

    def _allowed_updates(self) -> int:
        assert self.replay is not None
        collected = self.env_steps - self.env_steps_at_start
        if collected < self.replay.learn_start:
            return self.updates_at_start
        return self.updates_at_start + int(
            (collected - self.replay.learn_start + 1) * self.replay.updates_per_step
        )

    def _count(self, env_steps: int, episodes: list[dict[str, Any]], trajs: list[Any]) -> bool:
        """Count a worker's report; False when it arrived after the run was told to stop."""
        if self.stop_reason is not None:
            self.dropped["after_stop"] += env_steps
            return False
        self.env_steps += env_steps
        limit = self.stop_rule.max_episode
        if limit > 0:
            room = max(limit - self.episodes, 0)
            if len(episodes) > room:
                self.dropped["episodes_past_max_episode"] += len(episodes) - room
            episodes, trajs = episodes[:room], trajs[: room if trajs else 0]
        self.episodes += len(episodes)
        self.pending["episodes"].extend(episodes)
        self.pending["trajs"].extend(trajs)
        self._check_limits()
        return True

    def push_transitions(
        self,
        batch: Batch | None,
        env_steps: int,
        episodes: list[dict[str, Any]] | None = None,
        trajs: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Store a worker's folded transitions (off-policy) and count its steps and episodes."""
        t0 = time.monotonic()
        if (
            self._count(env_steps, episodes or [], trajs or [])
            and batch
            and self.buffer is not None
        ):
            rows = len(next(iter(batch.values())))
            if rows:
                self.buffer.add(batch)
                self.transitions_stored += rows
        self.busy_s += time.monotonic() - t0
        return self._ack()

    def push_rollout(
        self,
        version: int,
        rollout: Batch,
        env_steps: int,
        episodes: list[dict[str, Any]] | None = None,
        trajs: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Queue an on-policy rollout; one made with stale weights is dropped and counted."""
        t0 = time.monotonic()
        if self._count(env_steps, episodes or [], trajs or []):
            if version != self.weights_version:
                self.dropped["stale_rollout"] += env_steps
            else:
                self.rollouts.append((version, env_steps, rollout))
                self.transitions_stored += env_steps
        self.busy_s += time.monotonic() - t0
        return self._ack()

    def get_weights(self, known_version: int) -> tuple[int, list[Any] | None]:
        """The newest weights (boxed object-store reference) if newer than ``known_version``."""
        if self.weights_version > known_version:
            return self.weights_version, self.weights_box
        return self.weights_version, None

    # ----- learner -----
    def publish_weights(self, box: list[Any], version: int) -> None:
        self.weights_box = box
        self.weights_version = version

    def sample_batches(self, batch_size: int, max_batches: int) -> list[Batch]:
        """Up to ``max_batches`` batches, as many as the update-to-data ratio allows now.

        At an env-step or episode limit the learner may still catch up with the ratio (it
        trails by up to ``learner_lag_tolerance`` plus the workers' pushes in flight), so a
        run ends with ``updates ~ updates_per_step * env steps``; any other stop ends it now.
        """
        t0 = time.monotonic()
        assert self.buffer is not None, "sample_batches needs replay (an off-policy algorithm)"
        n = min(max_batches, self._allowed_updates() - self.updates_granted)
        draining = self.stop_reason in ("max_env_steps", "max_episode")
        if (self.stop_reason is not None and not draining) or len(self.buffer) < batch_size:
            n = 0
        batches = [self.buffer.sample(batch_size) for _ in range(max(n, 0))]
        self.updates_granted += len(batches)
        self.busy_s += time.monotonic() - t0
        return batches

    def take_rollouts(self, count: int) -> list[Batch]:
        """``count`` queued rollouts for one on-policy iteration, or none if fewer are ready.

        Rollouts queued before the newest publish (e.g. a restarted worker pushed twice for
        one version) are stale by now: they are dropped and counted, never learned from.
        """
        fresh = [r for r in self.rollouts if r[0] == self.weights_version]
        for _, env_steps, _ in (r for r in self.rollouts if r[0] != self.weights_version):
            self.dropped["stale_rollout"] += env_steps
        self.rollouts = fresh
        if len(self.rollouts) < count or self.stop_reason is not None:
            return []
        taken, self.rollouts = self.rollouts[:count], self.rollouts[count:]
        return [rollout for _, _, rollout in taken]

    def update_priorities(
        self, slots: np.ndarray, generations: np.ndarray, priorities: np.ndarray
    ) -> None:
        t0 = time.monotonic()
        assert self.buffer is not None
        applied = self.buffer.update_priorities(slots, generations, priorities)
        self.priorities_applied += applied
        self.dropped["stale_priorities"] += len(slots) - applied
        self.busy_s += time.monotonic() - t0

    def report_learner(self, updates: int, metrics: dict[str, float]) -> dict[str, Any]:
        """Learner progress; returns the counters the learner checkpoints."""
        self.updates_done = updates
        if metrics:
            self.pending["learner"].append(
                {"updates": updates, "env_steps": self.env_steps, **metrics}
            )
        return self.counters()

    def report_eval(self, result: dict[str, Any]) -> None:
        self.pending["evals"].append(result)
        threshold = self.stop_rule.reward_threshold
        if (
            threshold is not None
            and result["return_mean"] >= threshold
            and self.stop_reason is None
        ):
            self.stop_reason = "reward_threshold"

    # ----- driver -----
    def _check_limits(self) -> None:
        rule = self.stop_rule
        if self.stop_reason is not None:
            return
        if rule.max_env_steps > 0 and self.env_steps >= rule.max_env_steps:
            self.stop_reason = "max_env_steps"
        elif rule.max_episode > 0 and self.episodes >= rule.max_episode:
            self.stop_reason = "max_episode"

    def request_stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    def should_stop(self) -> bool:
        return self.stop_reason is not None

    def counters(self) -> dict[str, int]:
        return {
            "env_steps": self.env_steps,
            "episodes": self.episodes,
            "updates": self.updates_done,
        }

    def drain_reports(self) -> dict[str, Any]:
        """Everything reported since the last drain, plus the current counters."""
        reports, self.pending = self.pending, {k: [] for k in self.pending}
        return {**reports, "counters": self.counters(), "stop_reason": self.stop_reason}

    def stats(self) -> dict[str, Any]:
        buffer = self.buffer.stats() if self.buffer is not None else {}
        return {
            "transitions_stored": self.transitions_stored,
            "transitions_dropped": {k: v for k, v in self.dropped.items() if v},
            "priorities_applied": self.priorities_applied,
            "weights_versions": self.weights_version,
            "stop_reason": self.stop_reason,
            "buffer": buffer,
            "busy_s": round(self.busy_s, 3),
            "alive_s": round(time.monotonic() - self.started, 3),
        }
