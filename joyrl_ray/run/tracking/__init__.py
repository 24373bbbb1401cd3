"""Experiment trackers (``general_cfg.tracking: [mlflow, wandb]``): each run as a tracked run.

A tracked run is named after its task directory and holds the merged config as params
(flattened to ``section.key``), every progress row and every evaluation as metrics
(``progress/<column>`` of ``results/progress.csv``, ``eval/<column>`` of
``results/evals.csv``, at env steps), and at the end ``config.yaml``,
``results/summary.json``, ``figs/*.png`` and ``models/best.pt`` / ``last.pt`` as
artifacts, at their paths in the task directory. ``logs/tracking.json`` records where each
tracker put the run, so a resumed run goes on with the same MLflow run.

Only the driver talks to a tracker, and never at the run's expense: each tracker is
called from a thread of its own through a bounded queue (:mod:`.calls`), so the driver
loop only enqueues; a tracker's first error is one warning line and the run goes on
without it; the end waits a bounded time for the trackers. The Recorder hands it each
row as it writes the csv files; the runner starts it once the task directory exists and
finishes it once ``summary.json`` and the figures are written.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from functools import partial
from numbers import Real
from pathlib import Path
from typing import Any

from joyrl_ray.config import RunConfig
from joyrl_ray.run.atomic_file import atomic_write_text
from joyrl_ray.run.task_dir import TaskDir
from joyrl_ray.run.tracking.calls import FINISH_WAIT_S, Call, TrackerCalls, status_of
from joyrl_ray.run.tracking.tracker import Tracker

RECORD_FILE = "tracking.json"  # in logs/: where each tracker put the run
#: MLflow's HTTP client retries a failed request 7 times with a doubling back-off (minutes
#: for a server that is down) and waits 120 s for an answer. Shorter here, unless the
#: environment sets them: a tracker that cannot be reached is found out in seconds.
MLFLOW_HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
}


def flat_params(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"general_cfg": {"seed": 1}}`` as ``{"general_cfg.seed": 1}`` (nested sections too)."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(flat_params(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def numeric(prefix: str, row: dict[str, Any]) -> dict[str, float]:
    """A csv row's numbers as metrics named ``<prefix>/<column>`` (text columns left out)."""
    return {
        f"{prefix}/{key}": float(value)
        for key, value in row.items()
        if isinstance(value, Real) and not isinstance(value, bool)
    }


def tracked_outputs(task: TaskDir) -> list[Path]:
    """The task directory's files that a tracked run gets at the end, those that exist."""
    files = [task.root / "config.yaml", task.results / "summary.json"]
    files += sorted(task.figs.glob("*.png"))
    files += [task.models / "best.pt", task.models / "last.pt"]
    return [path for path in files if path.is_file()]


class RunTracking:
    """The run's trackers, each behind its own :class:`TrackerCalls`; no-ops without any."""

    def __init__(self, task: TaskDir, trackers: list[Tracker], params: dict[str, Any]) -> None:
        self.task = task
        self.log = logging.getLogger(task.logger_name).info
        self.records: dict[str, dict[str, Any]] = {}
        self.records_lock = threading.Lock()
        self.calls = [TrackerCalls(tracker, self._warn) for tracker in trackers]
        run_name = task.root.name
        for calls in self.calls:
            calls.submit(partial(self._start, calls.tracker, run_name, params))

    def _start(self, tracker: Tracker, run_name: str, params: dict[str, Any]) -> None:
        self._remember(tracker.name, tracker.start(run_name, params))

    def _warn(self, line: str) -> None:
        print(f"warning: {line}", file=sys.stderr, flush=True)
        self.log(f"warning: {line}")

    def _remember(self, name: str, record: dict[str, Any]) -> None:
        self.log(f"tracking: {name} run {json.dumps(record)}")
        with self.records_lock:
            self.records[name] = record
            text = json.dumps(self.records, indent=2)
            atomic_write_text(text, self.task.logs / RECORD_FILE)

    def log_metrics(self, prefix: str, row: dict[str, Any]) -> None:
        """One csv row (progress or eval) as metrics at its env steps; never blocks."""
        if not self.calls:
            return
        metrics, step = numeric(prefix, row), int(row["env_steps"])
        for calls in self.calls:
            calls.submit(partial(calls.tracker.log_metrics, metrics, step))

    def finish(self, exit_code: int) -> None:
        """The outputs as artifacts, then the run's end (FINISHED, FAILED or KILLED, from
        the exit code); waits at most :data:`~.calls.FINISH_WAIT_S`, all trackers together."""
        if not self.calls:
            return
        status = status_of(exit_code)
        files = tracked_outputs(self.task)
        deadline = time.monotonic() + FINISH_WAIT_S
        for calls in self.calls:
            tracker = calls.tracker
            final: list[Call] = [partial(tracker.log_artifact, path) for path in files]
            calls.end([*final, partial(tracker.finish, status)], deadline)
        for calls in self.calls:
            calls.wait(deadline)


def previous_records(resumed_from: Path | None) -> dict[str, Any]:
    """What the run being resumed recorded in its ``logs/tracking.json`` ({} if nothing)."""
    if resumed_from is None:
        return {}
    try:
        records = json.loads((resumed_from / "logs" / RECORD_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return records if isinstance(records, dict) else {}


def make_tracker(name: str, cfg: RunConfig, task: TaskDir, previous: dict[str, Any]) -> Tracker:
    """A tracker by its ``general_cfg.tracking`` name; its library loads when it starts."""
    general = cfg.general
    if name == "mlflow":
        from joyrl_ray.run.tracking.mlflow_tracker import MlflowTracker

        return MlflowTracker(
            uri=general.tracking_uri or None,
            experiment=general.tracking_project or None,
            task_root=task.root,
            previous=previous,
        )
    from joyrl_ray.run.tracking.wandb_tracker import WandbTracker

    return WandbTracker(project=general.tracking_project or None, task_root=task.root)


def start_tracking(cfg: RunConfig, task: TaskDir, resumed_from: Path | None) -> RunTracking:
    """Start the trackers that ``general_cfg.tracking`` names (in their threads)."""
    names = list(cfg.general.tracking)
    if "mlflow" in names:
        for key, value in MLFLOW_HTTP_DEFAULTS.items():
            os.environ.setdefault(key, value)
    previous = previous_records(resumed_from)
    trackers = [make_tracker(name, cfg, task, previous.get(name) or {}) for name in names]
    return RunTracking(task, trackers, flat_params(cfg.to_dict()))


__all__ = ["RunTracking", "start_tracking"]
