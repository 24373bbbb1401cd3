"""A call whose answer nobody waits for still has its error read: the run stops, naming it.

The learner writes priorities back without waiting (``update_priorities``); rewards that
overflow make its TD errors, and so the priorities, infinite, which the DataServer refuses.
The run must stop with that error in one line and exit code 1, on both backends, instead of
going on with a corrupt sum tree.

The runs go through main.py's own entry (its error line, its exit code) in the test's
process: on the test session's Ray, or in this process (``mp_backend=single``); nothing of
them is killed (``main_in_process``).
"""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runs import main_in_process
from tests.support.watch import the_error_line


@pytest.mark.parametrize("backend", ["single", "ray"])
@pytest.mark.timeout(240)  # measured 52 s (ray), 12 s (single) on 2 shared cores, as processes
def test_a_failing_priority_write_back_stops_the_run_naming_it(
    tmp_path, backend, ray_session, capsys
):
    code = main_in_process(
        (
            f"general_cfg.mp_backend={backend}",
            "env_cfg.id=tests.support.diverging_env:OverflowingRewardEnv",
            "algo_cfg.buffer_type=PER",
            "algo_cfg.learn_start=64",
            "algo_cfg.batch_size=32",
            "general_cfg.max_env_steps=5000",
            "general_cfg.online_eval=false",
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tmp_path}",
        )
    )
    error = the_error_line(code, capsys.readouterr().err)
    assert "update_priorities" in error and "not finite" in error, error
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "learner_error"
    assert summary["env_steps"] < 5000  # it stopped there, not at the step limit
