"""Ctrl-C on a real run (ray backend, local Ray): exit 130, final checkpoint, clean exit.

SIGINT goes to main.py's whole process group, as a terminal sends it, so Ray's own
processes started by the run get it too.
"""

from __future__ import annotations

import json
import time

import pytest
import torch

from joyrl_ray.run.checkpoint import checkpoint_updates
from tests.support.cli_runs import TINY_DQN
from tests.support.procs import TrackedRun, task_dirs, wait_gone


def _wait_training(run: TrackedRun, tasks, timeout: float) -> None:
    """Until the run has written a numbered checkpoint (it is learning), recording its tree."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.poll_tree()
        assert run.proc.poll() is None, f"main.py exited early\n{run.stderr[-3000:]}"
        dirs = task_dirs(tasks)
        if dirs and any(p.stem.isdigit() for p in (dirs[0] / "models").glob("*.pt")):
            return
        time.sleep(0.5)
    raise AssertionError(f"no checkpoint within {timeout} s\n{run.stderr[-3000:]}")


@pytest.mark.alone
def test_sigint_stops_the_run_cleanly(tmp_path):
    run = TrackedRun(
        (
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=100000000",
            "general_cfg.model_save_fre=50",
            "general_cfg.online_eval=false",
            "general_cfg.save_fig=false",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tmp_path}",
            "algo_cfg.learn_start=200",
            *TINY_DQN[:2],  # a small network: its checkpoints come sooner
        ),
        log_dir=tmp_path,
    )
    try:
        _wait_training(run, tmp_path, timeout=240)
        time.sleep(2.0)  # a few seconds of training
        sent = run.sigint()
        code = run.wait(timeout=60, poll_s=0.2)
        took = time.monotonic() - sent
        assert code is not None, f"main.py still running 60 s after SIGINT\n{run.stderr[-3000:]}"
        assert code == 130, run.stderr[-3000:]
        print(f"main.py exited {took:.1f} s after SIGINT")
        assert took < 15, f"exit took {took:.1f} s after SIGINT"

        (task,) = task_dirs(tmp_path)
        summary = json.loads((task / "results" / "summary.json").read_text())
        assert summary["stop_reason"] == "interrupted"
        last = task / "models" / "last.pt"
        assert last.is_file()
        state = torch.load(last, weights_only=True)
        assert checkpoint_updates(state) == summary["updates"] > 0  # the final state
        assert "Traceback" not in run.stderr, run.stderr[-3000:]

        started = {p: c for p, c in run.seen.items() if c}
        assert any(c.startswith("ray::") for c in started.values()), started
        left = wait_gone(started, timeout=15)
        assert not left, f"processes of the interrupted run still alive: {left}"
        assert not run.leftovers()  # none escaped the tree we recorded
    finally:
        run.kill()
