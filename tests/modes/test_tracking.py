"""Experiment tracking (``general_cfg.tracking``): real runs logged to a real MLflow store and a
real offline W&B run, read back with MLflow's own client and from W&B's own run file.

One short training logs to both trackers (each test reads its tracker's side of it); a
resume of it goes on with the same MLflow run; a run whose MLflow server cannot be reached
gives one warning line and exits 0 with all its outputs.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any

import pytest

from joyrl_ray.run.runner import RunResult, run
from tests.support.procs import descendants
from tests.support.runs import make_cfg, needs_extra, run_main
from tests.support.wandb_files import read_offline_run

# A tiny DQN run in one process: two checkpoints, each evaluated.
SHORT_RUN = (
    "general_cfg.mp_backend=single",
    "general_cfg.seed=5",
    "general_cfg.max_env_steps=800",
    "general_cfg.model_save_fre=100",
    "general_cfg.online_eval_episode=2",
    "algo_cfg.learn_start=300",
    "algo_cfg.updates_per_step=0.5",
    "algo_cfg.batch_size=32",
    "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [32], activation: relu}]",
)
PROJECT = "joyrl-tests"
OUTPUTS = ("config.yaml", "results/summary.json", "figs/rewards.png", "models/best.pt")


def csv_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def pairs(rows: list[dict[str, Any]], x: str, y: str) -> list[tuple[int, float]]:
    """(x, y) of each row, as (int, float), sorted: the same points whatever their order."""
    return sorted((int(float(row[x])), float(row[y])) for row in rows)


def record(task_dir: Path, tracker: str) -> dict[str, Any]:
    return json.loads((task_dir / "logs" / "tracking.json").read_text())[tracker]


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A local sqlite store whose experiment keeps its artifacts beside it (MLflow's default
    for an experiment it creates is ./mlruns under the working directory: the project's)."""
    needs_extra("mlflow", "requirements-tracking.txt")
    from mlflow import MlflowClient

    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    MlflowClient(uri).create_experiment(PROJECT, artifact_location=str(folder / "artifacts"))
    return uri


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory, mlflow_uri: str) -> RunResult:
    """The short run, logged to MLflow (a local sqlite store) and W&B (offline)."""
    needs_extra("wandb", "requirements-tracking.txt")
    tasks = tmp_path_factory.mktemp("tracked_tasks")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("WANDB_MODE", "offline")
        env.setenv("WANDB_DIR", str(tmp_path_factory.mktemp("wandb")))
        cfg = make_cfg(
            tasks,
            *SHORT_RUN,
            "general_cfg.tracking=[mlflow, wandb]",
            f"general_cfg.tracking_uri={mlflow_uri}",
            f"general_cfg.tracking_project={PROJECT}",
        )
        result = run(cfg)
    assert result.exit_code == 0, result.summary.get("error")
    return result


def mlflow_artifacts(client: Any, run_id: str, folder: str | None = None) -> list[str]:
    found = []
    for item in client.list_artifacts(run_id, folder):
        found += mlflow_artifacts(client, run_id, item.path) if item.is_dir else [item.path]
    return found


def test_mlflow_run_holds_params_metrics_at_env_steps_and_outputs(
    tracked: RunResult, mlflow_uri: str
) -> None:
    from mlflow import MlflowClient
    from mlflow.artifacts import download_artifacts

    task = tracked.task_dir
    client = MlflowClient(mlflow_uri)
    run_id = record(task, "mlflow")["run_id"]
    mlrun = client.get_run(run_id)
    assert mlrun.info.run_name == task.name
    assert mlrun.info.status == "FINISHED"
    assert client.get_experiment(mlrun.info.experiment_id).name == PROJECT
    params = mlrun.data.params
    assert params["general_cfg.algo_name"] == "DQN"
    assert params["env_cfg.id"] == "CartPole-v1"
    assert params["general_cfg.max_env_steps"] == "800"
    assert params["general_cfg.fault_injection.env_error_rate"] == "0.0"  # nested: flattened

    progress = csv_rows(task / "results" / "progress.csv")
    evals = csv_rows(task / "results" / "evals.csv")
    assert progress and len(evals) >= 2
    for prefix, rows, column in (
        ("progress", progress, "episodes"),
        ("progress", progress, "updates"),
        ("eval", evals, "return_mean"),
        ("eval", evals, "updates"),
    ):
        history = client.get_metric_history(run_id, f"{prefix}/{column}")
        assert sorted((m.step, m.value) for m in history) == pairs(rows, "env_steps", column), (
            f"{prefix}/{column}: one point per csv row, at the row's env steps"
        )

    artifacts = mlflow_artifacts(client, run_id)
    assert set(OUTPUTS) | {"models/last.pt"} <= set(artifacts), artifacts
    summary = download_artifacts(
        run_id=run_id, artifact_path="results/summary.json", tracking_uri=mlflow_uri
    )
    # the summary's last version, written after Ray's teardown
    assert json.loads(Path(summary).read_text()) == tracked.summary


