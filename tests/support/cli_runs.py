"""Runs of the real CLI, each its own process tree, read through ``results/summary.json``.

A run is ``python main.py --yaml configs/<name>.yaml`` with seed 1, quiet, writing one task
directory under its own folder. Every process it starts is recorded and killed when the
test ends, however it ends (a timeout included), so a hung run leaves nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from envs.latency import step_latency_overrides
from tests.support.procs import TrackedRun, task_dirs
from tests.support.runs import ROOT


def config_path(name: str) -> str:
    return str(ROOT / "configs" / f"{name}.yaml")


def run_to_end(args: Iterable[str], tasks: Path, timeout: float) -> tuple[TrackedRun, int]:
    """``python main.py ARGS`` until it exits (within ``timeout``); killed with its tree after."""
    tasks.mkdir(parents=True, exist_ok=True)
    run = TrackedRun(tuple(args), log_dir=tasks)
    try:
        code = run.wait(timeout)
        assert code is not None, f"main.py still running after {timeout:g} s\n{run.stderr[-3000:]}"
        return run, code
    finally:
        run.kill()


def _train_overrides(tasks: Path, threshold: float | None, overrides: Iterable[str]) -> list[str]:
    """Seed 1, quiet, no figures, one task directory under ``tasks``, stop at ``threshold``."""
    return [
        "general_cfg.seed=1",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.reward_threshold={'null' if threshold is None else threshold}",
        *overrides,
    ]


def train(
    tasks: Path,
    config: str,
    overrides: Iterable[str],
    threshold: float | None,
    timeout: float,
) -> dict[str, Any]:
    """One run of ``python main.py`` to ``threshold`` (None: its whole budget); returns its
    summary.json."""
    args = ("--yaml", config_path(config), *_train_overrides(tasks, threshold, overrides))
    run, code = run_to_end(args, tasks, timeout)
    assert code == 0, f"exit {code}\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    (task,) = task_dirs(tasks)
    return summary_of(task)


def train_in_process(
    tasks: Path, config: str, overrides: Iterable[str], threshold: float | None
) -> dict[str, Any]:
    """The same run through the runner, as ``main.py`` calls it, in the test's process: on
    the test session's Ray (``ray_session``, which the run borrows: its actors are real Ray
    actors) or in this process (``mp_backend=single``). It skips the interpreter's start,
    the imports and a Ray start of its own: seconds of CPU a run, on a machine whose cores
    the other tests share. The test's own timeout bounds it."""
    from joyrl_ray.config import RunConfig, load_config
    from joyrl_ray.run.runner import run

    cfg = load_config(config_path(config), _train_overrides(tasks, threshold, overrides))
    result = run(RunConfig.from_omegaconf(cfg))
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.summary.get('error')}"
    (task,) = task_dirs(tasks)
    return summary_of(task)


def summary_of(task: Path) -> dict[str, Any]:
    return json.loads((task / "results" / "summary.json").read_text())


def evals(summary: dict) -> list[tuple[int, float]]:
    return [(e["env_steps"], round(e["return_mean"], 1)) for e in summary["eval_history"]]


#: How a solved run may stop: on the solving evaluation, or at its budget before it ended.
SOLVED_STOPS = ("reward_threshold", "max_env_steps")


def assert_solved(summary: dict, threshold: float, budget: int | None = None) -> None:
    """An online evaluation reached ``threshold`` (of a checkpoint within ``budget`` env
    steps), and the run stopped on it, or at its step budget while that evaluation was still
    queued: the evaluator runs beside learning and, on a busy machine, may end the
    evaluation of a solving checkpoint only after the run used up its budget."""
    assert summary["eval_history"], summary
    assert max(e["return_mean"] for e in summary["eval_history"]) >= threshold, evals(summary)
    assert summary["solved"] and summary["stop_reason"] in SOLVED_STOPS, (
        summary["stop_reason"],
        evals(summary),
    )
    if budget is not None:
        solving = next(e for e in summary["eval_history"] if e["return_mean"] >= threshold)
        assert solving["env_steps"] <= budget, evals(summary)


def assert_accounting(summary: dict[str, Any]) -> None:
    """Every transition collected was stored or dropped for a named reason."""
    collected = summary["transitions_collected"]
    stored, dropped = summary["transitions_stored"], summary["transitions_dropped"]
    assert collected == stored + sum(dropped.values()), (collected, stored, dropped)


#: For a run that shows a fault's outcome or the runtime's bookkeeping, not learning (DQN
#: family configs): a fifth of the shipped update-to-data ratio and no online evaluation.
#: Most of a DQN CartPole run's CPU is the learner's updates and the evaluations, and a test
#: run shares the machine's cores with the others.
LIGHT_LEARNING = ("algo_cfg.updates_per_step=0.1", "general_cfg.online_eval=false")


#: Overrides that make every env step and reset also sleep the seconds given.
step_latency = step_latency_overrides


#: A DQN run that shows plumbing (attach, placement, resume, a mode), not learning: a
#: 32-unit network, 32-row batches and updates from 100 env steps on. With
#: ``general_cfg.max_env_steps`` a few hundred, most of the run's CPU is its processes' start.
TINY_DQN = (
    "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [32], activation: relu}]",
    "algo_cfg.batch_size=32",
    "algo_cfg.learn_start=100",
)


def main_in_process(args: Iterable[str]) -> int:
    """``python main.py ARGS`` in the test's process: main.py's own argument parsing and
    command line (its one-line errors and ``resume with:`` line on stderr, its result line
    on stdout, for the test to read with ``capsys``; its exit code, returned). A Ray run
    borrows the test session's Ray (``ray_session``, which the test must ask for: the roles
    are real Ray actors), a single-backend run stays in this process. Like
    :func:`train_in_process` it skips the interpreter's start, the imports and a Ray of its
    own; it fits the runs whose test neither kills a process of the run nor signals it (and
    does not read how the interpreter exits)."""
    import main
    from joyrl_ray.run.cli import run_from_cli

    parsed = main.parse_args(list(args))
    return run_from_cli(parsed.yaml, parsed.overrides)


def evaluations(summary: dict[str, Any]) -> list[tuple[int, int, float]]:
    """A run's online evaluations as (updates, env steps, mean return): what two runs that
    learn the same must agree on."""
    return [(e["updates"], e["env_steps"], e["return_mean"]) for e in summary["eval_history"]]
