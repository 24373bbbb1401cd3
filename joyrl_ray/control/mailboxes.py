"""The coordinator's mailboxes: what the roles report, kept until the driver drains it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from joyrl_ray.wire.messages import (
    CheckpointRef,
    Counters,
    EpisodeReport,
    LearnerReport,
    LearnerTimes,
    Placement,
    Reports,
    Trajectory,
    WorkerTimes,
)


@dataclass
class Mailboxes:
    """Reports since the last drain, and the cumulative times and restarts."""

    episodes: list[EpisodeReport] = field(default_factory=list)
    learner: list[LearnerReport] = field(default_factory=list)
    checkpoints: list[CheckpointRef] = field(default_factory=list)
    trajectories: list[Trajectory] = field(default_factory=list)
    env_errors: list[str] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=lambda: [Placement.here("coordinator")])
    events: list[str] = field(default_factory=list)  # lines for the run's log
    worker_times: WorkerTimes = field(default_factory=WorkerTimes)
    learner_times: LearnerTimes = field(default_factory=LearnerTimes)
    worker_restarts: Counter[int] = field(default_factory=Counter)

    def drain(
        self, counters: Counters, stop_reason: str | None, detail: str | None, workers: int
    ) -> Reports:
        """Everything since the last drain (emptied), with the run's counters and stop, and
        how many workers are in the run."""
        reports = Reports(
            episodes=self.episodes,
            learner=self.learner,
            checkpoints=self.checkpoints,
            trajectories=self.trajectories,
            env_errors=self.env_errors,
            placements=self.placements,
            events=self.events,
            worker_restarts=dict(self.worker_restarts),
            counters=Counters(**vars(counters)),
            stop_reason=stop_reason,
            stop_detail=detail,
            worker_times=WorkerTimes(**vars(self.worker_times)),
            learner_times=LearnerTimes(**vars(self.learner_times)),
            workers=workers,
        )
        self.episodes, self.learner, self.checkpoints = [], [], []
        self.trajectories, self.env_errors, self.placements, self.events = [], [], [], []
        return reports
