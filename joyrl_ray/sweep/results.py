"""What a sweep writes: ``sweep_results.csv`` (one row per trial), ``best_config.yaml``
(the best trial's whole run config, which ``python main.py --yaml`` runs as it is), and
``figs/trials.png`` (every trial's online evaluations, from its own ``results/evals.csv``).
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from joyrl_ray.config import RunConfig
from joyrl_ray.run.atomic_file import atomic_write_text
from joyrl_ray.sweep.checkpoints import RESTORED_PREFIX
from joyrl_ray.sweep.spec import SweepSpec
from joyrl_ray.sweep.trial import ENV_STEPS, FINISHED

FIELDS = (
    "trial_id",
    "overrides",
    "seed",
    "best_eval_return",
    "last_eval_return",
    "env_steps_to_threshold",
    "env_steps",
    "wall_time_s",
    "status",
    "stop_reason",
    "restarts",
    "restored_from",
    "best",
    "node",
    "task_dir",
)


@dataclass
class TrialRow:
    trial_id: str
    sampled: dict[str, Any]
    seed: int
    best_eval: float
    last_eval: float
    to_threshold: int | None
    env_steps: int
    wall_time_s: float
    status: str  # finished, stopped early (by the scheduler), error, interrupted
    stop_reason: str
    task_dir: Path | None
    error: str = ""
    restarts: str = ""  # roles its run restarted: "learner 1, workers 2"
    restored_from: str = ""  # PBT: the checkpoints of other trials it went on from
    node: str = ""  # where its process ran: "<ip> <node id's start>"
    best: bool = False
    evals: list[tuple[int, float]] = field(default_factory=list)

    @property
    def overrides_text(self) -> str:
        return " ".join(f"{k}={_value(v)}" for k, v in self.sampled.items())

    @classmethod
    def of(
        cls,
        result: Any,
        spec: SweepSpec,
        trials_dir: Path,
        budget: int,
        interrupted: bool = False,
        ended: set[str] | frozenset[str] = frozenset(),
    ) -> TrialRow:
        """The row of Tune's ``result``; ``interrupted``: the sweep was stopped by a signal,
        so a trial not in ``ended`` was cut short (a resume goes on with it)."""
        config = dict(result.config or {})
        seed = int(config.pop("general_cfg.seed", spec.seeds[0]))
        trial_id = _trial_id_of(Path(result.path).name)
        metrics = result.metrics or {}
        if metrics.get("trial_id") != trial_id:
            # A trial that failed on its restore, before its first report, shows the
            # result of the trial it was cloning (PBT copies it): none of it is its own.
            metrics = {}
        reported = metrics.get("task_dir")  # a restored trial has a task directory per run
        task = Path(reported) if reported else _task_dir(trials_dir / trial_id)
        evals = _evals(task)
        if result.error is not None:
            status, reason = "error", "error"
        elif metrics.get(FINISHED):
            status, reason = "finished", str(metrics[FINISHED])
        elif interrupted and trial_id not in ended:
            status, reason = "interrupted", "interrupted"
        else:
            status, reason = "stopped early", f"{spec.scheduler}: stopped"
        to_threshold = metrics.get("env_steps_to_threshold")
        return cls(
            trial_id=trial_id,
            sampled=config,
            seed=seed,
            best_eval=max((r for _, r in evals), default=math.nan),
            last_eval=evals[-1][1] if evals else math.nan,
            to_threshold=int(to_threshold)
            if to_threshold is not None and to_threshold <= budget
            else None,
            env_steps=int(metrics.get(ENV_STEPS, 0)),
            wall_time_s=float(metrics.get("time_total_s", metrics.get("wall_time_s", 0.0))),
            status=status,
            stop_reason=reason,
            task_dir=task,
            error=_error_line(result.error) if result.error is not None else "",
            restarts=_restarts(task),
            restored_from=str(metrics.get("restored_from") or ""),
            node=str(metrics.get("node") or ""),
            evals=evals,
        )

    def csv_row(self) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "overrides": self.overrides_text,
            "seed": self.seed,
            "best_eval_return": _number(self.best_eval),
            "last_eval_return": _number(self.last_eval),
            "env_steps_to_threshold": self.to_threshold if self.to_threshold is not None else "",
            "env_steps": self.env_steps,
            "wall_time_s": round(self.wall_time_s, 1),
            "status": self.status,
            "stop_reason": self.error or self.stop_reason,
            "restarts": self.restarts,
            "restored_from": self.restored_from,
            "best": int(self.best),
            "node": self.node,
            "task_dir": str(self.task_dir or ""),
        }


def _trial_id_of(folder: str) -> str:
    """The trial id in Tune's folder name of a trial (``run_trial_<id>_<index>_...``): the
    experiment's 5 hex digits and the trial's number, or a searcher's own 8 hex digits."""
    found = re.match(r"run_trial_([0-9a-f]{5}_\d{5}|[0-9a-f]{8})_\d+_", folder)
    return found.group(1) if found else folder


