"""What the roles send each other: one dataclass per message.

Workers send a :class:`WorkerReport` to the coordinator and their rows to the data plane,
and get a :class:`PushAck` and an :class:`InsertAck` back; learners send
:class:`LearnerReport` and hand checkpoints over as a :class:`CheckpointRef`; the driver
drains everything as :class:`Reports`. They live together in this one module (numpy only)
because the coordinator and the data plane unpickle them and must not import torch, which
the modules that produce most of them (worker, learner) do.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from joyrl_ray.normalization import NormDelta, SharedNorm
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.wire.where import group_here, node_here, process_started_at

#: One finished episode: a dict of numpy arrays, one row per step (``obs``, ``actions``,
#: ``rewards``, ``terminated``, ``truncated``, ``next_obs``).
Trajectory = dict[str, np.ndarray]


@dataclass
class Counters:
    """Global progress of a run (totals, also across a resume)."""

    env_steps: int = 0
    episodes: int = 0
    updates: int = 0


@dataclass
class Weights:
    """A published weights version; ``box`` holds an object-store reference (or the dict)."""

    version: int
    box: list[Any]


@dataclass
class Placement:
    """Where a role runs."""

    role: str
    node_id: str
    ip: str
    pid: int
    group: str = field(default_factory=group_here)  # its placement group's id, or ''
    # Epoch seconds (summary.json's time_s.startup_parts): its process started, its
    # constructor began (its modules imported; known for workers and learners), it was up.
    process_started_at: float | None = field(default_factory=process_started_at)
    loaded_at: float | None = None
    ready_at: float = field(default_factory=time.time)

    @classmethod
    def here(cls, role: str, loaded_at: float | None = None) -> Placement:
        """Where ``role`` runs: this process, on this node, up now."""
        return cls(role, *node_here(), os.getpid(), loaded_at=loaded_at)


@dataclass
class EpisodeReport:
    """One finished training or test episode."""

    ret: float
    length: int
    worker_id: int
    env_steps: int  # global env steps when it ended
    weights_version: int
    explore: dict[str, float] = field(default_factory=dict)  # e.g. epsilon
    policy: str = DEFAULT_POLICY  # the policy that acted in it
    agent: str | None = None  # a multi-agent env's agent whose episode it was


@dataclass
class EpisodeColumns:
    """The episodes a worker ended since its last push, one array per field.

    A chunk of short episodes ends hundreds of them: columns pickle in microseconds, where
    one object per episode would cost the worker far more per push. The coordinator turns
    them into reports.
    """

    returns: np.ndarray  # float64, raw env rewards
    lengths: np.ndarray  # int64
    env_steps: np.ndarray  # int64: global env steps when each ended
    weights_versions: np.ndarray  # int64
    explore: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. epsilon
    agents: np.ndarray | None = None  # a multi-agent env's agent of each (str)

    @classmethod
    def empty(cls) -> EpisodeColumns:
        none = np.zeros(0, np.int64)
        return cls(np.zeros(0), none, none, none)

    def __len__(self) -> int:
        return len(self.returns)

    def extend(self, other: EpisodeColumns) -> EpisodeColumns:
        """Both sets of episodes, these first."""
        if not len(self):
            return other
        if not len(other):
            return self
        return EpisodeColumns(
            np.concatenate([self.returns, other.returns]),
            np.concatenate([self.lengths, other.lengths]),
            np.concatenate([self.env_steps, other.env_steps]),
            np.concatenate([self.weights_versions, other.weights_versions]),
            {k: np.concatenate([v, other.explore[k]]) for k, v in self.explore.items()},
            None if self.agents is None else np.concatenate([self.agents, other.agents]),
        )

    def reports(
        self, worker_id: int, limit: int | None = None, policy: str = DEFAULT_POLICY
    ) -> list[EpisodeReport]:
        """The first ``limit`` episodes (all by default) as reports, ``policy``'s."""
        n = len(self) if limit is None else min(limit, len(self))
        stats = [values[:n].tolist() for values in self.explore.values()]
        if stats:
            rows = zip(*stats, strict=True)
            explore = [dict(zip(self.explore, row, strict=True)) for row in rows]
        else:
            explore = [{} for _ in range(n)]
        agents = [None] * n if self.agents is None else self.agents[:n].tolist()
        return [
            EpisodeReport(ret, length, worker_id, steps, version, stats, policy, agent)
            for ret, length, steps, version, stats, agent in zip(
                self.returns[:n].tolist(),
                self.lengths[:n].tolist(),
                self.env_steps[:n].tolist(),
                self.weights_versions[:n].tolist(),
                explore,
                agents,
                strict=True,
            )
        ]


