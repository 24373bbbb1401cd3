"""The Worker: steps a vector of envs with a local copy of the policy.

Off-policy, it folds steps into n-step transitions and pushes them as columns every
``worker_chunk_steps`` vector steps, keeping at most ``max_pushes_in_flight`` pushes
unacknowledged (a slow DataServer slows the worker instead of filling memory). On-policy,
it collects one rollout of ``rollout_len`` steps per env with one weights version and
waits for the next version before the next rollout. Finished episodes (and trajectories
with ``collect_traj``) travel with the pushes.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from algos import get_algorithm
from envs.registry import make_env_fn
from joyrl_ray.buffers.nstep import NStepFolder
from joyrl_ray.config import RunConfig
from joyrl_ray.handles import Call, Handle, LocalHandle
from joyrl_ray.seeding import derive_seed

Batch = dict[str, np.ndarray]
# Status of one step_chunk call.
STEPPED, WAITING, STOPPED = "stepped", "waiting", "stopped"
# On-policy waits last a learner iteration: poll for new weights with backoff up to this.
ON_POLICY_MAX_POLL_S = 0.02


class EpisodeTracker:
    """Per-env returns and lengths, and whole trajectories when asked for."""

    def __init__(self, n_envs: int, keep_trajectories: bool) -> None:
        self.returns = np.zeros(n_envs)
        self.lengths = np.zeros(n_envs, dtype=np.int64)
        self.keep = keep_trajectories
        self.steps: list[list[dict[str, Any]]] = [[] for _ in range(n_envs)]

    def record(
        self, step: Batch, done: np.ndarray, any_done: bool | None = None
    ) -> tuple[list[int], list[dict[str, Any]]]:
        """Add one vector step; return the envs whose episode ended and their trajectories."""
        self.returns += step["rewards"]
        self.lengths += 1
        if self.keep:
            for i in range(len(done)):
                self.steps[i].append({k: step[k][i] for k in TRAJ_KEYS})
        if not (done.any() if any_done is None else any_done):  # the common case
            return [], []
        ended = list(np.flatnonzero(done))
        trajs = []
        if self.keep:
            for i in ended:
                trajs.append({k: np.stack([s[k] for s in self.steps[i]]) for k in TRAJ_KEYS})
                self.steps[i] = []
        return ended, trajs

    def finish(self, i: int) -> tuple[float, int]:
        result = (float(self.returns[i]), int(self.lengths[i]))
        self.returns[i], self.lengths[i] = 0.0, 0
        return result


TRAJ_KEYS = ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")


class Worker:
    """Collects experience for one run; the same class is a Ray actor or a plain object."""

    def __init__(self, worker_id: int, cfg: RunConfig, data_server: Handle) -> None:
        torch.set_num_threads(1)
        general = cfg.general
        self.worker_id = worker_id
        self.data_server = data_server
        self.train = general.mode == "train"
        self.chunk_steps = general.worker_chunk_steps
        self.max_in_flight = general.max_pushes_in_flight
        self.n_envs = general.n_envs_per_worker
        seed = general.seed
        spec = get_algorithm(general.algo_name)
        self.envs = SyncVectorEnv(
            [make_env_fn(cfg.env, max_episode_steps=general.max_step)] * self.n_envs,
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        self.policy = spec.policy_cls(
            cfg.algo,
            self.envs.single_observation_space,
            self.envs.single_action_space,
            torch.device("cpu"),
        )
        self.on_policy = spec.policy_cls.on_policy and self.train
        # A resumed run (or a restarted actor) continues the global env-step count, so the
        # exploration schedule continues, and draws fresh env / policy streams for it.
        start_steps = int(data_server.call("counters").result()["env_steps"])
        stream = (start_steps,) if start_steps else ()
        env_seeds = [derive_seed(seed, "env", worker_id, i, *stream) for i in range(self.n_envs)]
        self.policy.seed(derive_seed(seed, "policy", worker_id, *stream))
        if seed:
            torch.manual_seed(derive_seed(seed, "torch", worker_id, *stream))
        self.obs, _ = self.envs.reset(seed=env_seeds if seed else None)
        self.folder = (
            NStepFolder(self.n_envs, self.policy.n_step, self.policy.gamma)
            if self.policy.n_step > 1 and not self.on_policy
            else None
        )
        self.tracker = EpisodeTracker(self.n_envs, general.collect_traj)
        self.weights_version = 0
        self._rollout_version = -1  # on-policy: the version our last rollout was made with
        self.global_env_steps = start_steps
        self.local_env_steps = 0
        self.own_env_steps = 0  # this worker's steps handed to the DataServer (for stats)
        self.in_flight: deque[Call] = deque()
        self._latest_version = 0  # the newest weights version the DataServer told us of
        # In one process asking is free (and sees a publish at once): keep asking every chunk.
        self._ask_every_chunk = isinstance(data_server, LocalHandle)
        self.stop = False
        self.throttled = False
        self.pending_episodes: list[dict[str, Any]] = []
        self.pending_trajs: list[dict[str, Any]] = []
        self.busy_s = 0.0
        self.wait_s = 0.0

    # ----- weights and acknowledgements -----
    def _sync_weights(self) -> None:
        # Off-policy (and in test mode) the acks of our pushes carry the newest version, so
        # an actor asks for weights only when it is newer than its own: one call per publish
        # instead of a round trip per chunk queued behind its own pushes (a new version is
        # seen within max_pushes_in_flight + 1 chunks). On-policy workers poll here while
        # they wait for the next version.
        known = self.weights_version
        if (
            not self.on_policy
            and not self._ask_every_chunk
            and known > 0
            and known >= self._latest_version
        ):
            return
        version, box = self.data_server.call("get_weights", self.weights_version).result()
        if box is not None:
            self.policy.set_weights(self.data_server.resolve(box))
            self.weights_version = version

    def _take_ack(self, ack: dict[str, Any]) -> None:
        self.stop = self.stop or ack["stop"]
        self.throttled = ack["throttle"]
        self.global_env_steps = max(self.global_env_steps, ack["env_steps"])
        self._latest_version = ack["weights_version"]

    def _wait_for_acks(self, keep: int) -> None:
        t0 = time.monotonic()
        while len(self.in_flight) > keep:
            self._take_ack(self.in_flight.popleft().result())
        self.wait_s += time.monotonic() - t0

    # ----- stepping -----
    def _step(self) -> Batch:
        """One vector step; returns the step's columns and records finished episodes."""
        env_steps = self.global_env_steps + self.local_env_steps
        actions, extras = self.policy.act(self.obs, explore=self.train, env_steps=env_steps)
        next_obs, rewards, terminated, truncated, info = self.envs.step(
            self.policy.env_action(actions)
        )
        done = terminated | truncated
        any_done = bool(done.any())
        true_next = next_obs
        if any_done:
            true_next = next_obs.copy()
            for i in np.flatnonzero(done):
                true_next[i] = info["final_obs"][i]
        step = {
            "obs": self.obs,
            "actions": actions,
            "rewards": rewards.astype(np.float32),
            "next_obs": true_next,
            "terminated": terminated,
            "truncated": truncated,
            **extras,
        }
        self.obs = next_obs
        self.local_env_steps += self.n_envs
        ended, trajs = self.tracker.record(step, done, any_done)
        for i in ended:
            ret, length = self.tracker.finish(i)
            self.pending_episodes.append(
                {
                    "return": ret,
                    "length": length,
                    "worker_id": self.worker_id,
                    "env_steps": env_steps,
                    "weights_version": self.weights_version,
                    **self.policy.exploration_stats(env_steps),
                }
            )
        self.pending_trajs.extend(trajs)
        return step

    def _fold(self, steps: list[Batch]) -> Batch:
        """One chunk of vector steps as transition columns (n-step folded when n_step > 1)."""
        if self.folder is not None:
            parts = [self.folder.add(step) for step in steps]
            return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        # 1-step: stack each column once per chunk; discounts are gamma, 0 after a terminal.
        out = {k: np.concatenate([s[k] for s in steps]) for k in steps[0] if k != "truncated"}
        terminated = out.pop("terminated")
        out["discounts"] = np.where(terminated, 0.0, self.policy.gamma).astype(np.float32)
        return out

    def _take_reports(self) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
        steps, episodes, trajs = self.local_env_steps, self.pending_episodes, self.pending_trajs
        self.global_env_steps += steps
        self.own_env_steps += steps
        self.local_env_steps, self.pending_episodes, self.pending_trajs = 0, [], []
        return steps, episodes, trajs

    def step_chunk(self) -> str:
        """Collect one chunk (off-policy, test) or one rollout (on-policy) and push it."""
        if self.stop:
            return STOPPED
        if self.throttled:  # the learner trails the update-to-data ratio: let it catch up
            self._wait_for_acks(0)
            self._take_ack(self.data_server.call("push_transitions", None, 0).result())
            if self.throttled:
                return WAITING
        t0 = time.monotonic()
        self._sync_weights()
        if not self.train and self.weights_version == 0:
            self.wait_s += time.monotonic() - t0
            return WAITING  # test mode acts only with the checkpoint's weights
        if self.on_policy:
            if self.weights_version in (0, self._rollout_version):
                self.wait_s += time.monotonic() - t0
                return WAITING  # no weights published yet, or our last rollout is not consumed
            self._rollout_version = self.weights_version
            steps = [self._step() for _ in range(int(self.policy.cfg.rollout_len))]
            rollout = {k: np.stack([s[k] for s in steps]) for k in steps[0]}
            self.busy_s += time.monotonic() - t0
            n, episodes, trajs = self._take_reports()
            call = self.data_server.call(
                "push_rollout", self.weights_version, rollout, n, episodes, trajs
            )
        else:
            steps = [self._step() for _ in range(self.chunk_steps)]
            batch = self._fold(steps) if self.train else None
            self.busy_s += time.monotonic() - t0
            n, episodes, trajs = self._take_reports()
            call = self.data_server.call("push_transitions", batch, n, episodes, trajs)
        self.in_flight.append(call)
        self._wait_for_acks(self.max_in_flight - 1)
        return STOPPED if self.stop else STEPPED

    def run(self, poll_s: float = 0.002) -> dict[str, Any]:
        """Step until the DataServer says stop (the Ray backend's long-running task)."""
        delay = poll_s
        while True:
            status = self.step_chunk()
            if status == STOPPED:
                break
            if status == WAITING:
                t0 = time.monotonic()
                time.sleep(delay)
                self.wait_s += time.monotonic() - t0
                self._poll_stop()
                if self.on_policy:  # fewer idle calls to the DataServer while the learner learns
                    delay = min(delay * 2, ON_POLICY_MAX_POLL_S)
            else:
                delay = poll_s
        self._wait_for_acks(0)
        return self.stats()

    def _poll_stop(self) -> None:
        if self.on_policy or not self.train:
            self.stop = self.stop or self.data_server.call("should_stop").result()

    def stats(self) -> dict[str, Any]:
        return {
            "worker_id": self.worker_id,
            "transitions_collected": self.own_env_steps + self.local_env_steps,
            "busy_s": round(self.busy_s, 3),
            "wait_s": round(self.wait_s, 3),
        }

    def close(self) -> None:
        self.envs.close()
