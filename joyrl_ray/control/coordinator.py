"""The Coordinator: the control plane of a run, one actor that never touches a transition.

It holds the global counters and the stop rule, the newest weights (a store reference and
its version, fenced so that versions only grow), the roles' registry, the report
mailboxes the driver drains, the stall diagnostics and the news that wakes the driver.
Off-policy, a worker's report (a few counters, no rows) travels with its rows to its
replay shard, and each shard forwards its workers' reports here a few times a second
(``take_reports``): the coordinator is not on the path of a worker's chunk. On-policy and
in test mode workers report each rollout or episode batch here themselves. Learners
publish weights and hand in checkpoints *by reference* (the bytes stay in the object
store until the driver fetches them).

When the run stops it tells the data plane (each shard or the queue) so that throttled
workers and waiting learners wake; that is the only call it makes.

Policies: everything that belongs to one policy (its newest weights, its learner group's
generation and updates, the books of its transitions, its data-plane actors) sits on the
policy's desk (:class:`~joyrl_ray.control.policy_desk.PolicyDesk`); every call of a worker,
a data-plane actor or a learner names its policy (a single-agent run's one policy is
``DEFAULT_POLICY``). The run's counters, its stop, the roster of workers and the mailboxes
are the run's, whatever the policies.

Accounting: every transition a worker reports is *collected* here; the data plane counts
what it stored and dropped, the coordinator what was lost with workers or never sent, so
``transitions_collected == sum(stored) + sum(dropped)`` per policy over the coordinator and
the policy's data-plane actors (the coordinator keeps these books on each policy's desk).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from joyrl_ray.control.env_error_budget import EnvErrorBudget
from joyrl_ray.control.league_desk import LeagueDesk
from joyrl_ray.control.mailboxes import Mailboxes
from joyrl_ray.control.policy_desk import PolicyDesk
from joyrl_ray.control.run_normalization import RunNormalization
from joyrl_ray.control.worker_roster import WorkerRoster
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.league.league import Game, LeagueSettings
from joyrl_ray.normalization import NormSettings
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.wire.handles import Call, LocalStore, ObjectStore, RoleError
from joyrl_ray.wire.messages import (
    CheckpointRef,
    Counters,
    LeagueView,
    LearnerReply,
    LearnerReport,
    LearnerStart,
    Placement,
    PushAck,
    Reports,
    StallReport,
    TakenReport,
    WorkerReport,
    WorkerStart,
)
from joyrl_ray.wire.waiting import WaitingRoom


@dataclass
class StopRule:
    """When a run ends; ``-1`` disables a limit."""

    max_env_steps: int = -1
    max_episode: int = -1
    max_updates: int = -1  # each learning policy's updates
    max_env_errors_per_1000: float = -1  # env errors per 1,000 env steps (-1: no limit)
    env_error_window_steps: int = 50_000  # ... over this many recent env steps

    def env_error_budget(self) -> EnvErrorBudget | None:
        """The env-error rate budget this rule sets, or None when it sets none."""
        if self.max_env_errors_per_1000 < 0:
            return None
        return EnvErrorBudget(self.max_env_errors_per_1000, self.env_error_window_steps)


@dataclass
class PolicyStats:
    """One policy's closing figures at the coordinator."""

    transitions_collected: int
    transitions_dropped: dict[str, int]  # what never reached the data plane, by reason
    rows_sent: dict[int, int]  # by replay shard: rows workers sent it (minus those lost)
    weights_versions: int
    weights_rejected: int
    updates: int


@dataclass
class CoordinatorStats:
    """The run's closing figures at the coordinator; ``transitions_*``, ``rows_sent`` and
    ``weights_*`` are the first policy's (a single-agent run's one), ``policies`` has each."""

    transitions_collected: int
    transitions_dropped: dict[str, int]  # what never reached the data plane, by reason
    rows_sent: dict[int, int]  # by replay shard: rows workers sent it (minus those lost)
    weights_versions: int
    weights_rejected: int
    env_errors: int
    episodes_dropped: int
    stop_reason: str | None
    stop_detail: str | None
    busy_s: float
    normalization: dict[str, Any] | None = None  # version and counts of the merged statistics
    first_weights_at: float | None = None  # epoch seconds
    policies: dict[str, PolicyStats] | None = None
    league: dict[str, Any] | None = None  # the strongest member, ratings, league.csv's rows


