"""A worker's normalization: its envs' observations and rewards as its policy sees them.

The worker's statistics are always the run's newest merged ones plus what it saw that
they do not hold yet: its deltas sent but not merged, and what it saw since its last
report. When an ack brings newer merged statistics, the deltas they hold (by number, see
:class:`~joyrl_ray.normalization.SharedNorm`) are forgotten and the rest added again, so
no sample is counted twice. Frozen (test mode) it only applies what it was given.
"""

from __future__ import annotations

import numpy as np

from joyrl_ray.normalization import (
    NormDelta,
    NormSettings,
    NormStats,
    SharedNorm,
    normalize_obs,
)


class WorkerNormalizer:
    """Normalizes one worker's observations and rewards and keeps its statistics."""

    def __init__(
        self,
        worker_id: int,
        settings: NormSettings,
        obs_shape: tuple[int, ...],
        n_envs: int,
        gamma: float,
        *,
        frozen: bool,
    ) -> None:
        self.worker_id = worker_id
        self.settings = settings
        self.frozen = frozen
        self.gamma = gamma
        self.stats = NormStats.zeros(settings, obs_shape)  # what it normalizes with
        self.unsent = NormStats.zeros(settings, obs_shape)  # seen since its last report
        self.unmerged: list[NormDelta] = []  # sent, not yet in the merged statistics
        self.version = 0  # of the merged statistics it holds
        self.seq = 0  # its deltas sent
        self.returns = np.zeros(n_envs, np.float64)  # each env's discounted return

    def observe(self, obs: np.ndarray) -> np.ndarray:
        """``obs`` (one row per env) normalized, after counting it unless frozen."""
        stats = self.stats.obs
        if stats is None:
            return obs
        if not self.frozen:
            stats.update(obs)
            assert self.unsent.obs is not None
            self.unsent.obs.update(obs)
        return normalize_obs(obs, stats, self.settings)

    def final_obs(self, obs: np.ndarray) -> np.ndarray:
        """The last observations of ended episodes: normalized, not counted (the policy
        never acts on them; VecNormalize does the same)."""
        if self.stats.obs is None:
            return obs
        return normalize_obs(obs, self.stats.obs, self.settings)

    def normalized_info(self, info: dict) -> dict:
        """``info`` with the true last observations of the episodes that ended (a same-step
        autoreset's ``final_obs``) normalized as :meth:`final_obs` does."""
        if self.stats.obs is None or "final_obs" not in info:
            return info
        finals = np.array(info["final_obs"], dtype=object, copy=True)
        for i in np.flatnonzero(info["_final_obs"]):
            finals[i] = self.final_obs(np.asarray(finals[i])[None])[0]
        return {**info, "final_obs": finals}

    def rewards(self, rewards: np.ndarray, ended: np.ndarray) -> np.ndarray:
        """A chunk's ``[time, env]`` rewards scaled by the std of the discounted return;
        ``ended`` says where episodes ended (their return starts again at 0)."""
        stats = self.stats.ret
        if stats is None:
            return rewards
        if not self.frozen:
            returns = np.empty(rewards.shape, np.float64)
            for t in range(len(rewards)):
                self.returns = self.returns * self.gamma + rewards[t]
                returns[t] = self.returns
                self.returns[ended[t]] = 0.0
            stats.update(returns.reshape(-1))
            assert self.unsent.ret is not None
            self.unsent.ret.update(returns.reshape(-1))
        clip = self.settings.clip_reward
        scaled = rewards / stats.std(self.settings.epsilon)
        return np.clip(scaled, -clip, clip).astype(rewards.dtype, copy=False)

    def episodes_dropped(self) -> None:
        """The envs were rebuilt: every env's return starts again."""
        self.returns[:] = 0.0

    def take_delta(self) -> NormDelta | None:
        """What it saw since its last report, to send with this one (None: nothing)."""
        if self.frozen or not self.settings.on or self.unsent.empty:
            return None
        self.seq += 1
        delta = NormDelta(self.seq, self.unsent)
        self.unmerged.append(delta)
        self.unsent = NormStats.zeros(self.settings, self._obs_shape())
        return delta

    def take_shared(self, shared: SharedNorm | None) -> None:
        """Newer merged statistics: they, plus what they do not hold of this worker's."""
        if shared is None or shared.version <= self.version:
            return
        self.version = shared.version
        merged = shared.merged.get(self.worker_id, 0)
        self.unmerged = [d for d in self.unmerged if d.seq > merged]
        stats = NormStats.zeros(self.settings, self._obs_shape())
        stats.merge(shared.stats)  # a copy: on one process the message is shared
        for delta in self.unmerged:
            stats.merge(delta.stats)
        stats.merge(self.unsent)
        self.stats = stats

    def _obs_shape(self) -> tuple[int, ...]:
        return self.stats.obs.shape if self.stats.obs is not None else ()
