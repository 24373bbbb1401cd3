"""Learning runs of the real CLI, read through ``results/summary.json`` only.

Each run is ``python main.py --yaml configs/<name>.yaml`` with seed 1, quiet, writing one
task directory under its own folder, stopped at the first online evaluation reaching its
threshold; the tests then hold however the runtime is arranged inside.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_main
from tests.side_by_side import Outcome, selected_tests, side_by_side

#: id -> (yaml under configs/, extra overrides, threshold on the best eval return; None:
#: no threshold, the run goes its whole budget)
Cases = Mapping[str, tuple[str, tuple[str, ...], float | None]]


def train(tasks: Path, config: str, overrides: Iterable[str], threshold: float | None) -> dict:
    """One run to ``threshold``; returns the summary.json of the task directory it wrote."""
    done = run_main(
        "--yaml",
        str(ROOT / "configs" / f"{config}.yaml"),
        "general_cfg.seed=1",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.reward_threshold={'null' if threshold is None else threshold}",
        *overrides,
        timeout=840,
    )
    assert done.returncode == 0, (
        f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    (path,) = tasks.glob("*/results/summary.json")
    return json.loads(path.read_text())


def train_selected(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    cases: Cases,
    backend_overrides: tuple[str, ...],
    also: Iterable[str] = (),
) -> dict[str, Outcome[dict]]:
    """The cases the selected tests ask for (and ``also``), two at a time."""
    root = tmp_path_factory.mktemp("learning")
    wanted = selected_tests(request) | set(also)

    def job(case: str):
        config, overrides, threshold = cases[case]
        return lambda: train(root / case, config, (*backend_overrides, *overrides), threshold)

    return side_by_side({case: job(case) for case in cases if case in wanted})


def evals(summary: dict) -> list[tuple[int, float]]:
    return [(e["env_steps"], round(e["return_mean"], 1)) for e in summary["eval_history"]]


def assert_solved(summary: dict, threshold: float) -> None:
    assert summary["eval_history"], summary
    assert max(e["return_mean"] for e in summary["eval_history"]) >= threshold, evals(summary)
    assert summary["solved"] and summary["stop_reason"] == "reward_threshold", (
        summary["stop_reason"],
        evals(summary),
    )