def _restarts(task: Path | None) -> str:
    """The roles the trial's run restarted (its summary's counts), '' when none or when the
    run left no summary (stopped by the scheduler)."""
    file = task / "results" / "summary.json" if task is not None else None
    if file is None or not file.is_file():
        return ""
    summary = json.loads(file.read_text())
    counts = [
        ("learner", summary.get("learner_restarts", 0)),
        ("workers", summary.get("worker_restarts", 0)),
    ]
    return ", ".join(f"{role} {n}" for role, n in counts if n)


def _error_line(error: BaseException) -> str:
    """What failed a trial, in one line: the trial's own exception (Ray wraps it with the
    actor's name and a colored traceback)."""
    cause = getattr(error, "cause", None)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(cause if cause is not None else error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _number(value: float) -> str | float:
    return "" if math.isnan(value) else round(value, 4)


def _task_dir(trial_root: Path) -> Path | None:
    """The trial's newest task directory (restored checkpoints beside them left out)."""
    found = [
        results.parent
        for results in (trial_root.glob("*/results") if trial_root.is_dir() else [])
        if not results.parent.name.startswith(RESTORED_PREFIX)
    ]
    return max(found, key=lambda task: task.stat().st_mtime_ns) if found else None


def _evals(task: Path | None) -> list[tuple[int, float]]:
    if task is None or not (task / "results" / "evals.csv").is_file():
        return []
    with (task / "results" / "evals.csv").open() as f:
        return [(int(r["env_steps"]), float(r["return_mean"])) for r in csv.DictReader(f)]


def pick_best(rows: list[TrialRow], spec: SweepSpec) -> TrialRow | None:
    ran = [r for r in rows if r.status != "error" and r.evals]
    if not ran:
        return None
    if spec.metric == "env_steps_to_threshold":
        solved = [r for r in ran if r.to_threshold is not None]
        if solved:
            return min(solved, key=lambda r: r.to_threshold or 0)
    return max(ran, key=lambda r: r.best_eval)


def write_outputs(root: Path, rows: list[TrialRow], spec: SweepSpec, cfg: RunConfig) -> None:
    best = pick_best(rows, spec)
    if best is not None:
        best.best = True
        config = (
            yaml.safe_load((best.task_dir / "config.yaml").read_text()) if best.task_dir else {}
        )
        config["general_cfg"]["tasks_dir"] = cfg.general.tasks_dir
        config["general_cfg"]["progress"] = cfg.general.progress
        atomic_write_text(yaml.safe_dump(config, sort_keys=False), root / "best_config.yaml")
    rows.sort(key=lambda r: r.trial_id)
    with (root / "sweep_results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.csv_row())
    _figure(root, rows, cfg)


def _figure(root: Path, rows: list[TrialRow], cfg: RunConfig) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (root / "figs").mkdir(exist_ok=True)
    fig, ax = plt.subplots(figsize=(8, 5))
    for row in rows:
        if not row.evals:
            continue
        steps, returns = zip(*row.evals, strict=True)
        style = "-" if row.status == "finished" else "--"
        ax.plot(steps, returns, style, linewidth=2.5 if row.best else 1.0, label=row.trial_id)
    if cfg.general.reward_threshold is not None:
        ax.axhline(cfg.general.reward_threshold, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("env steps")
    ax.set_ylabel("online eval return (mean)")
    ax.set_title(f"sweep: {cfg.general.algo_name} on {cfg.env.id} (dashed: stopped early)")
    if ax.get_legend_handles_labels()[0]:  # no trial evaluated: no legend to draw
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(root / "figs" / "trials.png")
    plt.close(fig)
