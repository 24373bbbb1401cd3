"""An interrupted sweep and ``python main.py --resume <sweep dir>``.

Three PPO trials on CartPole, one at a time, one process each, ASHA. Ctrl-C (SIGINT to
main.py's process group, as a terminal sends it) once the second has been stopped early:
the sweep stops in order (exit 130), writes the rows it has (finished, stopped early, and
the running trial ``interrupted``), prints the resume command, and leaves no process. That
command runs the rest: the third trial finishes, the two that had ended are kept as they
were (not run again).

That sweep is the release tier's. Each commit runs a lighter one: two trials that Optuna
draws (``searcher: optuna``), one at a time, 1,024 env steps each with one evaluation, and
every env step sleeping 2 ms (a trial's run lasts seconds, at little CPU). Ctrl-C once the
second trial's run has started: the first trial is kept, the second is ``interrupted``,
and the printed command runs it again to its end. The same sweep shows Optuna's part, as
``test_optuna.py`` does at a larger budget: each drawn trial runs and writes its row, and
``best_config.yaml`` is the best one's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli_runs import step_latency
from tests.support.procs import TrackedRun, wait_gone
from tests.support.runs import needs_extra
from tests.support.sweeps import read_csv, sweep_args
from tests.support.watch import wait_for
from tests.sweep.test_optuna import OPTUNA_SWEEP, assert_drawn_from_the_space_with_the_best_config

#: One at a time: a learning rate that learns, one too small to (ASHA stops it at its first
#: rung, 4,096 env steps, behind the first), and the first again.
THREE_TRIALS = """\
space:
  algo_cfg.lr: {grid: [0.001, 0.00001, 0.0009]}
scheduler: asha
asha: {grace_env_steps: 4096}
max_concurrent_trials: 1
"""


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_sweep_stopped_by_ctrl_c_resumes_with_the_printed_command_and_finishes(
    tmp_path: Path,
) -> None:
    needs_extra("ray.tune", "requirements-tune.txt")
    args = sweep_args(
        tmp_path, THREE_TRIALS, "general_cfg.mp_backend=single", "general_cfg.max_env_steps=8192"
    )
    run = TrackedRun(args, log_dir=tmp_path)
    try:
        wait_for(run, "a trial stopped early", lambda: " stopped early: " in run.stdout, 300)
        run.sigint()
        code = run.wait(timeout=120)
    finally:
        run.kill()
    assert code == 130, f"exit {code}\n{run.stderr[-3000:]}"
    found = re.search(r"resume with: python main\.py --resume (\S+)", run.stderr)
    assert found, run.stderr[-3000:]
    sweep_dir = Path(found.group(1))
    first = read_csv(sweep_dir / "sweep_results.csv")
    # The trials that ended are said so (one finished, one stopped early by ASHA), the
    # one cut short is "interrupted".
    by_lr = {r["overrides"]: r["status"] for r in first}
    assert by_lr["algo_cfg.lr=0.001"] == "finished", first
    assert by_lr["algo_cfg.lr=1e-05"] == "stopped early", first
    assert by_lr.get("algo_cfg.lr=0.0009", "interrupted") == "interrupted", first
    ended = [r for r in first if r["status"] != "interrupted"]
    assert not wait_gone({p: c for p, c in run.seen.items() if c}, timeout=20)

    resumed = TrackedRun(("--resume", str(sweep_dir)), log_dir=tmp_path)
    try:
        code = resumed.wait(timeout=420)
    finally:
        resumed.kill()
    assert code == 0, f"exit {code}\n{resumed.stderr[-3000:]}"
    rows = read_csv(sweep_dir / "sweep_results.csv")
    statuses = {r["overrides"]: r["status"] for r in rows}
    assert statuses == {
        "algo_cfg.lr=0.001": "finished",
        "algo_cfg.lr=1e-05": "stopped early",
        "algo_cfg.lr=0.0009": "finished",
    }, rows
    by_id = {r["trial_id"]: r for r in rows}
    for before in ended:  # kept, not run again: the same task directory, alone
        assert by_id[before["trial_id"]]["task_dir"] == before["task_dir"]
        assert len(list(Path(before["task_dir"]).parent.iterdir())) == 1
    assert resumed.stdout.splitlines()[-1] == str(sweep_dir)


#: test_optuna.py's space, two trials Optuna draws from it, one at a time.
TWO_OPTUNA_TRIALS = OPTUNA_SWEEP.replace("num_samples: 3", "num_samples: 2").replace(
    "max_concurrent_trials: 2", "max_concurrent_trials: 1"
)


@dataclass
class Stopped:
    """A sweep stopped by Ctrl-C, and its resume run to the end."""

    sweep_dir: Path
    code: int | None  # the stopped sweep's exit code
    stderr: str
    left: dict  # its processes still alive 20 s after it exited
    first: list[dict[str, str]]  # its rows
    resumed_code: int | None
    resumed_stdout: str
    resumed_stderr: str
    rows: list[dict[str, str]]  # the rows after the resume


def trial_runs(tmp_path: Path) -> list[Path]:
    """The task directories of the sweep's trials so far."""
    return [p for p in (tmp_path / "tasks").glob("Sweep_*/trials/*/*") if p.is_dir()]


