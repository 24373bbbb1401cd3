"""Sweeps on Ray Tune through ``python main.py --yaml ... --sweep sweep.yaml``.

An ASHA sweep of 4 PPO trials on CartPole (one process each, 2 at a time, a grid of
learning rates): ASHA stops the trials behind at a rung. What a user reads after it: one
row per trial in ``sweep_results.csv``, ``best_config.yaml`` that runs through ``main.py``
to the best trial's return (one process at a seed is reproducible: its evaluations are the
trial's, and the run goes on to the budget where the trial may have been stopped), the
figure, and no process of the sweep left. Trials on the Ray backend: every role of a trial
reports the trial's placement group (``summary.json["placement"]["roles"][*]["group"]``),
a group of its own per trial. Bad sweep input is in the bad-input table
(``tests/test_bad_input.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli_runs import main_in_process, summary_of
from tests.support.procs import TrackedRun, task_dirs, wait_gone
from tests.support.runs import needs_extra
from tests.support.sweeps import BUDGET, finished_sweep, read_csv, sweep_args
from tests.support.watch import kill, role_pids, wait_for

ASHA_SWEEP = """\
space:
  algo_cfg.lr: {grid: [0.001, 0.0003, 0.0001, 0.00003]}
seeds: [1]
scheduler: asha
asha: {grace_env_steps: 4096, reduction_factor: 2}
max_concurrent_trials: 2
"""


#: A trial on the Ray backend that fits 2 CPUs: its driver 1 CPU, a learner and a worker 0.5.
RAY_TRIAL = (
    "general_cfg.mp_backend=ray",
    "general_cfg.n_workers=1",
    "general_cfg.worker_num_cpus=0.5",
    "general_cfg.learner_num_cpus=0.5",
)

#: Two trials on the Ray backend, one at a time.
TWO_RAY_TRIALS = "space:\n  algo_cfg.lr: {grid: [0.001, 0.0003]}\nmax_concurrent_trials: 1\n"


@pytest.fixture(scope="module")
def asha_sweep(tmp_path_factory):
    needs_extra("ray.tune", "requirements-tune.txt")
    tmp_path = tmp_path_factory.mktemp("asha")
    run = TrackedRun(
        sweep_args(tmp_path, ASHA_SWEEP, "general_cfg.mp_backend=single"), log_dir=tmp_path
    )
    sweep_dir, rows = finished_sweep(tmp_path, run)
    return run, sweep_dir, rows


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_asha_sweep_of_4_trials_writes_a_row_each_and_stops_some_early(asha_sweep) -> None:
    run, sweep_dir, rows = asha_sweep
    assert len(rows) == 4, rows
    lrs = {r["overrides"] for r in rows}
    assert lrs == {f"algo_cfg.lr={lr}" for lr in ("0.001", "0.0003", "0.0001", "3e-05")}, rows
    assert {r["status"] for r in rows} <= {"finished", "stopped early"}, rows
    stopped = [r for r in rows if r["status"] == "stopped early"]
    assert stopped and all(int(r["env_steps"]) < BUDGET for r in stopped), rows
    finished = [r for r in rows if r["status"] == "finished"]
    assert finished and all(r["stop_reason"] == "max_env_steps" for r in finished), rows
    assert all(int(r["env_steps"]) >= BUDGET for r in finished), rows
    (best,) = [r for r in rows if r["best"] == "1"]
    assert float(best["best_eval_return"]) == max(float(r["best_eval_return"]) for r in rows)
    # Each trial is an ordinary run, its task directory under the sweep's.
    for row in rows:
        task = Path(row["task_dir"])
        assert task.parent.parent == sweep_dir / "trials", row
        assert (task / "results" / "evals.csv").is_file(), row
    assert (sweep_dir / "figs" / "trials.png").stat().st_size > 0
    lines = run.stdout.splitlines()
    assert sum(line.startswith("trial ") for line in lines) == 4, run.stdout[-2000:]
    assert lines[-1] == str(sweep_dir)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_best_config_of_a_sweep_runs_through_main_py_to_the_best_trials_return(
    asha_sweep, tmp_path: Path, capsys
) -> None:
    _, sweep_dir, rows = asha_sweep
    (best,) = [r for r in rows if r["best"] == "1"]
    code = main_in_process(
        ("--yaml", str(sweep_dir / "best_config.yaml"), f"general_cfg.tasks_dir={tmp_path}")
    )
    assert code == 0, capsys.readouterr().err[-3000:]
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    evals = [e["return_mean"] for e in summary["eval_history"]]
    assert summary["env_steps"] >= BUDGET
    # One process at a fixed seed is reproducible: the trial's evaluations come again (and
    # more, past where ASHA may have stopped the trial).
    trial = [
        float(r["return_mean"]) for r in read_csv(Path(best["task_dir"]) / "results" / "evals.csv")
    ]
    assert evals[: len(trial)] == pytest.approx(trial, abs=0.05), (evals, trial)
    assert max(evals) >= float(best["best_eval_return"]) - 0.05


@pytest.mark.slow
def test_no_process_of_a_finished_sweep_is_left(asha_sweep) -> None:
    run, _, _ = asha_sweep
    started = {p: c for p, c in run.seen.items() if c}
    assert any("raylet" in c for c in started.values()), "the sweep's Ray was not observed"
    assert not wait_gone(started, timeout=20), "processes of the sweep still alive"
    assert not run.leftovers()


@pytest.fixture(scope="module")
def ray_trials_with_a_killed_learner(tmp_path_factory):
    """Two trials on the Ray backend, one at a time; the first one's learner is killed with
    SIGKILL once that trial has written a checkpoint to restart from."""
    needs_extra("ray.tune", "requirements-tune.txt")
    tmp_path = tmp_path_factory.mktemp("ray_trials")
    run = TrackedRun(
        sweep_args(
            tmp_path, TWO_RAY_TRIALS, *RAY_TRIAL, f"general_cfg.max_env_steps={BUDGET // 2}"
        ),
        log_dir=tmp_path,
    )
    try:
        checkpoints = lambda: list((tmp_path / "tasks").glob("Sweep_*/trials/*/*/models/*.pt"))  # noqa: E731
        wait_for(run, "a trial's checkpoint", checkpoints, 300)
        (learner,) = wait_for(run, "its learner", lambda: role_pids(run, "ray::Learner"), 60)
        kill(learner)
    except BaseException:
        run.kill()
        raise
    _, rows = finished_sweep(tmp_path, run)
    return rows


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_role_of_a_ray_backend_trial_runs_in_that_trials_placement_group(
    ray_trials_with_a_killed_learner,
) -> None:
    rows = ray_trials_with_a_killed_learner
    groups = []
    for row in rows:
        roles = summary_of(Path(row["task_dir"]))["placement"]["roles"]
        assert set(roles) == {"coordinator", "data server", "learner 0", "worker 0"}, roles
        # The restarted learner of the first trial too.
        (group,) = {where["group"] for where in roles.values()}
        assert group, json.dumps(roles)
        groups.append(group)
    assert len(set(groups)) == 2, groups  # each trial in a group of its own


@pytest.mark.release
@pytest.mark.slow
def test_a_learner_killed_mid_sweep_is_restarted_in_its_trial_and_every_trial_finishes(
    ray_trials_with_a_killed_learner,
) -> None:
    rows = ray_trials_with_a_killed_learner
    assert [r["status"] for r in rows] == ["finished", "finished"], rows
    assert all(r["stop_reason"] == "max_env_steps" for r in rows), rows
    # The CSV says which trial restarted its learner: the first one, once.
    assert [r["restarts"] for r in rows] == ["learner 1", ""], rows


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_trial_whose_run_fails_is_an_error_row_and_the_other_trials_finish(
    tmp_path: Path,
) -> None:
    needs_extra("ray.tune", "requirements-tune.txt")
    # 9 in 10 env steps of the second trial raise: its run stops with exit 1 (envs failing
    # past the error budget), the trial with it.
    sweep = (
        "space:\n"
        "  general_cfg.fault_injection.env_error_rate: {grid: [0.0, 0.9]}\n"
        "max_concurrent_trials: 2\n"
    )
    run = TrackedRun(
        sweep_args(
            tmp_path,
            sweep,
            "general_cfg.mp_backend=single",
            f"general_cfg.max_env_steps={BUDGET // 3}",
        ),
        log_dir=tmp_path,
    )
    _, rows = finished_sweep(tmp_path, run)
    by_rate = {r["overrides"]: r for r in rows}
    ok = by_rate["general_cfg.fault_injection.env_error_rate=0"]
    failed = by_rate["general_cfg.fault_injection.env_error_rate=0.9"]
    assert ok["status"] == "finished" and ok["stop_reason"] == "max_env_steps", ok
    assert ok["best"] == "1"
    assert failed["status"] == "error" and "run exited 1" in failed["stop_reason"], failed
    assert "trial " + failed["trial_id"] + " failed" in run.stdout, run.stdout[-2000:]
