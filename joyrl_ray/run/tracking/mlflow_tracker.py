"""MLflow: one MLflow run per run, through ``MlflowClient`` (no process-wide active run, so
several runs in one process, as tests and sweeps have, never mix).

Where: ``general_cfg.tracking_uri`` or else ``MLFLOW_TRACKING_URI`` or else MLflow's own
default (``sqlite:///mlflow.db`` in the working directory); the experiment
``general_cfg.tracking_project`` or else ``MLFLOW_EXPERIMENT_NAME`` (created when missing)
or else ``MLFLOW_EXPERIMENT_ID`` or else MLflow's ``Default``. A key set in the config wins
over the environment, as ``mlflow.set_tracking_uri`` / ``set_experiment`` do in code.

A resumed run goes on with the MLflow run of the run it resumes (its ``logs/tracking.json``)
when that run is still there under the same tracking URI: its metrics continue from the
checkpoint's env steps, its params keep their first values (MLflow's params cannot change;
the new ones are added), and its artifacts are replaced by the resumed run's.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

PARAM_VALUE_CHARS = 6000  # MLflow's limit on a param's value
PARAMS_PER_BATCH = 100  # MLflow's limit on params in one log_batch
TASK_DIR_TAG = "joyrl.task_dir"


def param_text(value: Any) -> str:
    """A config value as a param's text: strings as they are, the rest as json."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:PARAM_VALUE_CHARS]


class MlflowTracker:
    """One MLflow run (see the module's docstring for where it goes)."""

    name = "mlflow"

    def __init__(
        self,
        *,
        uri: str | None,
        experiment: str | None,
        task_root: Path,
        previous: dict[str, Any],
    ) -> None:
        self.uri = uri
        self.experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or None
        self.task_root = task_root
        self.previous = previous  # what the resumed run recorded, {} if none
        self.client: Any = None
        self.run_id = ""

    def start(self, run_name: str, params: dict[str, Any]) -> dict[str, Any]:
        import mlflow
        from mlflow import MlflowClient
        from mlflow.entities import Param

        uri = self.uri or mlflow.get_tracking_uri()
        self.client = MlflowClient(uri)
        tags = {TASK_DIR_TAG: str(self.task_root)}
        logged = self._resumed(uri)
        continued = logged is not None
        if logged is None:
            run = self.client.create_run(self._experiment_id(), run_name=run_name, tags=tags)
            self.run_id, logged = run.info.run_id, {}
        else:
            self.client.set_tag(self.run_id, TASK_DIR_TAG, str(self.task_root))
        new = [Param(key, param_text(value)) for key, value in params.items() if key not in logged]
        for i in range(0, len(new), PARAMS_PER_BATCH):
            self.client.log_batch(self.run_id, params=new[i : i + PARAMS_PER_BATCH])
        return {"tracking_uri": uri, "run_id": self.run_id, "continued": continued}

    def _resumed(self, uri: str) -> dict[str, str] | None:
        """The params of the resumed run's MLflow run, now running again; None to start one."""
        run_id = self.previous.get("run_id")
        if not run_id or self.previous.get("tracking_uri") != uri:
            return None
        from mlflow.exceptions import MlflowException

        try:
            run = self.client.get_run(run_id)
        except MlflowException:  # deleted for good; a store that cannot be reached fails next
            return None
        if run.info.lifecycle_stage != "active":
            return None
        self.run_id = run_id
        self.client.update_run(run_id, status="RUNNING")
        return dict(run.data.params)

    def _experiment_id(self) -> str:
        if self.experiment is None:
            return os.environ.get("MLFLOW_EXPERIMENT_ID") or "0"  # "0": MLflow's Default
        from mlflow.exceptions import MlflowException

        found = self.client.get_experiment_by_name(self.experiment)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self.client.create_experiment(self.experiment))
        except MlflowException:  # made meanwhile by another run (a sweep's trials start together)
            found = self.client.get_experiment_by_name(self.experiment)
            if found is None:
                raise
            return str(found.experiment_id)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        rows = [Metric(key, value, now, step) for key, value in metrics.items()]
        self.client.log_batch(self.run_id, metrics=rows)

    def log_artifact(self, path: Path) -> None:
        folder = path.parent.relative_to(self.task_root).as_posix()
        self.client.log_artifact(self.run_id, str(path), None if folder == "." else folder)

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status)