def test_wandb_offline_run_holds_config_history_at_env_steps_and_files(
    tracked: RunResult,
) -> None:
    task = tracked.task_dir
    saved = record(task, "wandb")
    assert saved["mode"] == "offline"
    run_dir = Path(saved["run_dir"])
    wandb_run = read_offline_run(run_dir)
    assert wandb_run.run_id == saved["run_id"]
    assert wandb_run.name == task.name
    assert wandb_run.project == PROJECT
    assert wandb_run.config["general_cfg.algo_name"] == "DQN"
    assert wandb_run.config["general_cfg.max_env_steps"] == 800
    assert wandb_run.config["algo_cfg.value_layers"][0]["layer_dim"] == [32]

    # each section over its own env steps (W&B's own step only grows; evaluations lag)
    assert wandb_run.step_metrics == {
        "progress/*": "progress/env_steps",
        "eval/*": "eval/env_steps",
    }
    for prefix, name in (("progress", "progress.csv"), ("eval", "evals.csv")):
        rows = csv_rows(task / "results" / name)
        logged = [row for row in wandb_run.history if f"{prefix}/env_steps" in row]
        column = "episodes" if prefix == "progress" else "return_mean"
        assert pairs(logged, f"{prefix}/env_steps", f"{prefix}/{column}") == pairs(
            rows, "env_steps", column
        ), prefix

    expected = {f"task_dir/{path}" for path in (*OUTPUTS, "models/last.pt")}
    assert expected <= set(wandb_run.files), wandb_run.files
    copy = run_dir / "files" / "task_dir" / "results" / "summary.json"
    assert json.loads(copy.read_text()) == tracked.summary
    assert wandb_run.exit_code == 0
    left = [cmd for cmd in descendants(os.getpid()).values() if "wandb" in cmd]
    assert not left, f"W&B's service outlived the run: {left}"


def test_resume_goes_on_with_the_same_mlflow_run(
    tracked: RunResult, mlflow_uri: str, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    first = record(tracked.task_dir, "mlflow")
    cfg = make_cfg(
        tmp_path,
        *SHORT_RUN,
        "general_cfg.max_env_steps=1300",
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={tracked.task_dir}",
        "general_cfg.tracking=[mlflow]",
        f"general_cfg.tracking_uri={mlflow_uri}",
        f"general_cfg.tracking_project={PROJECT}",
    )
    resumed = run(cfg)
    assert resumed.exit_code == 0, resumed.summary.get("error")
    again = record(resumed.task_dir, "mlflow")
    assert again["run_id"] == first["run_id"] and again["continued"] is True
    client = MlflowClient(mlflow_uri)
    mlrun = client.get_run(first["run_id"])
    assert mlrun.info.status == "FINISHED"
    assert mlrun.data.tags["joyrl.task_dir"] == str(resumed.task_dir)
    assert mlrun.data.params["general_cfg.max_env_steps"] == "800"  # params keep their first
    steps = [m.step for m in client.get_metric_history(first["run_id"], "progress/env_steps")]
    assert max(steps) == resumed.summary["env_steps"] > tracked.summary["env_steps"]


def test_an_unreachable_tracking_server_is_one_warning_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    needs_extra("mlflow", "requirements-tracking.txt")
    tasks = tmp_path / "tasks"
    result = run_main(
        *SHORT_RUN,
        "general_cfg.max_env_steps=600",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
        "general_cfg.tracking=[mlflow]",
        "general_cfg.tracking_uri=http://127.0.0.1:9",  # nothing listens there
        timeout=300,
    )
    shown = f"exit {result.returncode}\nstderr: {result.stderr[-3000:]}"
    assert result.returncode == 0, shown
    assert "Traceback" not in result.stderr, shown
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, shown
    assert warnings[0].startswith("warning: tracking: mlflow failed ("), shown
    assert "127.0.0.1:9" in warnings[0], shown
    assert warnings[0].endswith("the run goes on without it"), shown
    (task,) = tasks.iterdir()
    assert result.stdout.strip().splitlines()[-1] == str(task)
    for path in (*OUTPUTS, "models/last.pt", "results/progress.csv", "results/evals.csv"):
        assert (task / path).is_file(), path
    assert json.loads((task / "results" / "summary.json").read_text())["stop_reason"] == (
        "max_env_steps"
    )
    assert not (task / "logs" / "tracking.json").exists()
