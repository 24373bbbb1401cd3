"""The Recorder: turns the coordinator's reports into logs, csv, tensorboard and progress.

It lives in the driver process: the driver drains the coordinator's reports every half
second and hands them here (and the evaluator's results), so no actor ever writes the
run's logs. The progress line shows what limits the run (``limit``: worker_bound,
learner_bound or balanced, over the last few seconds) and the learner's rate in the unit an
update is for the run's data flow (its ``update_unit``: a gradient step off-policy, a whole
rollout iteration on-policy; ``model_save_fre`` counts the same unit).
"""

from __future__ import annotations

import csv
import json
import logging
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from envs.vector import TIMED_OUT
from joyrl_ray.roles.evaluator.results import EvalResult
from joyrl_ray.run.atomic_file import atomic_write_text
from joyrl_ray.run.bottleneck import difference_l, difference_w, judge
from joyrl_ray.run.task_dir import TaskDir
from joyrl_ray.run.tracking import RunTracking
from joyrl_ray.run.trajectories import TrajectoryWriter
from joyrl_ray.wire.messages import LearnerTimes, Reports, WorkerTimes

# weights_version: the weights the episode was acted with (1 = the first published; on
# Ray a worker can be a few versions behind the learner, which this shows per episode).
EPISODE_FIELDS = (
    "episode",
    "env_steps",
    "return",
    "length",
    "worker_id",
    "wall_time_s",
    "weights_version",
)
# One row per drain of the DataServer (every half second): the run's counters over time.
PROGRESS_FIELDS = (
    "wall_time_s",
    "env_steps",
    "episodes",
    "updates",
    "env_steps_per_s",
    "updates_per_s",
    "limit",
    "workers",  # in the run at that time (it changes when workers are shed or added)
)
EVAL_FIELDS = (
    "env_steps",
    "updates",
    "wall_time_s",
    "return_mean",
    "return_std",
    "return_min",
    "return_max",
    "length_mean",
    "episodes",
    "episodes_failed",
)
# A multi-agent run's rows say whose they are: the agent's policy (and the agent) in
# episodes.csv; the policy evaluated, its opponent and the game's outcomes in evals.csv.
AGENT_EPISODE_FIELDS = (*EPISODE_FIELDS, "policy", "agent")
AGENT_EVAL_FIELDS = (
    "policy",
    "opponent",
    *EVAL_FIELDS[:7],
    "win_rate",
    "draw_rate",
    "loss_rate",
    "illegal_actions",
    "episodes",
)


def _open_csv(path: Path, fields: tuple[str, ...]) -> tuple[Any, csv.DictWriter]:
    new = not path.exists()
    f = path.open("a", newline="")
    writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
    if new:
        writer.writeheader()
    return f, writer


def make_logger(task: TaskDir) -> logging.Logger:
    logger = logging.getLogger(task.logger_name)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    handler = logging.FileHandler(task.logs / "log.txt")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return logger


