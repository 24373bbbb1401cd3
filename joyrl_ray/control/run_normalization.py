"""The run's normalization statistics at the coordinator: workers' deltas merged in.

Each merge makes a new version; acks hand out the newest as a :class:`SharedNorm`, made
once per version. A delta is merged once: one whose number a worker already had merged
(a report forwarded twice) or one from a worker's earlier incarnation (its numbers start
again at 1 after a restart) is left out, which costs the statistics a few samples and
never counts any twice.
"""

from __future__ import annotations

from typing import Any

from joyrl_ray.normalization import NormDelta, NormSettings, NormStats, RunningMeanStd, SharedNorm


class RunNormalization:
    """The merged statistics, their version, and each worker's last merged delta."""

    def __init__(self, settings: NormSettings, start: dict[str, Any] | None) -> None:
        self.settings = settings
        loaded = NormStats.from_checkpoint(start) if start else NormStats()
        # What this run does not normalize is left out (a resume may turn one off).
        self.stats = NormStats(
            loaded.obs if settings.obs else None, loaded.ret if settings.reward else None
        )
        self.version = int(start.get("version", 0)) if start else 0
        self.merged: dict[int, int] = {}
        self._shared: SharedNorm | None = None

    def take(self, worker_id: int, delta: NormDelta) -> None:
        if delta.seq <= self.merged.get(worker_id, 0):
            return
        stats, seen = self.stats, delta.stats
        # The first delta gives the shapes (a resume may also turn one on).
        if self.settings.obs and stats.obs is None and seen.obs is not None:
            stats.obs = RunningMeanStd.zeros(seen.obs.shape)
        if self.settings.reward and stats.ret is None and seen.ret is not None:
            stats.ret = RunningMeanStd.zeros(())
        stats.merge(seen)
        self.merged[worker_id] = delta.seq
        self.version += 1
        self._shared = None

    def restarted(self, worker_id: int) -> None:
        """A worker's new incarnation numbers its deltas from 1 again."""
        self.merged.pop(worker_id, None)
        self._shared = None

    def shared(self) -> SharedNorm | None:
        """The newest statistics for the acks (None before any were taken or loaded)."""
        if self.stats.empty:
            return None
        if self._shared is None:
            self._shared = SharedNorm(self.version, self.stats.copy(), dict(self.merged))
        return self._shared

    def summary(self) -> dict[str, Any] | None:
        """For the run's summary: the version and what each statistic counted."""
        if not self.settings.on:
            return None
        stats = self.stats
        return {
            "version": self.version,
            "obs_count": int(stats.obs.count) if stats.obs is not None else 0,
            "reward_count": int(stats.ret.count) if stats.ret is not None else 0,
            "workers_merged": len(self.merged),  # workers whose deltas this run merged
        }

    def to_checkpoint(self) -> dict[str, Any] | None:
        if not self.settings.on:
            return None
        return self.stats.to_checkpoint(self.settings, self.version)