@dataclass
class WorkerTimes:
    """Seconds a worker spent on each activity (its share of wall time)."""

    step_s: float = 0.0  # acting and stepping envs
    push_wait_s: float = 0.0  # waiting for acks and while throttled
    weights_wait_s: float = 0.0  # waiting for (and fetching) new weights

    def add(self, other: WorkerTimes) -> None:
        self.step_s += other.step_s
        self.push_wait_s += other.push_wait_s
        self.weights_wait_s += other.weights_wait_s


@dataclass
class LearnerTimes:
    """Seconds a learner spent on each activity."""

    learn_s: float = 0.0  # computing updates (gradient sync excluded)
    data_wait_s: float = 0.0  # waiting for batches or rollouts
    sync_s: float = 0.0  # averaging gradients with the other learners
    checkpoint_s: float = 0.0  # serializing checkpoints and handing them over

    def add(self, other: LearnerTimes) -> None:
        self.learn_s += other.learn_s
        self.data_wait_s += other.data_wait_s
        self.sync_s += other.sync_s
        self.checkpoint_s += other.checkpoint_s


@dataclass
class ReportTotals:
    """What a worker's reports (for one policy) since its (re)start sum to, this one
    included: the coordinator counts from them what a report lost with a replay shard held."""

    transitions: int = 0  # collected (a single-agent run: its env steps)
    rows: int = 0  # rows it sent to the data plane
    dropped: dict[str, int] = field(default_factory=dict)

    def add(self, transitions: int, rows: int, dropped: dict[str, int]) -> ReportTotals:
        total = dict(self.dropped)
        for reason, n in dropped.items():
            total[reason] = total.get(reason, 0) + n
        return ReportTotals(self.transitions + transitions, self.rows + rows, total)


@dataclass
class WorkerReport:
    """What a worker reports with each push (for the policy whose rows it pushes), counted
    since its previous push.

    In a single-agent run every env step is one transition. In a multi-agent run a report
    counts its policy's transitions (its agents' steps) in ``transitions``, and the env
    steps and finished episodes of the env in ``env_steps`` and ``env_episodes``, which the
    worker puts in whichever of its reports goes first after they happen (0 in the others).
    """

    worker_id: int
    env_steps: int  # env steps taken (every env of its vector)
    episodes: EpisodeColumns = field(default_factory=EpisodeColumns.empty)
    trajectories: list[Trajectory] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)  # steps it discarded itself, by reason
    env_errors: list[str] = field(default_factory=list)  # one line per env error
    fatal_env_error: str | None = None  # the env failed on every try: the run must stop
    times: WorkerTimes = field(default_factory=WorkerTimes)
    incarnation: int = 0  # which start of the worker's process sent it (restarts count up)
    totals: ReportTotals | None = None
    norm_delta: NormDelta | None = None  # normalization statistics seen since the last report
    transitions: int | None = None  # a multi-agent run's: its policy's; None: env_steps
    env_episodes: int | None = None  # a multi-agent run's: the env's; None: len(episodes)

    @property
    def collected(self) -> int:
        """The transitions this report counts for its policy's books."""
        return self.env_steps if self.transitions is None else self.transitions


class TakenReport(NamedTuple):
    """A worker's report as the data plane took it, on its way to the coordinator."""

    report: WorkerReport
    rows: int  # of its env steps, those that reached the data plane (stored or dropped there)
    # The data plane stored its rows (a report without rows: took it before it heard of the
    # stop). Learned from, so counted in the run's env steps even once the coordinator has
    # stopped: the data plane hears of the stop a moment after the coordinator.
    stored: bool


@dataclass
class Frames:
    """Image frames a worker shows for the first time, with its (consecutive) frame ids; the
    ``obs`` / ``next_obs`` columns of its transitions then hold frame ids."""

    ids: np.ndarray
    pixels: np.ndarray


@dataclass
class PushAck:
    """The coordinator's answer to a worker's report or wait (``throttled`` filled in from
    the worker's shard)."""

    stop: bool
    throttled: bool  # the learner trails the update-to-data ratio: wait before the next push
    env_steps: int  # global env steps
    weights: Weights | None = None  # newer weights than the worker holds, if any
    normalization: SharedNorm | None = None  # the newest merged statistics (normalizing runs)


