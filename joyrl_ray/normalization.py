"""Observation and reward normalization (``env_cfg.normalize_obs`` / ``normalize_reward``).

As SB3's ``VecNormalize`` computes it and RLlib's ``MeanStdFilter`` shares it:

- observations: ``clip((obs - mean) / sqrt(var + norm_epsilon), -clip_obs, clip_obs)``,
  mean and var running over every observation the workers saw;
- rewards: ``clip(reward / sqrt(var_R + norm_epsilon), -clip_reward, clip_reward)``, where
  var_R runs over each env's discounted return ``R = gamma * R + reward`` (reset where an
  episode ends; gamma is the algorithm's). No mean is subtracted from rewards.

Where the statistics live and how they travel:

- each worker normalizes what its envs return before its policy acts, so the stored and
  sent observations and rewards are the normalized ones; episode returns stay the env's;
- each worker's report carries a :class:`NormDelta`, what it saw since its previous
  report (numbered per worker), and the coordinator merges it into the run's statistics,
  whose version grows with each merge;
- acks carry the merged statistics as a :class:`SharedNorm` (its version, and per worker
  the last delta it holds), and a worker replaces its own by them plus its deltas not yet
  merged (nothing counted twice, nothing lost); an older version never replaces a newer;
- checkpoints hold them (:meth:`NormStats.to_checkpoint`), a resumed run starts from
  them, and the evaluator and test mode use a checkpoint's statistics without updating
  them. :func:`obs_transform` gives an exporter the frozen ``(mean, std, clip)``, which
  ``python -m joyrl_ray.export`` folds into the exported file.

:class:`RunningMeanStd` merges by Chan et al.'s parallel algorithm (1979), so merged
statistics equal one pass over all the data, whatever the order or the split; float64
throughout. Numpy only: the coordinator, the workers and an exporter all import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHECKPOINT_KEY = "normalization"


@dataclass
class RunningMeanStd:
    """Count, mean and (population) variance per element of a fixed shape."""

    mean: np.ndarray
    var: np.ndarray
    count: float = 0.0

    @classmethod
    def zeros(cls, shape: tuple[int, ...]) -> RunningMeanStd:
        return cls(np.zeros(shape, np.float64), np.ones(shape, np.float64), 0.0)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.mean.shape)

    def copy(self) -> RunningMeanStd:
        return RunningMeanStd(self.mean.copy(), self.var.copy(), self.count)

    def update(self, batch: np.ndarray) -> None:
        """Add the rows of ``batch`` (first axis: rows, the rest: this shape)."""
        rows = np.asarray(batch, np.float64).reshape(-1, *self.shape)
        if len(rows):
            self._add(rows.mean(axis=0), rows.var(axis=0), float(len(rows)))

    def merge(self, other: RunningMeanStd) -> None:
        """Add what ``other`` counted (Chan et al.'s parallel update)."""
        if other.count > 0:
            self._add(other.mean, other.var, other.count)

    def _add(self, mean: np.ndarray, var: np.ndarray, count: float) -> None:
        if self.count == 0:
            self.mean, self.var, self.count = mean.copy(), var.copy(), count
            return
        total = self.count + count
        delta = mean - self.mean
        m2 = self.var * self.count + var * count + delta**2 * self.count * count / total
        self.mean = self.mean + delta * count / total
        self.var = m2 / total
        self.count = total

    def std(self, epsilon: float) -> np.ndarray:
        return np.sqrt(self.var + epsilon)

    def to_state(self) -> dict[str, Any]:
        """Plain numbers and lists (a checkpoint loads them with ``weights_only``); float64
        values survive the round trip exactly."""
        return {
            "shape": list(self.shape),
            "mean": self.mean.ravel().tolist(),
            "var": self.var.ravel().tolist(),
            "count": float(self.count),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RunningMeanStd:
        shape = tuple(int(n) for n in state["shape"])
        mean = np.asarray(state["mean"], np.float64).reshape(shape)
        var = np.asarray(state["var"], np.float64).reshape(shape)
        return cls(mean, var, float(state["count"]))


@dataclass(frozen=True)
class NormSettings:
    """The ``env_cfg`` fields that say what is normalized and how."""

    obs: bool = False
    reward: bool = False
    clip_obs: float = 10.0
    clip_reward: float = 10.0
    epsilon: float = 1e-8

    @classmethod
    def of(cls, env_cfg: Any) -> NormSettings:
        return cls(
            bool(env_cfg.normalize_obs),
            bool(env_cfg.normalize_reward),
            float(env_cfg.clip_obs),
            float(env_cfg.clip_reward),
            float(env_cfg.norm_epsilon),
        )

    @property
    def on(self) -> bool:
        return self.obs or self.reward


@dataclass
class NormStats:
    """The running statistics of a run: observations and discounted returns (each None
    when that normalization is off)."""

    obs: RunningMeanStd | None = None
    ret: RunningMeanStd | None = None

    @classmethod
    def zeros(cls, settings: NormSettings, obs_shape: tuple[int, ...]) -> NormStats:
        return cls(
            RunningMeanStd.zeros(obs_shape) if settings.obs else None,
            RunningMeanStd.zeros(()) if settings.reward else None,
        )

    def copy(self) -> NormStats:
        return NormStats(
            self.obs.copy() if self.obs is not None else None,
            self.ret.copy() if self.ret is not None else None,
        )

    def merge(self, other: NormStats) -> None:
        if self.obs is not None and other.obs is not None:
            self.obs.merge(other.obs)
        if self.ret is not None and other.ret is not None:
            self.ret.merge(other.ret)

    @property
    def empty(self) -> bool:
        return all(s is None or s.count == 0 for s in (self.obs, self.ret))

    def to_checkpoint(self, settings: NormSettings, version: int) -> dict[str, Any]:
        """What a checkpoint holds (plain numbers: it loads with ``weights_only``)."""
        return {
            "version": version,
            "obs": self.obs.to_state() if self.obs is not None else None,
            "ret": self.ret.to_state() if self.ret is not None else None,
            "clip_obs": settings.clip_obs,
            "clip_reward": settings.clip_reward,
            "epsilon": settings.epsilon,
        }

    @classmethod
    def from_checkpoint(cls, state: dict[str, Any]) -> NormStats:
        obs, ret = state.get("obs"), state.get("ret")
        return cls(
            RunningMeanStd.from_state(obs) if obs is not None else None,
            RunningMeanStd.from_state(ret) if ret is not None else None,
        )


@dataclass
class NormDelta:
    """What one worker saw since its previous report; ``seq`` counts its reports up from 1
    (from 1 again after a restart)."""

    seq: int
    stats: NormStats


@dataclass
class SharedNorm:
    """The run's merged statistics as acks carry them (never changed once made)."""

    version: int
    stats: NormStats
    merged: dict[int, int] = field(default_factory=dict)  # worker -> last delta seq merged


def unnormalizable(space: Any) -> str | None:
    """Why observations of ``space`` are not normalized (None when they are): only a flat
    float ``Box``; images are scaled by their encoder, nested spaces are refused."""
    dtype = getattr(space, "dtype", None)
    shape = getattr(space, "shape", None)
    if type(space).__name__ == "Box" and dtype is not None and np.issubdtype(dtype, np.floating):
        if shape is not None and len(shape) == 1:
            return None
    return (
        f"the observation space {space} is not normalized; allowed: a 1-D float Box "
        "(Dict, Tuple, discrete and image observations are not, set normalize_obs=false)"
    )


def normalize_obs(obs: np.ndarray, stats: RunningMeanStd, settings: NormSettings) -> np.ndarray:
    """``obs`` standardized by ``stats`` and clipped, as float32 (what policies take)."""
    scaled = (np.asarray(obs, np.float64) - stats.mean) / stats.std(settings.epsilon)
    return np.clip(scaled, -settings.clip_obs, settings.clip_obs).astype(np.float32)


class FrozenObsNorm:
    """A checkpoint's observation normalization, applied and never updated (evaluations,
    test-mode videos)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.stats = RunningMeanStd.from_state(state["obs"])
        self.settings = NormSettings(
            obs=True, clip_obs=float(state["clip_obs"]), epsilon=float(state["epsilon"])
        )

    @classmethod
    def of(cls, state: dict[str, Any] | None) -> FrozenObsNorm | None:
        """None when ``state`` (a checkpoint's ``normalization``) holds no observation
        statistics."""
        return cls(state) if state and state.get("obs") is not None else None

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return normalize_obs(obs, self.stats, self.settings)

    def transform(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(mean, std, clip)`` as float32: ``clip((obs - mean) / std, -clip, clip)``."""
        std = self.stats.std(self.settings.epsilon)
        return self.stats.mean.astype(np.float32), std.astype(np.float32), self.settings.clip_obs


def obs_transform(checkpoint: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, float] | None:
    """A checkpoint's frozen observation normalization as ``(mean, std, clip)``, float32:
    ``clip((obs - mean) / std, -clip, clip)`` is what the policy was trained on. None when
    the run did not normalize observations (an exporter folds this into its graph)."""
    frozen = FrozenObsNorm.of(checkpoint.get(CHECKPOINT_KEY))
    return frozen.transform() if frozen is not None else None
