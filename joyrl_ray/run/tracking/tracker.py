"""What a tracker does for a run: the one interface MLflow and W&B are behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class Tracker(Protocol):
    """One tracked run. Its methods are called in order from one thread (never the driver
    loop's); any of them may raise, which ends the tracker's part in the run."""

    name: str  # as in general_cfg.tracking

    def start(self, run_name: str, params: dict[str, Any]) -> dict[str, Any]:
        """Open the run and log ``params``; returns what ``logs/tracking.json`` keeps."""
        ...

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        """One row of metrics at ``step`` env steps."""
        ...

    def log_artifact(self, path: Path) -> None:
        """A file of the task directory, at its path there."""
        ...

    def finish(self, status: str) -> None:
        """Close the run: FINISHED, FAILED or KILLED."""
        ...