@dataclass
class InsertAck:
    """A data-plane actor's answer to an insert or a wait for room; a replay shard's insert
    ack also passes on the coordinator's latest answer to the shard's reports."""

    shard: int
    rows: int  # rows stored (a rollout queue: queued); 0 when dropped
    throttled: bool  # the learner trails this shard's ratio: wait before the next insert
    stop: bool = False
    env_steps: int = 0  # global env steps, as the shard last heard them
    weights: Weights | None = None  # newer weights than the inserting worker holds, if any
    normalization: SharedNorm | None = None  # as the shard last heard them


@dataclass
class LeagueView:
    """What a worker deals a league's games from: the odds of the main policy's opponents
    (its own name: its newest weights, self-play) and the weights of the snapshots in play."""

    version: int
    table: dict[str, float]  # opponent -> probability
    members: dict[str, Weights]  # snapshot name -> its weights


@dataclass
class WorkerStart:
    env_steps: int
    stop: bool
    weights: Weights | None
    incarnation: int = 0  # 0 for a new worker, n after Ray's n-th restart of it
    normalization: SharedNorm | None = None
    stream_steps: int = 0  # the env steps its random streams (policy, torch, envs) start from
    weights_by_policy: dict[str, Weights | None] = field(default_factory=dict)  # every policy's


@dataclass
class LearnerStart:
    """What a (re)starting learner group continues from."""

    counters: Counters
    weights_version: int  # the newest version published so far: the next must be newer


@dataclass
class LearnerReply:
    """The coordinator's answer to a learner's report: the global counters and the
    normalization statistics (checkpoint form), both for the learner's next checkpoint."""

    counters: Counters
    normalization: dict[str, Any] | None = None
    league: dict[str, Any] | None = None  # the league's state (the main policy's learner)


@dataclass
class SampleGrant:
    """Batches for one learner in one round (the same count for every learner)."""

    batches: list[dict[str, np.ndarray]]
    stop: bool


@dataclass
class RolloutGrant:
    """One learner's share (env columns) of one on-policy iteration's rollouts."""

    rollout: dict[str, np.ndarray] | None
    stop: bool
    env_steps: int = 0  # in the whole iteration's rollouts (every learner's share)


@dataclass
class LearnerReport:
    """Time shares since the previous report, and averaged metrics (rank 0 only)."""

    rank: int
    updates: int
    metrics: dict[str, float]
    times: LearnerTimes
    policy: str = DEFAULT_POLICY


@dataclass
class CheckpointReport:
    """A learner checkpoint on its way to the driver, which alone writes the task directory."""

    updates: int
    counters: Counters
    state: bytes  # torch.save of the learner state
    weights: dict[str, np.ndarray]  # the acting weights, for evaluation
    evaluate: bool
    normalization: dict[str, Any] | None = None  # the statistics the weights act with
    policy: str = DEFAULT_POLICY


@dataclass
class CheckpointRef:
    """A checkpoint in the object store: the coordinator passes on only this reference."""

    updates: int
    box: list[Any]  # holds a :class:`CheckpointReport`
    evaluate: bool
    policy: str = DEFAULT_POLICY


@dataclass
class WaitState:
    """What a role is blocked on inside the coordinator or a data-plane actor, and since
    when (monotonic s)."""

    what: str
    since: float


@dataclass
class Reports:
    """Everything reported since the previous drain, and the state of the run."""

    episodes: list[EpisodeReport]
    learner: list[LearnerReport]
    checkpoints: list[CheckpointRef]
    trajectories: list[Trajectory]
    env_errors: list[str]
    placements: list[Placement]
    events: list[str]  # lines for the run's log (e.g. a worker restarted)
    worker_restarts: dict[int, int]  # cumulative, by worker
    counters: Counters
    stop_reason: str | None
    stop_detail: str | None
    worker_times: WorkerTimes  # cumulative, all workers
    learner_times: LearnerTimes  # cumulative, all learners
    workers: int = 0  # workers in the run now (shed and dropped ones out, new ones in)
    updates_by_policy: dict[str, int] = field(default_factory=dict)
    league_frozen: list[tuple[str, Weights]] = field(default_factory=list)  # new snapshots
    league_ratings: dict[str, float] | None = None  # every league member's, now


@dataclass
class StallReport:
    """Who waits for what, to say why a run makes no progress."""

    waiting: dict[str, WaitState]
    last_push_age_s: dict[int, float]  # per worker, seconds since its last push
    active_workers: int
    # per learner (policy, rank), seconds since its last report (it reports while it waits)
    learner_report_age_s: dict[tuple[str, int], float] = field(default_factory=dict)
