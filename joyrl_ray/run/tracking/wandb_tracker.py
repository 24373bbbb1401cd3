"""Weights & Biases: one W&B run per run.

Where: the project ``general_cfg.tracking_project`` or else ``WANDB_PROJECT`` (a value
given to ``wandb.init`` wins over the environment there too) or else W&B's own default;
the mode (``WANDB_MODE=offline`` among them), entity and server from W&B's own settings
and environment; its local files under ``WANDB_DIR``, or else the task directory's
``logs/`` (``logs/wandb/offline-run-*`` is what ``wandb sync`` uploads later).

W&B's own step only grows, while an evaluation's env steps lie behind the progress rows
logged meanwhile; so each section is plotted against its own env steps
(``define_metric``: ``progress/*`` over ``progress/env_steps``, ``eval/*`` over
``eval/env_steps``). The run does not hijack the console (``console="off"``) nor print
W&B's banner (``silent``): ``logs/tracking.json`` and ``logs/log.txt`` say where it went.
Artifacts are run files at their task-directory paths under ``task_dir/`` (W&B keeps its
own ``config.yaml`` at the top), linked into the W&B run's folder.
A resumed run is a new W&B run.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

SECTIONS = ("progress", "eval")  # the metrics' prefixes, each over its own env steps
FILES_FOLDER = "task_dir"  # the run's files hold W&B's own config.yaml at their top


class WandbTracker:
    """One W&B run (see the module's docstring for where it goes)."""

    name = "wandb"

    def __init__(self, *, project: str | None, task_root: Path) -> None:
        self.project = project
        self.task_root = task_root
        self.run: Any = None

    def start(self, run_name: str, params: dict[str, Any]) -> dict[str, Any]:
        import wandb

        where = None if os.environ.get("WANDB_DIR") else str(self.task_root / "logs")
        try:
            self.run = wandb.init(
                project=self.project,
                name=run_name,
                config=params,
                reinit="create_new",  # never another run of this process's
                settings=wandb.Settings(console="off", silent=True),
                dir=where,
            )
        except BaseException:
            wandb.teardown()  # its service process may have started
            raise
        for section in SECTIONS:
            self.run.define_metric(f"{section}/env_steps")
            self.run.define_metric(f"{section}/*", step_metric=f"{section}/env_steps")
        return {
            "project": self.run.project,
            "run_id": self.run.id,
            "mode": str(self.run.settings.mode),  # online, offline or disabled
            "run_dir": str(Path(self.run.dir).parent),
        }

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics)  # the step is in the row: <section>/env_steps

    def log_artifact(self, path: Path) -> None:
        target = Path(self.run.dir) / FILES_FOLDER / path.relative_to(self.task_root)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        try:
            target.symlink_to(path)
        except OSError:  # a filesystem without links
            shutil.copy2(path, target)
        self.run.save(str(target), base_path=self.run.dir, policy="now")

    def finish(self, status: str) -> None:
        import wandb

        self.run.finish(exit_code=0 if status == "FINISHED" else 1)
        wandb.teardown()  # its service process ends with the run, not with this process