class Recorder:
    """Writes one run's episode and learner reports; keeps the eval history for the summary."""

    def __init__(
        self,
        task: TaskDir,
        *,
        started_at: float,
        total_env_steps: int,
        total_episodes: int,
        progress: bool,
        total_updates: int = -1,
        collect_traj: bool,
        counters: dict[str, int] | None = None,
        history: dict[str, Any] | None = None,
        n_workers: int = 1,
        n_learners: int = 1,
        update_unit: str = "updates",
        on_eval: Callable[[dict[str, Any], Path], None] | None = None,
        tracking: RunTracking | None = None,
        policies: list[str] | None = None,
    ) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.task = task
        self.policies = policies  # a multi-agent run's learning policies
        self.on_eval = on_eval  # sees each evaluation's row once written, and the task root
        self.tracking = tracking  # gets each progress and evaluation row once written
        self.started_at = started_at
        self.logger = make_logger(task)
        self.tb = SummaryWriter(log_dir=str(task.logs))
        agents = policies is not None
        self.episode_file, self.episode_csv = _open_csv(
            task.results / "episodes.csv", AGENT_EPISODE_FIELDS if agents else EPISODE_FIELDS
        )
        self.eval_fields = AGENT_EVAL_FIELDS if agents else EVAL_FIELDS
        self.eval_file, self.eval_csv = _open_csv(task.results / "evals.csv", self.eval_fields)
        # A multi-agent run's progress rows add each learning policy's updates and its
        # agents' recent return.
        self.progress_fields = PROGRESS_FIELDS + tuple(
            f"{column}/{p}" for p in policies or [] for column in ("updates", "return_recent")
        )
        self.policy_updates = dict.fromkeys(policies or [], 0)
        self.progress_file, self.progress_csv = _open_csv(
            task.results / "progress.csv", self.progress_fields
        )
        self.trajs = TrajectoryWriter(task.results) if collect_traj else None
        history = history or {}
        self.episode_rows: list[dict[str, Any]] = list(history.get("episodes", []))
        self.eval_history: list[dict[str, Any]] = list(history.get("evals", []))
        for row in self.episode_rows:
            self.episode_csv.writerow(row)
        for row in self.eval_history:
            self.eval_csv.writerow(row)
        self.recent_returns: deque[float] = deque(
            (r["return"] for r in self.episode_rows[-20:]), maxlen=20
        )
        # A multi-agent run's, by policy: its agents' recent returns.
        self.recent_by_policy: dict[str, deque[float]] = {
            p: deque(maxlen=20) for p in policies or []
        }
        self.n_workers, self.n_learners = n_workers, n_learners
        self.update_unit = update_unit  # the progress line's name for an update
        self.env_errors = 0
        self.env_timeouts = 0  # of them, env calls that took longer than their timeout
        self.first_env_error: str | None = None
        self.worker_times, self.learner_times = WorkerTimes(), LearnerTimes()
        self.verdict_mark = (time.monotonic(), WorkerTimes(), LearnerTimes())
        self.current_verdict = "-"
        self.counters = dict(counters or {"env_steps": 0, "episodes": 0, "updates": 0})
        self.start_counters = dict(self.counters)
        self.episodes_this_run = 0
        self.rate_mark = (time.monotonic(), self.counters["env_steps"], self.counters["updates"])
        self.rates = {"env_steps_per_s": 0.0, "updates_per_s": 0.0}
        # What the bar counts: env steps to a limit, else updates (a run with no workers),
        # else episodes (to a limit, or open-ended).
        self.bar_counter, total, unit = "episodes", total_episodes, "ep"
        if total_env_steps > 0:
            self.bar_counter, total, unit = "env_steps", total_env_steps, "step"
        elif total_updates > 0:
            self.bar_counter, total, unit = "updates", total_updates, update_unit
        self.bar = tqdm(
            total=total if total > 0 else None,
            initial=self.counters[self.bar_counter],
            disable=not progress,
            unit=unit,
            dynamic_ncols=True,
            mininterval=0.5,
        )

    def elapsed(self) -> float:
        return time.time() - self.started_at

    def log(self, message: str) -> None:
        self.logger.info(message)

    def note(self, message: str) -> None:
        """A line for the console that does not break the progress bar."""
        if self.bar.disable:
            print(message, flush=True)
        else:
            tqdm.write(message)

    def _tag(self, group: str, policy: str) -> str:
        """A tensorboard tag's group: a multi-agent run's has its policy's name in it."""
        return group if self.policies is None else f"{group}/{policy}"

    def ingest(self, reports: Reports) -> None:
        """Record one drain of the DataServer's reports."""
        for ep in reports.episodes:
            row: dict[str, Any] = {
                "episode": len(self.episode_rows) + 1,
                "env_steps": ep.env_steps,
                "return": ep.ret,
                "length": ep.length,
                "worker_id": ep.worker_id,
                "wall_time_s": round(self.elapsed(), 3),
                "weights_version": ep.weights_version,
            }
            if self.policies is not None:
                row.update(policy=ep.policy, agent=ep.agent)
                self.recent_by_policy.setdefault(ep.policy, deque(maxlen=20)).append(ep.ret)
            self.episode_rows.append(row)
            self.episode_csv.writerow(row)
            self.episodes_this_run += 1
            self.recent_returns.append(ep.ret)
            tag = self._tag("episode", ep.policy)
            self.tb.add_scalar(f"{tag}/return", ep.ret, ep.env_steps)
            self.tb.add_scalar(f"{tag}/length", ep.length, ep.env_steps)
            for key, value in ep.explore.items():  # the policy's exploration_stats (epsilon, ...)
                self.tb.add_scalar(f"{self._tag('explore', ep.policy)}/{key}", value, ep.env_steps)
        for report in reports.learner:
            if report.policy in self.policy_updates:
                self.policy_updates[report.policy] = max(
                    self.policy_updates[report.policy], report.updates
                )
            tag = self._tag("learner", report.policy)
            for key, value in report.metrics.items():
                self.tb.add_scalar(f"{tag}/{key}", value, report.updates)
        for text in reports.env_errors:
            self.env_errors += 1
            self.env_timeouts += TIMED_OUT in text
            if self.env_errors == 1:
                self.first_env_error = text
                self.log(f"env error (the env is rebuilt and the episode dropped): {text}")
        if self.trajs is not None:
            self.trajs.extend(reports.trajectories)
        self.worker_times, self.learner_times = reports.worker_times, reports.learner_times
        self._update_progress(vars(reports.counters), reports.workers)
        self.episode_file.flush()
        self.progress_file.flush()

    def best_eval(self, policy: str) -> float:
        """The best mean return of ``policy``'s evaluations so far (its headline ones)."""
        rows = [e for e in self.eval_history if e.get("policy", policy) == policy]
        first = rows[0].get("opponent") if rows else None
        headline = [e for e in rows if e.get("opponent") == first]
        return max((float(e["return_mean"]) for e in headline), default=-np.inf)

    def record_eval(self, result: EvalResult) -> None:
        if self.policies is not None:
            self._record_game_eval(result)
            return
        row = {
            "env_steps": result.env_steps,
            "updates": result.updates,
            "wall_time_s": round(self.elapsed(), 3),
            **result.returns,
            "episodes_failed": result.episodes_failed,
        }
        self.eval_history.append({k: row[k] for k in EVAL_FIELDS if k in row})
        self.eval_csv.writerow(row)
        self.eval_file.flush()
        if self.tracking is not None:
            self.tracking.log_metrics("eval", self.eval_history[-1])
        for key in ("return_mean", "return_std", "return_min", "return_max", "length_mean"):
            if key in row:
                self.tb.add_scalar(f"eval/{key}", row[key], result.env_steps)
        failed = ""
        if result.episodes_failed:
            failed = (
                f" ({result.episodes_failed} episodes dropped by {result.env_errors} env errors "
                f"and replaced; the last: {result.last_env_error})"
            )
        self.log(
            f"eval at {result.env_steps} env steps / {result.updates} updates: "
            f"return {row['return_mean']:.1f} +- {row['return_std']:.1f}{failed}"
        )
        if self.on_eval is not None:
            self.on_eval(dict(self.eval_history[-1]), self.task.root)

    def _record_game_eval(self, result: EvalResult) -> None:
        """A multi-agent run's evaluation: a row per opponent (its headline first)."""
        policy = result.policy
        for opponent, figures in result.opponents.items():
            row = {
                "policy": policy,
                "opponent": opponent,
                "env_steps": result.env_steps,
                "updates": result.updates,
                "wall_time_s": round(self.elapsed(), 3),
                **{k: v for k, v in figures.items() if k in self.eval_fields},
            }
            self.eval_history.append(row)
            self.eval_csv.writerow(row)
            if self.tracking is not None:
                self.tracking.log_metrics("eval", row)
            for key in ("return_mean", "win_rate", "draw_rate", "loss_rate"):
                if key in row:
                    self.tb.add_scalar(
                        f"eval/{policy}/{opponent}/{key}", row[key], result.env_steps
                    )
            outcome = ""
            if "win_rate" in figures:
                outcome = (
                    f", won {figures['win_rate']:.0%} drew {figures['draw_rate']:.0%} "
                    f"lost {figures['loss_rate']:.0%}"
                )
            self.log(
                f"eval of {policy} against {opponent} at {result.env_steps} env steps / "
                f"{result.updates} updates: return {figures.get('return_mean', float('nan')):.2f}"
                f"{outcome}"
            )
        self.eval_file.flush()
        if self.on_eval is not None:
            self.on_eval(dict(self.eval_history[-len(result.opponents)]), self.task.root)

    def verdict(self) -> str:
        """What limits the run over the last stretch (for the progress line)."""
        now = time.monotonic()
        t_mark, workers, learners = self.verdict_mark
        if now - t_mark >= 5.0:
            self.current_verdict = judge(
                difference_w(self.worker_times, workers),
                difference_l(self.learner_times, learners),
                wall_s=now - t_mark,
                n_workers=self.n_workers,
                n_learners=self.n_learners,
            ).verdict
            self.verdict_mark = (now, self.worker_times, self.learner_times)
        return self.current_verdict

    def _update_progress(self, counters: dict[str, int], workers: int) -> None:
        now = time.monotonic()
        t_mark, steps_mark, updates_mark = self.rate_mark
        if now - t_mark >= 2.0:
            self.rates = {
                "env_steps_per_s": (counters["env_steps"] - steps_mark) / (now - t_mark),
                "updates_per_s": (counters["updates"] - updates_mark) / (now - t_mark),
            }
            self.rate_mark = (now, counters["env_steps"], counters["updates"])
            self.tb.add_scalar(
                "speed/env_steps_per_s", self.rates["env_steps_per_s"], counters["env_steps"]
            )
            self.tb.add_scalar(
                "speed/updates_per_s", self.rates["updates_per_s"], counters["env_steps"]
            )
        advance = counters[self.bar_counter] - self.counters[self.bar_counter]
        self.counters = dict(counters)
        recent = float(np.mean(self.recent_returns)) if self.recent_returns else float("nan")
        last_eval = self.eval_history[-1]["return_mean"] if self.eval_history else float("nan")
        limit = self.verdict()
        returns = {"ret": f"{recent:.1f}"}
        if self.policies is not None:  # each policy's agents' recent return
            returns = {
                f"ret[{p}]": f"{np.mean(r) if r else float('nan'):.2f}"
                for p, r in self.recent_by_policy.items()
            }
        self.bar.set_postfix(
            {
                "ep": counters["episodes"],
                **returns,
                "eval": f"{last_eval:.1f}",
                "sps": f"{self.rates['env_steps_per_s']:.0f}",
                f"{self.update_unit}/s": f"{self.rates['updates_per_s']:.0f}",
                "limit": limit,
                "workers": workers,
            },
            refresh=False,
        )
        self.bar.update(max(advance, 0))
        row = {
            "wall_time_s": round(self.elapsed(), 3),
            **counters,
            "env_steps_per_s": round(self.rates["env_steps_per_s"], 1),
            "updates_per_s": round(self.rates["updates_per_s"], 1),
            "limit": limit,
            "workers": workers,
        }
        for policy, updates in self.policy_updates.items():
            its_returns = self.recent_by_policy.get(policy)
            row[f"updates/{policy}"] = updates
            row[f"return_recent/{policy}"] = (
                round(float(np.mean(its_returns)), 3) if its_returns else ""
            )
        self.progress_csv.writerow(row)
        if self.tracking is not None:
            self.tracking.log_metrics("progress", {k: row[k] for k in self.progress_fields})

    def write_summary(self, summary: dict[str, Any]) -> Path:
        path = self.task.results / "summary.json"
        atomic_write_text(json.dumps(summary, indent=2, default=float), path)
        return path

    def run_rates(self) -> dict[str, float]:
        """Env steps and updates per second over this run (not counting a resumed past)."""
        elapsed = max(self.elapsed(), 1e-9)
        return {
            "env_steps_per_s": (self.counters["env_steps"] - self.start_counters["env_steps"])
            / elapsed,
            "updates_per_s": (self.counters["updates"] - self.start_counters["updates"]) / elapsed,
        }

    def close(self) -> None:
        rates = self.run_rates()
        for key, value in rates.items():
            self.tb.add_scalar(f"speed/{key}_run_mean", value, self.counters["env_steps"])
        self.bar.close()
        if self.trajs is not None:
            self.trajs.close()
        self.tb.close()
        self.episode_file.close()
        self.progress_file.close()
        self.eval_file.close()
        for handler in list(self.logger.handlers):
            handler.close()
            self.logger.removeHandler(handler)