@pytest.fixture(scope="module")
def optuna_sweep_stopped_and_resumed(tmp_path_factory) -> Stopped:
    needs_extra("optuna", "requirements-tune.txt")
    tmp_path = tmp_path_factory.mktemp("resume")
    args = sweep_args(
        tmp_path,
        TWO_OPTUNA_TRIALS,
        "general_cfg.mp_backend=single",
        "general_cfg.max_env_steps=1024",
        "general_cfg.model_save_fre=1",
        *step_latency(0.002),
    )
    run = TrackedRun(args, log_dir=tmp_path)
    try:
        ended = re.compile(r"^trial \S+ finished: ", re.M)
        wait_for(run, "the first trial's end", lambda: ended.search(run.stdout), 300)
        wait_for(run, "the second trial's run", lambda: len(trial_runs(tmp_path)) == 2, 120)
        run.sigint()
        code = run.wait(timeout=120)
    finally:
        run.kill()
    found = re.search(r"resume with: python main\.py --resume (\S+)", run.stderr)
    assert found, f"exit {code}\n{run.stderr[-3000:]}"
    sweep_dir = Path(found.group(1))
    first = read_csv(sweep_dir / "sweep_results.csv")
    left = wait_gone({p: c for p, c in run.seen.items() if c}, timeout=20)
    resumed = TrackedRun(("--resume", str(sweep_dir)), log_dir=tmp_path)
    try:
        resumed_code = resumed.wait(timeout=300)
    finally:
        resumed.kill()
    return Stopped(
        sweep_dir,
        code,
        run.stderr,
        left,
        first,
        resumed_code,
        resumed.stdout,
        resumed.stderr,
        read_csv(sweep_dir / "sweep_results.csv"),
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_sweep_stopped_by_ctrl_c_mid_trial_resumes_with_the_printed_command_and_runs_it_again(
    optuna_sweep_stopped_and_resumed: Stopped,
) -> None:
    stopped = optuna_sweep_stopped_and_resumed
    assert stopped.code == 130, f"exit {stopped.code}\n{stopped.stderr[-3000:]}"
    assert sorted(r["status"] for r in stopped.first) == ["finished", "interrupted"], stopped.first
    assert not stopped.left
    resumed = stopped.resumed_code
    assert resumed == 0, f"exit {resumed}\n{stopped.resumed_stderr[-3000:]}"
    assert [r["status"] for r in stopped.rows] == ["finished", "finished"], stopped.rows
    by_id = {r["trial_id"]: r for r in stopped.rows}
    assert set(by_id) == {r["trial_id"] for r in stopped.first}, (stopped.first, stopped.rows)
    (kept,) = [r for r in stopped.first if r["status"] == "finished"]
    # Kept, not run again: the same task directory, alone in its trial's.
    assert by_id[kept["trial_id"]]["task_dir"] == kept["task_dir"]
    assert len(list(Path(kept["task_dir"]).parent.iterdir())) == 1
    # The one cut short ran again, from its start, to its end.
    (cut,) = [r for r in stopped.first if r["status"] == "interrupted"]
    again = by_id[cut["trial_id"]]
    assert again["stop_reason"] == "max_env_steps" and int(again["env_steps"]) >= 1024, again
    assert stopped.resumed_stdout.splitlines()[-1] == str(stopped.sweep_dir)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_optuna_sweep_runs_each_drawn_trial_and_writes_its_row_and_the_best_config(
    optuna_sweep_stopped_and_resumed: Stopped,
) -> None:
    stopped = optuna_sweep_stopped_and_resumed
    rows = stopped.rows
    assert len(rows) == 2, rows
    assert all(r["status"] == "finished" and r["best_eval_return"] for r in rows), rows
    assert_drawn_from_the_space_with_the_best_config(stopped.sweep_dir, rows)
