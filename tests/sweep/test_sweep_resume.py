"""An interrupted sweep and ``python main.py --resume <sweep dir>``.

Three PPO trials on CartPole, one at a time, one process each. Ctrl-C (SIGINT to
main.py's process group, as a terminal sends it) once the first trial has finished: the
sweep stops in order (exit 130), writes the rows it has (the running trial
``interrupted``), prints the resume command, and leaves no process. That command runs the
rest: every trial finished, the first one kept as it was (not run again).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.procs import TrackedRun, wait_gone
from tests.support.runs import needs_extra
from tests.support.sweeps import read_csv, sweep_args
from tests.support.watch import wait_for

THREE_TRIALS = "space:\n  algo_cfg.lr: {grid: [0.001, 0.0003, 0.0001]}\nmax_concurrent_trials: 1\n"


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
        wait_for(run, "a finished trial", lambda: " finished: " in run.stdout, 300)
        run.sigint()
        code = run.wait(timeout=120)
    finally:
        run.kill()
    assert code == 130, f"exit {code}\n{run.stderr[-3000:]}"
    found = re.search(r"resume with: python main\.py --resume (\S+)", run.stderr)
    assert found, run.stderr[-3000:]
    sweep_dir = Path(found.group(1))
    first = read_csv(sweep_dir / "sweep_results.csv")
    finished = [r for r in first if r["status"] == "finished"]
    assert finished and len(finished) < 3, first
    assert not wait_gone({p: c for p, c in run.seen.items() if c}, timeout=20)

    resumed = TrackedRun(("--resume", str(sweep_dir)), log_dir=tmp_path)
    try:
        code = resumed.wait(timeout=420)
    finally:
        resumed.kill()
    assert code == 0, f"exit {code}\n{resumed.stderr[-3000:]}"
    rows = read_csv(sweep_dir / "sweep_results.csv")
    assert len(rows) == 3 and all(r["status"] == "finished" for r in rows), rows
    assert {r["overrides"] for r in rows} == {
        f"algo_cfg.lr={lr}" for lr in ("0.001", "0.0003", "0.0001")
    }
    by_id = {r["trial_id"]: r for r in rows}
    for before in finished:  # kept, not run again: the same task directory, alone
        assert by_id[before["trial_id"]]["task_dir"] == before["task_dir"]
        assert len(list(Path(before["task_dir"]).parent.iterdir())) == 1
    assert resumed.stdout.splitlines()[-1] == str(sweep_dir)
