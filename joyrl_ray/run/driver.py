"""The driver loop: advance the roles, write what they report, keep the run honest.

Every half second the driver drains the coordinator's reports into the Recorder, fetches
the learner's checkpoints from the object store and writes them (only the driver writes
the task directory, so no filesystem needs to be shared by the nodes), hands checkpoints
to the evaluator and writes ``best.pt`` from exactly the checkpoint that got the best
evaluation. It also watches the run: a signal asks every role to stop; a role that fails
ends the run with its error; and when neither env steps nor updates move for
``stall_timeout_s`` it stops the run, saying who waits for what.
"""

from __future__ import annotations

import io
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joyrl_ray.backends.runtime import RoleEvents, Runtime
from joyrl_ray.config import RunConfig
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.learner.learner import LearnerResult
from joyrl_ray.run.atomic_file import atomic_write_bytes
from joyrl_ray.run.checkpoint import CheckpointStore
from joyrl_ray.run.evaluations import CheckpointEvaluations
from joyrl_ray.run.league_files import write_snapshot
from joyrl_ray.run.modes import REPLAY_FILE
from joyrl_ray.run.recorder import Recorder
from joyrl_ray.run.signals import StopSignals, running
from joyrl_ray.wire.handles import CallTimeout, RoleDied, RoleError
from joyrl_ray.wire.messages import (
    CheckpointRef,
    CheckpointReport,
    Placement,
    Reports,
    StallReport,
    Weights,
)

DRAIN_EVERY_S = 0.5  # at least this often; a checkpoint or the stop wakes the driver at once
DRAIN_TIMEOUT_S = 30.0
STARTUP_STALL_S = 60.0  # the stall watchdog's least patience before the first env step
END_WAIT_S = 120.0  # how long the roles get to finish after the stop
# The same after SIGINT / SIGTERM (a scheduler's grace period may be short) or a stall (the
# stuck roles will not finish): the learner hands in its final checkpoint within a second
# or two, and evaluations still running are not waited for.
HURRIED_END_WAIT_S = 10.0
# Workers get this long after the stop to end their loops (they report what is left); one
# still running then is stuck (in an env call, say) and is ended, what it held counted lost.
WORKER_END_WAIT_S = 10.0
SILENCE_CHECK_EVERY_S = 5.0  # how often the driver looks for workers that went silent
FAILURE_STOPS = {
    "coordinator_failed",
    "data_server_failed",
    "learner_failed",
    "learner_error",
    "worker_error",
    "env_failed",
    "env_errors",
    "stalled",
    "no_workers_left",
}


@dataclass
class DriveOutcome:
    exit_code: int
    stop_reason: str | None
    error: str | None
    placements: dict[str, Placement] = field(default_factory=dict)
    first_placements: dict[str, Placement] = field(default_factory=dict)  # the start's
    roles_requested_at: float | None = None  # epoch seconds
    first_data_at: float | None = None  # monotonic
    roles_ended_at: float | None = None  # monotonic
    stopped_at: float | None = None
    final_checkpoints: dict[str, CheckpointReport] = field(default_factory=dict)  # by policy
    best_returns: dict[str, float] = field(default_factory=dict)  # by policy
    evals_skipped: int = 0
    evals_failed: int = 0
    eval_env_errors: int = 0  # raised by the evaluator's envs (their episodes replaced)
    worker_restarts: dict[int, int] = field(default_factory=dict)
    # A league's ratings when each snapshot was frozen, and at the end: (env steps, ratings).
    league_ratings: list[tuple[int, dict[str, float]]] = field(default_factory=list)

    @property
    def final_checkpoint(self) -> CheckpointReport | None:
        """A single-agent run's final checkpoint (its one policy's)."""
        return self.final_checkpoints.get(DEFAULT_POLICY)

    @property
    def best_return(self) -> float:
        """The best evaluation's mean return (a multi-agent run's: its first policy's)."""
        return next(iter(self.best_returns.values()), -math.inf)


