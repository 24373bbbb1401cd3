"""One real run on a local Ray (ray_address=null, 2 workers), checked from the outside.

The run's own Ray is started and stopped by main.py; afterwards none of its processes
(raylet, gcs_server, ``ray::`` workers) may be left. Its summary must show the
update-to-data ratio that ``algo_cfg.updates_per_step`` asks for and consistent counts.
"""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runs import TINY_DQN
from tests.support.procs import TrackedRun, task_dirs, wait_gone

# Checks that its run's processes are gone seconds after its exit: after the parallel part in CI.
pytestmark = pytest.mark.alone

LEARN_START = 200
RATIO = 1.0
LAG_TOLERANCE = 64
MAX_ENV_STEPS = 2000
N_WORKERS = 2
CHUNK = 64
PUBLISH_EVERY = 10


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    tasks = tmp_path_factory.mktemp("local_run")
    run = TrackedRun(
        (
            "general_cfg.mp_backend=ray",
            f"general_cfg.n_workers={N_WORKERS}",
            f"general_cfg.max_env_steps={MAX_ENV_STEPS}",
            f"general_cfg.worker_chunk_steps={CHUNK}",
            f"general_cfg.learner_lag_tolerance={LAG_TOLERANCE}",
            f"general_cfg.weights_publish_every={PUBLISH_EVERY}",
            "general_cfg.online_eval=false",
            "general_cfg.model_save_fre=100000",
            "general_cfg.save_fig=false",
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tasks}",
            f"algo_cfg.learn_start={LEARN_START}",
            f"algo_cfg.updates_per_step={RATIO}",
            "algo_cfg.n_step=1",
            *TINY_DQN[:2],  # a small network: the run shows the runtime's plumbing
        ),
        log_dir=tasks,
    )
    try:
        code = run.wait(timeout=420)
        assert code is not None, f"main.py did not finish in 420 s\n{run.stderr[-3000:]}"
        (task,) = task_dirs(tasks)
        summary = json.loads((task / "results" / "summary.json").read_text())
        yield run, code, task, summary
    finally:
        run.kill()


def test_run_finishes_and_reports(local_run):
    run, code, task, summary = local_run
    assert code == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == str(task)
    assert "train DQN on CartPole-v1" in lines[-2] and "(max_env_steps)" in lines[-2]
    assert summary["stop_reason"] == "max_env_steps"
    assert summary["backend"] == "ray" and summary["n_workers"] == N_WORKERS
    assert summary["data_flow"] == "replay"  # DQN's: workers insert into replay shards


def test_no_process_of_the_run_is_left(local_run):
    run, _, _, _ = local_run
    started = {p: c for p, c in run.seen.items() if c}
    assert any("raylet" in c for c in started.values()), "the run's Ray was not observed"
    assert any(c.startswith("ray::Worker") for c in started.values()), started
    left = wait_gone(started, timeout=15)
    assert not left, f"processes of the finished run still alive: {left}"
    assert not run.leftovers()  # none escaped the tree we recorded


def test_update_to_data_ratio_is_kept(local_run):
    _, _, _, summary = local_run
    env_steps, updates = summary["env_steps"], summary["updates"]
    allowed = int((env_steps - LEARN_START + 1) * RATIO)
    # While collecting, workers are throttled when the learner trails by more than the
    # tolerance (plus the pushes in flight); at the step limit it catches up with the ratio.
    assert allowed - 8 <= updates <= allowed, (updates, allowed)
    assert abs(updates / (env_steps - LEARN_START) - RATIO) < 0.02


def test_summary_accounting_is_consistent(local_run):
    _, _, _, summary = local_run
    collected = summary["transitions_collected"]
    stored, dropped = summary["transitions_stored"], summary["transitions_dropped"]
    # n_step=1 off-policy: each step is one transition; those pushed after the stop are dropped.
    assert set(dropped) <= {"after_stop"}, dropped
    assert collected == stored + dropped.get("after_stop", 0)
    assert stored == summary["env_steps"] >= MAX_ENV_STEPS
    assert summary["env_steps"] < MAX_ENV_STEPS + N_WORKERS * CHUNK
    (learner,) = summary["learners"]
    # One publish at start, then one every PUBLISH_EVERY updates.
    assert summary["weights_versions"] == learner["weights_version"]
    assert summary["weights_versions"] == 1 + summary["updates"] // PUBLISH_EVERY
    assert summary["updates"] == learner["updates"]
    # Both workers took part, and every role's time adds up within the wall time.
    roles = {"coordinator", "data server", "learner 0", "worker 0", "worker 1"}
    assert set(summary["placement"]["roles"]) == roles
    times = summary["time_s"]
    assert times["workers_stepping"] > 0 and times["learner_learning"] > 0
    assert times["learner_learning"] + times["learner_data_wait"] <= summary["wall_time_s"]
    worker_total = times["workers_stepping"] + times["workers_push_wait"]
    assert worker_total <= N_WORKERS * summary["wall_time_s"]


def test_the_summary_says_where_the_start_up_and_the_end_went(local_run):
    _, _, _, summary = local_run
    times = summary["time_s"]
    parts = times["startup_parts"]  # seconds since the process started, each the latest
    moments = [
        parts["ray_ready"],
        parts["roles_requested"],
        parts["processes_started"],  # the roles' own processes: Ray's
        parts["roles_imported"],
        parts["roles_ready"],
    ]
    assert None not in moments and moments == sorted(moments), parts
    # DQN's workers step before the learner is up (they act with nets of their own at first).
    assert 0 < parts["ray_ready"] and parts["roles_requested"] < parts["first_env_step"], parts
    assert parts["first_weights"] is not None and parts["first_weights"] >= parts["roles_requested"]
    assert parts["first_env_step"] == times["startup"]
    ending = times["teardown_parts"]  # seconds since the stop
    assert 0 <= ending["roles_ended"] <= ending["ray_stopped"], ending
    assert ending["ray_stopped"] - ending["roles_ended"] >= times["teardown"] > 0, times
