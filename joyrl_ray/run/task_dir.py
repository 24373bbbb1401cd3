"""The task directory every run writes: ``tasks/<Mode>_<env id>_<algo>_<YYYYmmdd-HHMMSS>/``."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

SUBDIRS = ("models", "logs", "results", "figs", "videos")


@dataclass(frozen=True)
class TaskDir:
    root: Path

    @property
    def logger_name(self) -> str:
        """The run's logger (``logs/log.txt``), by its name in :mod:`logging`."""
        return f"joyrl_ray.{self.root.name}"

    @property
    def models(self) -> Path:
        return self.root / "models"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def figs(self) -> Path:
        return self.root / "figs"

    @property
    def videos(self) -> Path:
        return self.root / "videos"


def create_task_dir(tasks_dir: str | Path, mode: str, env_id: str, algo: str) -> TaskDir:
    """A new, empty task directory; never reuses an existing one."""
    safe_env = re.sub(r"[^A-Za-z0-9_.-]+", "-", env_id)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(tasks_dir).resolve() / f"{mode.capitalize()}_{safe_env}_{algo}_{stamp}"
    root, n = base, 0
    while True:
        try:
            root.mkdir(parents=True, exist_ok=False)
            break
        except FileExistsError:
            n += 1
            root = base.with_name(f"{base.name}_{n}")
    for sub in SUBDIRS:
        (root / sub).mkdir()
    return TaskDir(root)
