"""The Learner: owns the model, learns from the DataServer's data, publishes weights.

Off-policy it samples batches (the DataServer grants only as many as the update-to-data
ratio allows, so the learner waits when it is ahead of the data) and keeps the next
sample request in flight while it learns. On-policy it takes one rollout per worker,
learns, and publishes the next weights version. Every ``model_save_fre`` updates it
writes a checkpoint and, with ``online_eval``, evaluates on an env of its own.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from algos import get_algorithm
from algos.base import Batch
from envs.registry import make_env
from joyrl_ray.checkpoint import CheckpointError, CheckpointStore, find_checkpoint
from joyrl_ray.config import RunConfig
from joyrl_ray.evaluator import Evaluator
from joyrl_ray.handles import Call, Handle
from joyrl_ray.seeding import derive_seed

TRAINED, WAITING, STOPPED = "trained", "waiting", "stopped"
REPORT_EVERY_S = 1.0


def pick_device(name: str) -> torch.device:
    if name == "cuda" or (name == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise RuntimeError("general_cfg.device=cuda but no GPU is visible to the learner")
        return torch.device("cuda")
    return torch.device("cpu")


class Learner:
    """Trains one policy; the same class is a Ray actor or a plain object."""

    def __init__(
        self,
        cfg: RunConfig,
        data_server: Handle,
        task_dir: str,
        *,
        started_at: float,
        checkpoint: dict[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        torch.set_num_threads(max(1, threads))
        general = cfg.general
        self.cfg = cfg
        self.data_server = data_server
        self.started_at = started_at
        self.device = pick_device(general.device)
        spec = get_algorithm(general.algo_name)
        probe = make_env(cfg.env, max_episode_steps=general.max_step)
        obs_space, action_space = probe.observation_space, probe.action_space
        probe.close()
        self.policy = spec.policy_cls(cfg.algo, obs_space, action_space, self.device)
        self.policy.seed(derive_seed(general.seed, "learner"))
        if general.seed:
            torch.manual_seed(derive_seed(general.seed, "torch", "learner"))
        self.on_policy = spec.policy_cls.on_policy
        self.prioritized = getattr(cfg.algo, "buffer_type", None) == "PER"
        self.store = CheckpointStore(Path(task_dir) / "models", keep=general.keep_checkpoints)
        self.evaluator = (
            Evaluator(cfg.env, self.policy, seed=general.seed, max_step=general.max_step)
            if general.online_eval
            else None
        )
        self.weights_version = 0
        self.best_return = -math.inf
        self.counters = {"env_steps": 0, "episodes": 0, "updates": 0}
        own = self._own_last_checkpoint()
        if own is not None:  # restarted by Ray: carry on from this run's own last checkpoint
            checkpoint = own
        if checkpoint is not None:
            self._restore(checkpoint)
        self.pending_sample: Call | None = None
        self.metric_sums: dict[str, float] = defaultdict(float)
        self.metric_count = 0
        self.last_report = time.monotonic()
        self.busy_s = self.wait_s = self.eval_s = 0.0
        self.publish_weights()

    # ----- state -----
    def _own_last_checkpoint(self) -> dict[str, Any] | None:
        """This run's newest intact checkpoint, if the learner wrote one before a restart."""
        if not (self.store.dir / "last.pt").is_file():
            return None
        try:
            return find_checkpoint(self.store.dir.parent, "last").state
        except CheckpointError:
            return None

    def _restore(self, checkpoint: dict[str, Any]) -> None:
        self.policy.load_state_dict(checkpoint["policy"])
        self.weights_version = int(checkpoint.get("weights_version", 0))
        self.best_return = float(checkpoint.get("best_return", -math.inf))
        self.counters = dict(checkpoint.get("counters", self.counters))
        rng = checkpoint.get("rng")
        if rng is not None:
            torch.set_rng_state(rng["torch"])
            self.policy.rng.bit_generator.state = rng["numpy"]

    def state(self) -> dict[str, Any]:
        """Everything a resumed learner needs (see :meth:`_restore`)."""
        return {
            "algo_name": self.cfg.general.algo_name,
            "policy": self.policy.state_dict(),
            "weights_version": self.weights_version,
            "best_return": self.best_return,
            "counters": dict(self.counters),
            "rng": {"torch": torch.get_rng_state(), "numpy": self.policy.rng.bit_generator.state},
        }

    @property
    def updates(self) -> int:
        return self.policy.updates

    # ----- weights -----
    def publish_weights(self) -> None:
        self.weights_version += 1
        box = self.data_server.share(self.policy.get_weights())
        self.data_server.call("publish_weights", box, self.weights_version)

    # ----- learning -----
    def train_chunk(self) -> str:
        """Learn from what the DataServer has now; WAITING when ahead of the data."""
        if self.on_policy:
            return self._train_on_policy()
        return self._train_off_policy()

    def _train_off_policy(self) -> str:
        batch_size = self.policy.learner_batch_size()
        t0 = time.monotonic()
        if self.pending_sample is None:
            self.pending_sample = self.data_server.call("sample_batches", batch_size, 8)
        batches = self.pending_sample.result()
        self.pending_sample = None
        self.wait_s += time.monotonic() - t0
        if not batches:
            return self._idle_status()
        self.pending_sample = self.data_server.call("sample_batches", batch_size, 8)
        for batch in batches:
            self._learn(batch)
        return TRAINED

    def _train_on_policy(self) -> str:
        t0 = time.monotonic()
        n_workers = self.cfg.general.n_workers
        rollouts = self.data_server.call("take_rollouts", n_workers).result()
        self.wait_s += time.monotonic() - t0
        if not rollouts:
            return self._idle_status()
        batch = {k: np.concatenate([r[k] for r in rollouts], axis=1) for k in rollouts[0]}
        self._learn(batch)
        return TRAINED

    def _idle_status(self) -> str:
        return STOPPED if self.data_server.call("should_stop").result() else WAITING

    def _learn(self, batch: Batch) -> None:
        t0 = time.monotonic()
        result = self.policy.learn(batch)
        self.busy_s += time.monotonic() - t0
        if self.prioritized and result.priorities is not None:
            self.data_server.call(
                "update_priorities", batch["slots"], batch["generations"], result.priorities
            )
        for key, value in result.metrics.items():
            self.metric_sums[key] += value
        self.metric_count += 1
        updates = self.updates
        if self.on_policy or updates % self.cfg.general.weights_publish_every == 0:
            self.publish_weights()
        if updates % self.cfg.general.model_save_fre == 0:
            self.checkpoint(evaluate=True)
        elif time.monotonic() - self.last_report > REPORT_EVERY_S:
            self.report()

    def report(self) -> None:
        """Send averaged metrics; the reply refreshes the global counters."""
        metrics: dict[str, float] = {}
        if self.metric_count:
            metrics = {k: v / self.metric_count for k, v in self.metric_sums.items()}
            metrics.update(self.policy.exploration_stats(self.counters["env_steps"]))
        counters = self.data_server.call("report_learner", self.updates, metrics).result()
        self.counters = {**counters, "updates": self.updates}
        self.metric_sums.clear()
        self.metric_count = 0
        self.last_report = time.monotonic()

    def checkpoint(self, *, evaluate: bool) -> None:
        self.report()
        result = None
        if evaluate and self.evaluator is not None:
            t0 = time.monotonic()
            result = self.evaluator.evaluate(self.cfg.general.online_eval_episode)
            self.eval_s += time.monotonic() - t0
            result.update(
                env_steps=self.counters["env_steps"],
                updates=self.updates,
                wall_time_s=round(time.time() - self.started_at, 3),
            )
        best = (
            result is not None
            and self.cfg.general.save_best_model is not False
            and result["return_mean"] > self.best_return
        )
        if best:
            self.best_return = result["return_mean"]
        self.store.save(self.state(), self.updates, best=best)
        if result is not None:
            self.data_server.call("report_eval", result).result()

    def run(self, poll_s: float = 0.002) -> dict[str, Any]:
        """Learn until the DataServer says stop, then write the final checkpoint."""
        while True:
            status = self.train_chunk()
            if status == STOPPED:
                break
            if status == WAITING:
                time.sleep(poll_s)
        return self.finish()

    def finish(self) -> dict[str, Any]:
        if self.pending_sample is not None:  # granted but never learned from
            self.pending_sample.result()
            self.pending_sample = None
        self.checkpoint(evaluate=False)
        return self.stats()

    def stats(self) -> dict[str, Any]:
        return {
            "updates": self.updates,
            "weights_version": self.weights_version,
            "device": str(self.device),
            "busy_s": round(self.busy_s, 3),
            "wait_s": round(self.wait_s, 3),
            "eval_s": round(self.eval_s, 3),
        }