class Driver:
    """One run's driver loop over a runtime (either backend)."""

    def __init__(
        self,
        cfg: RunConfig,
        runtime: Runtime,
        recorder: Recorder,
        stores: dict[str, CheckpointStore],
        *,
        expected_roles: int,
        announce_placement: Any,
        roles_requested_at: float | None = None,
    ) -> None:
        self.cfg = cfg
        self.runtime = runtime
        self.coordinator = runtime.coordinator
        self.recorder = recorder
        self.stores = stores  # each policy's
        self.expected_roles = expected_roles
        self.announce_placement = announce_placement
        self.outcome = DriveOutcome(0, None, None, roles_requested_at=roles_requested_at)
        for policy in stores:  # a resumed run's best so far
            self.outcome.best_returns[policy] = recorder.best_eval(policy)
        self.latest_states: dict[str, bytes] = {}  # each policy's newest checkpoint
        self.evals = CheckpointEvaluations(cfg, runtime, recorder, stores, self.outcome, self._stop)
        self.progress_mark = (time.monotonic(), -1, -1)
        self.silence_checked = time.monotonic()
        self.replaced_at: dict[str, float] = {}  # roles restarted as silent: when
        self.seen_waiting: dict[str, float] = {}  # roles last seen waiting on a call: when
        self.placement_announced = False
        self.data_plane_placed = False
        self.coordinator_alive = True
        self.end_wait_s = END_WAIT_S
        self.hurried = False
        self.signals: StopSignals | None = None

    # ----- the loop -----
    def drive(self) -> DriveOutcome:
        with running() as signals:
            self.signals = signals
            while not self.runtime.finished:
                events = self.runtime.advance(DRAIN_EVERY_S)
                self._take_events(events)
                if self.coordinator_alive:
                    self._drain()
                self.evals.pump()
                if signals.received is not None and self.outcome.stop_reason is None:
                    self.recorder.log(f"{signals.name}: stopping every role")
                    # A signal may be the first of several (a scheduler's grace period):
                    # finish quickly, with what the roles manage to hand in.
                    self._hurry()
                    self._stop("interrupted", None, signals.exit_code or 130)
                self._watch_for_stalls()
                self._watch_for_silent_roles()
                if self.outcome.stop_reason is not None:
                    self._wait_for_roles()
                    break
            self.outcome.roles_ended_at = time.monotonic()
            if self.coordinator_alive:
                self.runtime.data.flush_reports()  # what the shards still hold, then the last drain
                self._drain()
            self._finish_evals()
        self._take_results()
        return self.outcome

    def _signalled(self) -> bool:
        """Whether a signal came; the first makes the end hurry (see _hurry)."""
        if self.signals is None or self.signals.received is None:
            return False
        if not self.hurried:
            self._hurry()
        return True

    def _hurry(self) -> None:
        self.hurried = True
        self.end_wait_s = HURRIED_END_WAIT_S

    def _finish_evals(self) -> None:
        """Take the evaluations still queued or running, within the end's deadline; none
        after a signal or a stall, nor once an evaluation reached the reward threshold
        (the run is solved: later checkpoints would only delay its end). Those not taken
        are counted as skipped."""
        deadline = time.monotonic() + self.end_wait_s
        solved = self.outcome.stop_reason == "reward_threshold"
        while self.evals.pending:
            if solved or self._signalled() or self.hurried or time.monotonic() > deadline:
                break
            self.evals.pump()
            time.sleep(0.1)
        self.evals.abandon()

    def _stop(self, reason: str, error: str | None, exit_code: int) -> None:
        if self.outcome.stop_reason is not None:
            return
        self.outcome.stop_reason, self.outcome.error = reason, error
        self.outcome.exit_code = exit_code
        self.outcome.stopped_at = time.monotonic()
        if error:
            self.recorder.log(f"stopping: {error}")
        if self.coordinator_alive:
            try:
                self.coordinator.request_stop(reason, error).result(timeout_s=DRAIN_TIMEOUT_S)
            except RoleError as exc:
                self._coordinator_lost(exc)

    def _wait_for_roles(self) -> None:
        """After a stop: let the roles finish (final checkpoint), within a deadline; the
        workers within ``WORKER_END_WAIT_S``, then those still running are ended."""
        started = time.monotonic()
        deadline = started + self.end_wait_s
        workers_ended = False
        while not self.runtime.finished and time.monotonic() < deadline:
            if not workers_ended and time.monotonic() - started > WORKER_END_WAIT_S:
                workers_ended = True
                for line in self.runtime.end_unfinished_workers(WORKER_END_WAIT_S):
                    self.recorder.log(line)
                    self.recorder.note(line)
                continue
            if self._signalled():
                if self.signals is not None and self.signals.urgent:
                    self.recorder.log(f"a second {self.signals.name}: not waiting for the roles")
                    return
                deadline = min(deadline, time.monotonic() + self.end_wait_s)
            self._take_events(self.runtime.advance(DRAIN_EVERY_S))
            if self.coordinator_alive:
                self._drain()
            self.evals.pump()
        if not self.runtime.finished:
            self.recorder.log(
                f"roles still running {self.end_wait_s:g} s after the stop: ending them"
            )

    def _take_events(self, events: RoleEvents) -> None:
        for line in events.log:
            self.recorder.log(line)
            self.recorder.note(line)
        if events.failure is not None:
            self._check_coordinator()  # a role may have failed because the coordinator died
            self._stop(events.failure_reason or "failed", events.failure, 1)

    # ----- reports -----
    def _drain(self) -> None:
        try:
            reports = self.coordinator.drain_reports().result(timeout_s=DRAIN_TIMEOUT_S)
        except RoleError as exc:
            self._coordinator_lost(exc)
            return
        self._ingest(reports)

    def _ingest(self, reports: Reports) -> None:
        self.recorder.ingest(reports)
        for line in reports.events:
            self.recorder.log(line)
            self.recorder.note(line)
        self.outcome.worker_restarts = reports.worker_restarts
        counters = reports.counters  # a run with no workers: its first update is its data
        if (counters.env_steps or counters.updates) and self.outcome.first_data_at is None:
            self.outcome.first_data_at = time.monotonic()
        placements = list(reports.placements)
        if not self.data_plane_placed and (placements or self.outcome.placements):
            self.data_plane_placed = True  # the data plane started before the coordinator
            placements += self.runtime.data.placements()
        for place in placements:
            self.outcome.placements[place.role] = place
            self.outcome.first_placements.setdefault(place.role, place)
        if not self.placement_announced and len(self.outcome.placements) >= self.expected_roles:
            self.placement_announced = True
            self.announce_placement(self.outcome.placements)
        for name, weights in reports.league_frozen:  # before a checkpoint that names them
            self._write_snapshot(name, weights)
        if reports.league_ratings is not None:
            self._note_ratings(reports)
        for ref in reports.checkpoints:
            self._fetch_checkpoint(ref)
        if reports.stop_reason is not None and self.outcome.stop_reason is None:
            reason = reports.stop_reason
            failed = reason in FAILURE_STOPS
            self._stop(reason, reports.stop_detail if failed else None, 1 if failed else 0)

    def _note_ratings(self, reports: Reports) -> None:
        """The league's ratings for its curve: at each freeze, and the last ones."""
        history = self.outcome.league_ratings
        row = (reports.counters.env_steps, dict(reports.league_ratings or {}))
        if reports.league_frozen or not history:
            history.append(row)
        elif reports.stop_reason is not None and history[-1][0] != row[0]:
            history.append(row)
        elif reports.stop_reason is not None:
            history[-1] = row

    def _check_coordinator(self) -> None:
        """Stop for the coordinator's death, if it died (any short call tells)."""
        if self.coordinator_alive:
            try:
                self.coordinator.stall_report().result(timeout_s=DRAIN_TIMEOUT_S)
            except RoleError as exc:
                self._coordinator_lost(exc)

    def _coordinator_lost(self, exc: RoleError) -> None:
        if not self.coordinator_alive:
            return
        self.coordinator_alive = False
        if isinstance(exc, RoleDied):  # "Coordinator died during <call> (<Ray's reason>)"
            error = f"the {exc}"
        else:
            error = f"the Coordinator stopped answering ({exc})"
        self._stop("coordinator_failed", error, 1)

    # ----- checkpoints and evaluations -----
    def _fetch_checkpoint(self, ref: CheckpointRef) -> None:
        """Fetch a checkpoint the learner put in the object store, and write it."""
        try:
            checkpoint = self.runtime.store.get(ref.box, timeout_s=DRAIN_TIMEOUT_S)
        except RoleError as exc:  # the learner died with it: its next one will come
            self.recorder.log(f"the checkpoint at {ref.updates} updates was lost: {exc}")
            return
        self._write_checkpoint(checkpoint)

    def _write_snapshot(self, name: str, weights: Weights) -> None:
        """A snapshot the league froze: its weights to ``models/league/``."""
        try:
            arrays = self.runtime.store.get(weights.box, timeout_s=DRAIN_TIMEOUT_S)
        except RoleError as exc:
            self.recorder.log(f"the league's snapshot {name} was not written: {exc}")
            return
        write_snapshot(self.recorder.task.models, name, arrays)
        self.recorder.log(f"league: froze {name} (weights version {weights.version})")

    @property
    def latest_state(self) -> bytes | None:
        """A single-agent run's newest checkpoint."""
        return self.latest_states.get(DEFAULT_POLICY)

    def _write_checkpoint(self, checkpoint: CheckpointReport) -> None:
        self.stores[checkpoint.policy].save_bytes(checkpoint.state, checkpoint.updates)
        self.latest_states[checkpoint.policy] = checkpoint.state
        self.evals.newest(checkpoint)
        if self.cfg.general.save_buffer:
            self._save_buffer()
        if checkpoint.evaluate and self.runtime.evaluator is not None:
            self.evals.add(checkpoint)

    def _save_buffer(self) -> None:
        try:
            state = self.runtime.data.saved_replay()
        except RoleError as exc:  # the checkpoint is written; a shard died with its replay
            self.recorder.log(f"the replay was not saved: {exc}")
            return
        if not state:
            return
        data = io.BytesIO()
        savez: Any = np.savez  # numpy's stub reads **arrays as its allow_pickle flag
        savez(data, **state)
        atomic_write_bytes(data.getvalue(), self.stores[DEFAULT_POLICY].dir / REPLAY_FILE)

    # ----- the end -----
    def _take_results(self) -> None:
        results = self.runtime.results
        finals: dict[str, CheckpointReport] = {}
        for (policy, _), learner in sorted(results.learners.items()):
            result: LearnerResult = learner
            if result.final_checkpoint is not None:
                finals[policy] = result.final_checkpoint
        for policy, final in finals.items():
            self.outcome.final_checkpoints[policy] = final
            self.stores[policy].save_bytes(final.state, final.updates)
        if finals and self.cfg.general.save_buffer:
            self._save_buffer()

    # ----- the watchdog -----
    def _watch_for_stalls(self) -> None:
        if self.outcome.stop_reason is not None:
            return
        counters = self.recorder.counters
        now = time.monotonic()
        mark_t, steps, updates = self.progress_mark
        if counters["env_steps"] != steps or counters["updates"] != updates:
            self.progress_mark = (now, counters["env_steps"], counters["updates"])
            return
        limit = self.cfg.general.stall_timeout_s
        if counters["env_steps"] == 0:
            # Still starting: the workers' processes, imports and envs come up first, which a
            # busy machine can stretch past a short stall_timeout_s.
            limit = max(limit, STARTUP_STALL_S)
        if now - mark_t < limit or not self.coordinator_alive:
            return
        report = self._stall_report()
        if report is None:
            return
        report.waiting.update(self.runtime.data.waits())
        self._hurry()
        self._stop("stalled", stall_message(report, limit), 1)

    def _stall_report(self) -> StallReport | None:
        """Who waits for what, and how long since each role was heard from; None when the
        coordinator is gone (the run stops, named so)."""
        try:
            return self.coordinator.stall_report().result(timeout_s=DRAIN_TIMEOUT_S)
        except (CallTimeout, RoleError) as exc:
            self._coordinator_lost(exc)
            return None

    def _watch_for_silent_roles(self) -> None:
        """Restart, where the backend can, each worker that pushed nothing for
        ``worker_silent_after_s`` while it waits on no call (an env that stopped answering,
        a node cut off) and each learner group one of whose ranks reported nothing for
        ``learner_silent_after_s``: the run goes on instead of waiting on them."""
        general = self.cfg.general
        now = time.monotonic()
        if self.outcome.stop_reason is not None or not self.coordinator_alive:
            return
        if general.worker_silent_after_s <= 0 and general.learner_silent_after_s <= 0:
            return
        if now - self.silence_checked < SILENCE_CHECK_EVERY_S:
            return
        self.silence_checked = now
        report = self._stall_report()
        if report is None:
            return
        limit = general.worker_silent_after_s
        ages = {f"worker {w}": age for w, age in report.last_push_age_s.items()}
        if limit > 0 and any(age >= limit / 2 for age in ages.values()):
            # Who waits on a call is not silent, and its silence starts again when it was
            # last seen waiting: a worker out of a long wait has yet to push its next chunk.
            for role in {**report.waiting, **self.runtime.data.waits()}:
                self.seen_waiting[role] = now
            seen = self.seen_waiting
            ages = {r: min(age, now - seen.get(r, -math.inf)) for r, age in ages.items()}
        for role, age in self._silent(ages, limit).items():
            place = self.outcome.placements.get(role)
            node = place.node_id if place is not None else None
            line = self.runtime.replace_hung_worker(int(role.split()[1]), age, node)
            if line is not None:
                self.replaced_at[role] = now
                self.recorder.log(line)
                self.recorder.note(line)
        learners = report.learner_report_age_s
        silent_learners = self._silent(
            {_learner_key(*learner): age for learner, age in learners.items()},
            general.learner_silent_after_s,
            heard_since_replaced=True,
        )
        restarted: set[str] = set()  # policies whose group restarts: once, for any rank
        for (policy, rank), age in sorted(learners.items()):
            if policy in restarted or _learner_key(policy, rank) not in silent_learners:
                continue
            restarted.add(policy)
            for other_policy, other_rank in learners:  # the whole group starts anew
                if other_policy == policy:
                    self.replaced_at[_learner_key(other_policy, other_rank)] = now
            self._take_events(self.runtime.replace_silent_learner(policy, rank, age))

    def _silent(
        self, ages: dict[str, float], limit: float, *, heard_since_replaced: bool = False
    ) -> dict[str, float]:
        """Those of ``ages`` (a role's seconds since its last push or report) at ``limit`` or
        more, but for those replaced less than twice ``limit`` ago: a new process starts
        (imports, envs, the first weights) before it pushes, longer on a loaded machine.
        ``heard_since_replaced``: nor a replaced role not heard from since (a learner reports
        as soon as its process is up, so one not heard from is still starting: a restart
        then would only start it again)."""
        if limit <= 0:
            return {}
        now = time.monotonic()
        silent = {}
        for role, age in ages.items():
            replaced = self.replaced_at.get(role)
            if replaced is not None:
                since = now - replaced
                if since < 2 * limit or (heard_since_replaced and age >= since):
                    continue
            if age >= limit:
                silent[role] = age
        return silent


def _learner_key(policy: str, rank: int) -> str:
    return f"learner {rank} of {policy}"


def stall_message(report: StallReport, timeout_s: float) -> str:
    """One line: no progress for how long, and who waits for what."""
    parts = [f"no env steps and no updates for {timeout_s:g} s"]
    for who, state in sorted(report.waiting.items()):
        parts.append(f"{who} waits for {state.what}")
    quiet = [
        f"worker {w} ({age:g} s)"
        for w, age in sorted(report.last_push_age_s.items())
        if age >= timeout_s / 2
    ]
    if quiet:
        parts.append(f"no push for a long time from {', '.join(quiet)} (stuck stepping its envs?)")
    if report.active_workers == 0:
        parts.append("no worker is alive")
    return "; ".join(parts)
