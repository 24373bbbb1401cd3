"""One trial of a sweep: an ordinary run (either backend) inside the trial's placement
group, reporting to Ray Tune after each online evaluation.

The trial's placement group holds its whole layout (:func:`trial_bundles`): the first
bundle is this function's process, which drives the run (and, on the Ray backend, runs the
online evaluator beside it); then one bundle per learner and per worker. Every actor the
run starts lands in the group (:func:`~joyrl_ray.backends.placement.enclosing_group`), and
dies with this process when Tune stops the trial: Ray ends the actors a process owns with
it. The task directory is the run's own, under ``<sweep>/trials/<trial id>/``.

Under population-based training a report carries the trial's checkpoint once per
perturbation interval (:mod:`joyrl_ray.sweep.checkpoints`), and a trial that Tune starts
with one (an exploit of another trial's, or its own after a pause) is a resume of it: a new
task directory beside the first, going on from the checkpoint's counts.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.backends.placement import alive_nodes, layout_bundles
from joyrl_ray.config import RunConfig, build_config, merged_overrides
from joyrl_ray.sweep.checkpoints import pack, restores, unpack

#: Metrics each report carries (besides Tune's own).
ENV_STEPS = "env_steps"
FINISHED = "stop_reason"  # only in a trial's last report, made when its run ended


@dataclass(frozen=True)
class TrialTemplate:
    """What every trial shares: the run yaml, the command-line overrides, where trials go,
    and how often a report carries the trial's checkpoint (population-based training)."""

    yaml_data: dict[str, Any]
    overrides: dict[str, dict[str, Any]]
    trials_dir: str
    checkpoint_env_steps: int | None = None  # PBT: a checkpoint with a report this often

    def config(
        self, sampled: dict[str, Any], task_root: str, restore: Path | None = None
    ) -> RunConfig:
        """The run config of one trial: its sampled keys over the shared ones; ``restore``:
        a checkpoint folder it resumes from (:mod:`joyrl_ray.sweep.checkpoints`)."""
        flat = dict(sampled)
        flat["general_cfg.tasks_dir"] = task_root
        flat["general_cfg.progress"] = False
        flat["general_cfg.show_fig"] = False
        if restore is not None:
            flat["general_cfg.load_checkpoint"] = True
            flat["general_cfg.load_path"] = str(restore)
            flat["general_cfg.load_model_step"] = "last"
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


class EvalMetrics:
    """The metrics of each report, from the run's evaluation rows."""

    def __init__(self, budget: int, threshold: float | None) -> None:
        self.budget = budget
        self.threshold = threshold
        self.best = -math.inf
        self.solved_at: int | None = None
        self.last: dict[str, Any] = {}

    def add(self, row: dict[str, Any]) -> dict[str, Any]:
        self.best = max(self.best, row["return_mean"])
        solved = self.threshold is not None and row["return_mean"] >= self.threshold
        if self.solved_at is None and solved:
            self.solved_at = row["env_steps"]
        # Unsolved ranks behind every solved trial: one step past the budget.
        to_threshold = self.solved_at if self.solved_at is not None else self.budget + 1
        self.last.update(
            {
                "eval_return_mean": row["return_mean"],
                "best_eval_return": self.best,
                ENV_STEPS: row["env_steps"],
                "env_steps_to_threshold": to_threshold,
                "wall_time_s": row.get("wall_time_s", 0.0),
            }
        )
        return dict(self.last)

    def final(self) -> dict[str, Any]:
        return dict(self.last) or {
            "eval_return_mean": float("nan"),
            "best_eval_return": float("nan"),
            "env_steps_to_threshold": self.budget + 1,
        }


class Reporter:
    """``tune.report``, with the trial's newest checkpoint once every ``every`` env steps
    (and with the last report), when the sweep restores trials.

    Once per perturbation interval, not with every evaluation: PBT clones the checkpoint a
    trial had at its last perturbation, and Tune keeps every checkpoint reported (deleting
    old ones could pull one from under a clone that was decided but not yet started).
    """

    def __init__(self, trial_id: str, trial_root: Path, every: int | None) -> None:
        self.trial_id = trial_id
        self.trial_root = trial_root
        self.every = every
        self.checkpointed_at = 0

    def report(self, metrics: dict[str, Any], task_dir: Path, *, last: bool = False) -> None:
        from ray import tune

        steps = int(metrics.get(ENV_STEPS, 0))
        due = self.every is not None and (last or steps - self.checkpointed_at >= self.every)
        if not due:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory(dir=self.trial_root) as folder:
            if pack(task_dir, Path(folder), self.trial_id, metrics):
                self.checkpointed_at = steps
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(folder))
            else:
                tune.report(metrics)


def this_node() -> str:
    """The node this trial's process runs on: its IP, as the cluster knows the node, and
    the start of its Ray node id."""
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    ip = next((n.ip for n in alive_nodes() if n.node_id == node_id), "?")
    return f"{ip} {node_id[:8]}"


def run_trial(sampled: dict[str, Any], template: TrialTemplate) -> None:
    """Tune's function trainable: run the trial's config, reporting each evaluation; a
    trial Tune restores (PBT's exploit, or a paused trial going on) resumes the checkpoint
    it is given."""
    from ray import tune

    from joyrl_ray.run.runner import run

    trial_id = tune.get_context().get_trial_id()
    trial_root = Path(template.trials_dir) / trial_id
    trial_root.mkdir(parents=True, exist_ok=True)
    restore: Path | None = None
    given = tune.get_checkpoint()
    if given is not None:
        restore, lineage = unpack(given, trial_root)
    cfg = template.config(sampled, str(trial_root), restore)
    budget = cfg.general.max_env_steps
    lineage_of = {
        "restored_from": "; ".join(x.shown() for x in restores(trial_root, trial_id)),
        "node": this_node(),
    }
    if restore is not None and 0 < budget <= lineage.env_steps:
        # The checkpoint is of a trial that had finished: nothing is left to train.
        tune.report({**lineage.metrics, **lineage_of, FINISHED: "max_env_steps"})
        return
    metrics = EvalMetrics(budget, cfg.general.reward_threshold)
    reporter = Reporter(trial_id, trial_root, template.checkpoint_env_steps)

    def on_eval(row: dict[str, Any], task_dir: Path) -> None:
        reported = {**metrics.add(row), **lineage_of, "task_dir": str(task_dir)}
        if 0 < budget <= row["env_steps"]:
            # The run's last evaluation goes with its final report, made once its summary is
            # written: a scheduler that pauses the trial on a report (PBT does, while another
            # trial waits to run) must not cut the run between its budget and its summary, or
            # the trial would end on a run without one (its resume has nothing left to train).
            return
        reporter.report(reported, task_dir)

    result = run(cfg, on_eval=on_eval)
    summary = result.summary
    if result.exit_code != 0:
        raise RuntimeError(
            f"run exited {result.exit_code} ({summary.get('stop_reason')}): "
            f"{summary.get('error') or '-'}; task directory {result.task_dir}"
        )
    final = metrics.final()
    final.update(
        {
            ENV_STEPS: summary["env_steps"],
            FINISHED: summary["stop_reason"],
            "wall_time_s": summary["wall_time_s"],
            "task_dir": str(result.task_dir),
            **lineage_of,
        }
    )
    reporter.report(final, Path(result.task_dir), last=True)
