"""An interrupted sweep and ``python main.py --resume <sweep dir>``.

Three PPO trials on CartPole, one at a time, one process each, ASHA. Ctrl-C (SIGINT to
main.py's process group, as a terminal sends it) once the second has been stopped early:
the sweep stops in order (exit 130), writes the rows it has (finished, stopped early, and
the running trial ``interrupted``), prints the resume command, and leaves no process. That
command runs the rest: the third trial finishes, the two that had ended are kept as they
were (not run again).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.procs import TrackedRun, wait_gone
from tests.support.runs import needs_extra
from tests.support.sweeps import read_csv, sweep_args
from tests.support.watch import wait_for

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
