"""One trial of a sweep: an ordinary run (either backend) inside the trial's placement
group, reporting to Ray Tune after each online evaluation.

The trial's placement group holds its whole layout (:func:`trial_bundles`): the first
bundle is this function's process, which drives the run (and, on the Ray backend, runs the
online evaluator beside it); then one bundle per learner and per worker. Every actor the
run starts lands in the group (:func:`~joyrl_ray.backends.placement.enclosing_group`), and
dies with this process when Tune stops the trial: Ray ends the actors a process owns with
it. The task directory is the run's own, under ``<sweep>/trials/<trial id>/``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.backends.placement import layout_bundles
from joyrl_ray.config import RunConfig, build_config
from joyrl_ray.sweep.spec import merged_overrides

#: Metrics each report carries (besides Tune's own).
ENV_STEPS = "env_steps"
FINISHED = "stop_reason"  # only in a trial's last report, made when its run ended


@dataclass(frozen=True)
class TrialTemplate:
    """What every trial shares: the run yaml, the command-line overrides, where trials go."""

    yaml_data: dict[str, Any]
    overrides: dict[str, dict[str, Any]]
    trials_dir: str

    def config(self, sampled: dict[str, Any], task_root: str) -> RunConfig:
        """The run config of one trial: its sampled keys over the shared ones."""
        flat = dict(sampled)
        flat["general_cfg.tasks_dir"] = task_root
        flat["general_cfg.progress"] = False
        flat["general_cfg.show_fig"] = False
        return RunConfig.from_omegaconf(
            build_config(self.yaml_data, merged_overrides(self.overrides, flat))
        )


def trial_bundles(cfg: RunConfig) -> list[dict[str, float]]:
    """The placement group of one trial: its driver (1 CPU: it drives the run and, on the
    Ray backend, evaluates beside it), then the Ray backend's learners and workers."""
    head = [{"CPU": 1.0}]
    if cfg.general.mp_backend != "ray":
        return head
    return head + layout_bundles(cfg.general)


def run_trial(sampled: dict[str, Any], template: TrialTemplate) -> None:
    """Tune's function trainable: run the trial's config, reporting each evaluation."""
    from ray import tune

    from joyrl_ray.run.runner import run

    trial_id = tune.get_context().get_trial_id()
    task_root = str(Path(template.trials_dir) / trial_id)
    cfg = template.config(sampled, task_root)
    budget = cfg.general.max_env_steps
    threshold = cfg.general.reward_threshold
    best = -math.inf
    solved_at: int | None = None

    def metrics(row: dict[str, Any]) -> dict[str, Any]:
        nonlocal best, solved_at
        best = max(best, row["return_mean"])
        if solved_at is None and threshold is not None and row["return_mean"] >= threshold:
            solved_at = row["env_steps"]
        # Unsolved ranks behind every solved trial: one step past the budget.
        to_threshold = solved_at if solved_at is not None else budget + 1
        return {
            "eval_return_mean": row["return_mean"],
            "best_eval_return": best,
            ENV_STEPS: row["env_steps"],
            "env_steps_to_threshold": to_threshold,
            "wall_time_s": row.get("wall_time_s", 0.0),
        }

    last: dict[str, Any] = {}

    def on_eval(row: dict[str, Any]) -> None:
        last.update(metrics(row))
        tune.report(dict(last))

    result = run(cfg, on_eval=on_eval)
    summary = result.summary
    if result.exit_code != 0:
        raise RuntimeError(
            f"run exited {result.exit_code} ({summary.get('stop_reason')}): "
            f"{summary.get('error') or '-'}; task directory {result.task_dir}"
        )
    final = dict(last) or {
        "eval_return_mean": float("nan"),
        "best_eval_return": float("nan"),
        "env_steps_to_threshold": budget + 1,
    }
    final.update(
        {
            ENV_STEPS: summary["env_steps"],
            FINISHED: summary["stop_reason"],
            "wall_time_s": summary["wall_time_s"],
            "task_dir": str(result.task_dir),
        }
    )
    tune.report(final)