class Coordinator(WaitingRoom):
    """Counters, the stop rule, weights, the roles' registry and the driver's mailboxes."""

    def __init__(
        self,
        *,
        stop_rule: StopRule,
        n_workers: int,
        learning: bool,
        counters: Counters | None = None,
        store: ObjectStore | None = None,
        data_plane: dict[str, Sequence[Any]] | None = None,
        normalization: NormSettings | None = None,
        start_normalization: dict[str, Any] | None = None,
        policies: Sequence[str] = (DEFAULT_POLICY,),
        start_updates: dict[str, int] | None = None,
        league: LeagueSettings | None = None,
        start_league: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.stop_rule = stop_rule
        self.store = store or LocalStore()
        self.stop_calls: list[Call[None]] = []
        start = counters or Counters()
        self.counters = Counters(start.env_steps, start.episodes, start.updates)
        self.start_env_steps = start.env_steps  # where this run (or its resume) began
        self.workers = WorkerRoster(n_workers)
        self.learner_seen: dict[tuple[str, int], float] = {}  # (policy, rank): last report
        self.desks = {p: PolicyDesk(p, self.store, learning) for p in policies}
        for policy, updates in (start_updates or {}).items():
            self.desks[policy].updates = updates
        self.data_plane = data_plane or {}
        # Workers' normalization deltas merged (a resume and test mode: from the checkpoint's).
        self.norm = RunNormalization(normalization or NormSettings(), start_normalization)
        self.stop_reason: str | None = None
        self.stop_detail: str | None = None
        self.env_error_count = 0
        self.env_error_budget = stop_rule.env_error_budget()
        self.episodes_dropped = 0  # finished past max_episode: not counted, not logged
        self.mail = Mailboxes()
        self.news_seq = 0  # counts what the driver should see at once: checkpoints, the stop
        self.busy_s = 0.0
        self.first_weights_at: float | None = None  # epoch seconds: the first version came
        # Test mode's games are counted up to its episodes, as its episodes are.
        games = None if learning else stop_rule.max_episode
        self.league = (
            None
            if league is None
            else LeagueDesk(league, self.store, start_league, test_games=games)
        )
        freeze_startup_heap()

    @property
    def data_plane(self) -> dict[str, Sequence[Any]]:
        """Each policy's data-plane actors' clients (each with ``request_stop(reason)``)."""
        return {p: desk.data_plane for p, desk in self.desks.items()}

    @data_plane.setter
    def data_plane(self, clients: dict[str, Sequence[Any]]) -> None:
        for policy, actors in clients.items():
            self.desks[policy].data_plane = list(actors)

    # ----- workers -----
    def _ack(self, desk: PolicyDesk, known_version: int) -> PushAck:
        return PushAck(
            stop=self.stop_reason is not None,
            throttled=False,  # the worker's shard says whether it must wait
            env_steps=self.counters.env_steps,
            weights=desk.weights.newer_than(known_version),
            normalization=self.norm.shared(),
        )

    def register_worker(
        self, worker_id: int, where: Placement, policy: str = DEFAULT_POLICY
    ) -> WorkerStart:
        """A worker (new, or restarted by Ray) starts: where it runs and what it continues
        (``weights`` the newest of ``policy``, ``weights_by_policy`` every policy's).

        A second registration means Ray restarted the worker's process: the transitions it
        held back died with it and are counted as lost.
        """
        with self._cond:
            self.mail.placements.append(where)
            kind = self.workers.start(worker_id, where.ip)
            # A worker's first process draws its random streams from where the run began, so
            # a seeded run does not depend on how the workers' starts race; a restarted or
            # returning one from where the run is now.
            stream_steps = self.counters.env_steps
            if kind in ("first", "joins"):
                stream_steps = self.start_env_steps
            if kind == "joins":
                self.mail.events.append(f"worker {worker_id} joins the run, on {where.ip}")
            elif kind == "back":
                self.mail.events.append(f"worker {worker_id} is back, on {where.ip}")
                self.norm.restarted(worker_id)
            elif kind == "restarted":
                restarts = self.mail.worker_restarts
                restarts[worker_id] += 1
                lost = self._lose_steps(worker_id)
                self.mail.events.append(
                    f"worker {worker_id} was restarted on {where.ip} (restart "
                    f"{restarts[worker_id]}); {lost} env steps it held back were lost"
                )
                self.norm.restarted(worker_id)
            stopped = self.stop_reason is not None
            return WorkerStart(
                self.counters.env_steps,
                stopped,
                self.desks[policy].weights.newest(),
                self.workers.incarnations[worker_id],
                self.norm.shared(),
                stream_steps,
                {p: desk.weights.newest() for p, desk in self.desks.items()},
            )

    def _lose_steps(self, worker_id: int) -> int:
        """What ``worker_id``'s process held back, every policy's, lost with it."""
        return sum(desk.books.lose_steps(worker_id) for desk in self.desks.values())

    def report_worker(
        self,
        report: WorkerReport,
        rows: int,
        known_version: int,
        shard: int = -1,
        stored: bool = False,
        policy: str = DEFAULT_POLICY,
    ) -> PushAck:
        """Count a worker's own report (on-policy, test mode, or its shard died during the
        insert): ``rows`` of it went to replay shard ``shard``, or to the rollout queue, which
        ``stored`` them; the ack says stop and carries newer weights."""
        taken = [TakenReport(report, rows, stored)]
        return self.take_reports(shard, taken, known_version, policy)

    def take_reports(
        self,
        shard: int,
        reports: list[TakenReport],
        known_version: int,
        policy: str = DEFAULT_POLICY,
    ) -> PushAck:
        """Count the reports replay shard ``shard`` of ``policy`` gathered from its workers
        since its last call, each with the rows it stored or dropped (``shard`` -1: none, see
        ``report_worker``); the answer is for the shard's acks."""
        t0 = time.monotonic()
        with self._cond:
            desk = self.desks[policy]
            for taken in reports:
                self._count(desk, taken, shard)
            ack = self._ack(desk, known_version)
        self.busy_s += time.monotonic() - t0
        return ack

    def _count(self, desk: PolicyDesk, taken: TakenReport, shard: int) -> None:
        report, rows = taken.report, taken.rows
        worker = report.worker_id
        # A report that reaches the coordinator after its worker was restarted or dropped
        # (it waited in a shard): what the worker held back died with that process.
        gone = self.workers.gone(worker, report.incarnation)
        desk.books.count(report, rows, shard, gone)
        if not gone:
            self.workers.pushed(worker)
        self.mail.worker_times.add(report.times)
        # An earlier incarnation's normalization deltas are left out.
        if not gone and report.norm_delta is not None:
            self.norm.take(worker, report.norm_delta)
        if report.env_errors:
            self.env_error_count += len(report.env_errors)
            self.mail.env_errors.extend(report.env_errors)
        if self.env_error_budget is not None:
            last = report.env_errors[-1] if report.env_errors else ""
            over = self.env_error_budget.record(report.env_steps, len(report.env_errors), last)
            if over is not None:
                self._stop("env_errors", over)
        if report.fatal_env_error:
            self._stop("env_failed", report.fatal_env_error)
        # Past the stop only what the data plane stored counts: it is learned from, and the
        # data plane hears of the stop a moment after this (the rest it dropped).
        if self.stop_reason is not None and not taken.stored:
            return
        self.counters.env_steps += report.env_steps
        episodes, trajs = report.episodes, report.trajectories
        if report.env_episodes is not None:  # a multi-agent env: its episodes are the run's
            ended, keep = report.env_episodes, len(episodes)
            limit = self.stop_rule.max_episode
            room = max(limit - self.counters.episodes, 0) if limit > 0 else ended
            if ended > room:  # past max_episode: the agents' episodes of the first `room`
                keep = keep * room // ended
                self.episodes_dropped += ended - room
                ended, trajs = room, trajs[:keep]
            self.counters.episodes += ended
            self.mail.episodes.extend(episodes.reports(worker, keep, desk.policy))
            self.mail.trajectories.extend(trajs)
            self._check_limits()
            return
        keep = len(episodes)
        limit = self.stop_rule.max_episode
        if limit > 0:
            room = max(limit - self.counters.episodes, 0)
            self.episodes_dropped += max(keep - room, 0)
            keep, trajs = min(keep, room), trajs[: room if trajs else 0]
        self.counters.episodes += keep
        self.mail.episodes.extend(episodes.reports(worker, keep, desk.policy))
        self.mail.trajectories.extend(trajs)
        self._check_limits()

    def wait_for_weights(
        self, worker_id: int, known_version: int, timeout_s: float, policy: str = DEFAULT_POLICY
    ) -> PushAck:
        """Block until ``policy``'s weights newer than ``known_version`` are out (on-policy,
        test mode)."""
        with self._cond:
            desk = self.desks[policy]
            self._wait(
                f"worker {worker_id}",
                "newer weights" if len(self.desks) == 1 else f"newer weights of {policy}",
                lambda: self.stop_reason is not None or desk.weights.version > known_version,
                timeout_s,
            )
            return self._ack(desk, known_version)

    def league_games(
        self, worker_id: int, incarnation: int, games: list[Game], known_version: int
    ) -> LeagueView | None:
        """A worker's finished league games (an earlier process's are left out), and what
        it deals the next ones from, if newer than ``known_version``."""
        with self._cond:
            assert self.league is not None, "league_games in a run without a league"
            if not self.workers.gone(worker_id, incarnation):
                self.league.record(games)
            return self.league.view(known_version)

    def drop_worker(self, worker_id: int) -> int:
        """A worker is gone for good. Returns the env steps it held back, lost with it."""
        with self._cond:
            lost = self._lose_steps(worker_id)
            self.workers.drop(worker_id)
            if not self.workers.active:
                self._stop("no_workers_left", "every worker died past its restart budget")
            self._cond.notify_all()
            return lost

    def shed_worker(self, worker_id: int) -> tuple[int, str | None]:
        """A worker stopped to make room (see ``drop_worker``): the env steps lost with it,
        and the ip it ran on."""
        return self.drop_worker(worker_id), self.workers.ips.get(worker_id)

    def admit_worker(self, worker_id: int) -> None:
        """A worker joins the run: a new one (the fleet grows), or one shed earlier back as
        a new process (its reports count again; those of its earlier process that arrive
        late count as lost with it)."""
        with self._cond:
            self.workers.admit(worker_id)

    def count_lost(self, shard: int, rows: int, line: str, policy: str = DEFAULT_POLICY) -> None:
        """Rows replay shard ``shard`` of ``policy`` lost in flight (it died during their
        insert), for the log."""
        with self._cond:
            self.desks[policy].books.lose_with_shard(shard, rows)
            self.mail.events.append(line)

    # ----- learners -----
    def _run_updates(self) -> int:
        return sum(desk.updates for desk in self.desks.values())

    def learner_started(
        self,
        rank: int,
        generation: int,
        restored: Counters,
        where: Placement,
        policy: str = DEFAULT_POLICY,
    ) -> LearnerStart:
        """A learner of ``policy`` (re)starts from ``restored``: versions continue from the
        newest."""
        with self._cond:
            desk = self.desks[policy]
            self.learner_seen[(policy, rank)] = time.monotonic()
            self.mail.placements.append(where)
            if generation > 1:
                self.mail.events.append(f"{where.role} is running again on {where.ip}")
            if generation > desk.learner_generation:
                desk.learner_generation = generation
                desk.updates = restored.updates
                self.counters.updates = self._run_updates()
            return LearnerStart(self._counters_of(desk), desk.weights.version)

    def _counters_of(self, desk: PolicyDesk) -> Counters:
        """The run's counters with ``desk``'s policy's updates: what its learners checkpoint."""
        return Counters(self.counters.env_steps, self.counters.episodes, desk.updates)

    def publish_weights(
        self, weights: dict[str, np.ndarray], version: int, policy: str = DEFAULT_POLICY
    ) -> bool:
        """Make ``weights`` the newest version of ``policy``; a version not newer than the
        newest is refused.

        The coordinator keeps a copy and puts it in the store itself when an ack first hands
        it out (see ``NewestWeights``).
        """
        with self._cond:
            if not self.desks[policy].weights.publish(weights, version):
                return False
            if self.first_weights_at is None:
                self.first_weights_at = time.time()
            self._cond.notify_all()
            return True

    def report_learner(self, report: LearnerReport) -> LearnerReply:
        """Learner progress; returns the global counters (with the policy's updates) and the
        normalization statistics (the learner checkpoints them)."""
        with self._cond:
            desk = self.desks[report.policy]
            self.learner_seen[(report.policy, report.rank)] = time.monotonic()
            if report.rank == 0:
                desk.updates = report.updates
                self.counters.updates = self._run_updates()
                self._check_limits()
            self.mail.learner_times.add(report.times)
            if report.metrics:
                self.mail.learner.append(report)
            league = None
            if self.league is not None and report.policy == self.league.settings.main:
                if report.rank == 0:
                    newest = desk.weights.newest()
                    self.league.main_reported(report.updates, newest, self.counters.env_steps)
                league = self.league.state()
            return LearnerReply(self._counters_of(desk), self.norm.to_checkpoint(), league)

    def submit_checkpoint(self, checkpoint: CheckpointRef) -> None:
        """A checkpoint's reference for the driver to fetch and write (and maybe evaluate)."""
        with self._cond:
            self.mail.checkpoints.append(checkpoint)
            self._news()

    # ----- the stop -----
    def _check_limits(self) -> None:
        rule, counters = self.stop_rule, self.counters
        if rule.max_env_steps > 0 and counters.env_steps >= rule.max_env_steps:
            self._stop("max_env_steps")
        elif rule.max_episode > 0 and counters.episodes >= rule.max_episode:
            self._stop("max_episode")
        elif rule.max_updates > 0 and self._every_policy_learned(rule.max_updates):
            self._stop("max_updates")

    def _every_policy_learned(self, updates: int) -> bool:
        learning = [desk for desk in self.desks.values() if desk.learning]
        return bool(learning) and all(desk.updates >= updates for desk in learning)

    def _stop(self, reason: str, detail: str | None = None) -> None:
        if self.stop_reason is None:
            self.stop_reason, self.stop_detail = reason, detail
            actors = [a for desk in self.desks.values() for a in desk.data_plane]
            self.stop_calls = [actor.request_stop(reason) for actor in actors]
            self._news()

    def _news(self) -> None:
        self.news_seq += 1
        self._cond.notify_all()

    def wait_for_news(self, seen: int, timeout_s: float) -> int:
        """Answers once there is news past ``seen`` (a checkpoint, the stop) or after
        ``timeout_s``: the news count to pass next time."""
        with self._cond:
            self._cond.wait_for(lambda: self.news_seq > seen, timeout=timeout_s)
            return self.news_seq

    def request_stop(self, reason: str, detail: str | None = None) -> None:
        with self._cond:
            self._stop(reason, detail)

    # ----- the driver -----
    def _settle_stop_calls(self) -> None:
        """Read the stop calls that answered; a data-plane actor that died needs no stop."""
        for call in [c for c in self.stop_calls if c.done()]:
            self.stop_calls.remove(call)
            try:
                call.result(timeout_s=0)
            except RoleError as exc:
                self.mail.events.append(f"telling the data plane to stop failed: {exc}")

    def drain_reports(self) -> Reports:
        """Everything reported since the last drain, plus the counters and the stop state."""
        with self._cond:
            self._settle_stop_calls()
            reports = self.mail.drain(
                self.counters, self.stop_reason, self.stop_detail, len(self.workers.active)
            )
            reports.updates_by_policy = {p: desk.updates for p, desk in self.desks.items()}
            if self.league is not None:
                reports.league_frozen = self.league.take_frozen()
                reports.league_ratings = self.league.ratings()
            return reports

    def stall_report(self) -> StallReport:
        waiting = self.waiting_roles()
        with self._cond:
            now = time.monotonic()
            return StallReport(
                waiting=waiting,
                last_push_age_s={w: round(now - t, 1) for w, t in self.workers.last_push.items()},
                active_workers=len(self.workers.active),
                learner_report_age_s={k: round(now - t, 1) for k, t in self.learner_seen.items()},
            )

    def stats(self) -> CoordinatorStats:
        with self._cond:
            policies = {p: self._policy_stats(desk) for p, desk in self.desks.items()}
            first = next(iter(policies.values()))
            return CoordinatorStats(
                transitions_collected=first.transitions_collected,
                transitions_dropped=first.transitions_dropped,
                rows_sent=first.rows_sent,
                weights_versions=first.weights_versions,
                weights_rejected=first.weights_rejected,
                env_errors=self.env_error_count,
                episodes_dropped=self.episodes_dropped,
                stop_reason=self.stop_reason,
                stop_detail=self.stop_detail,
                busy_s=round(self.busy_s, 3),
                first_weights_at=self.first_weights_at,
                normalization=self.norm.summary(),
                policies=policies,
                league=None if self.league is None else self.league.summary(),
            )

    def _policy_stats(self, desk: PolicyDesk) -> PolicyStats:
        collected, dropped, sent = desk.books.totals(self.workers.gone)
        return PolicyStats(
            transitions_collected=collected,
            transitions_dropped=dropped,
            rows_sent=sent,
            weights_versions=desk.weights.version,
            weights_rejected=desk.weights.rejected,
            updates=desk.updates,
        )
