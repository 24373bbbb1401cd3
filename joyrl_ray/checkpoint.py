"""Checkpoints in ``models/``: numbered, ``last`` and ``best``, each written atomically.

A checkpoint is written to a temporary file in the same folder and renamed over the
target, so a run killed mid-write leaves the previous checkpoint intact. Loading uses
``torch.load(weights_only=True)``: checkpoints hold tensors, numbers and strings only.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

NUMBERED = re.compile(r"^(\d+)\.pt$")


class CheckpointError(ValueError):
    """A checkpoint that cannot be found or read; the message says which and why."""


def atomic_torch_save(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CheckpointStore:
    """The models/ folder of one task directory."""

    def __init__(self, models_dir: str | Path, keep: int = 5) -> None:
        self.dir = Path(models_dir)
        self.keep = keep

    def save(self, state: dict[str, Any], updates: int, *, best: bool = False) -> Path:
        path = self.dir / f"{updates}.pt"
        atomic_torch_save(state, path)
        atomic_torch_save(state, self.dir / "last.pt")
        if best:
            atomic_torch_save(state, self.dir / "best.pt")
        self._prune()
        return path

    def save_last(self, state: dict[str, Any]) -> None:
        atomic_torch_save(state, self.dir / "last.pt")

    def save_best(self, state: dict[str, Any]) -> None:
        atomic_torch_save(state, self.dir / "best.pt")

    def numbered(self) -> list[int]:
        if not self.dir.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := NUMBERED.match(p.name)))

    def _prune(self) -> None:
        for step in self.numbered()[: -self.keep]:
            (self.dir / f"{step}.pt").unlink(missing_ok=True)


def resolve_task_dir(load_path: str, tasks_dir: str | Path) -> Path:
    """``load_path`` as a task directory: a name under ``tasks_dir`` or a path."""
    for candidate in (Path(tasks_dir) / load_path, Path(load_path)):
        if (candidate / "models").is_dir():
            return candidate
    raise CheckpointError(
        f"general_cfg.load_path={load_path!r}: no task directory with models/ under "
        f"{tasks_dir}/ or at that path"
    )


def checkpoint_path(task_dir: Path, step: str) -> Path:
    """The file for ``load_model_step``: best (falls back to last), last, or an update number."""
    models = task_dir / "models"
    if step == "best" and not (models / "best.pt").is_file():
        step = "last"
    path = models / f"{step}.pt"
    if not path.is_file():
        have = sorted(p.stem for p in models.glob("*.pt"))
        raise CheckpointError(
            f"general_cfg.load_model_step={step!r}: {path} does not exist "
            f"(available: {', '.join(have) or 'none'})"
        )
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a truncated or foreign file
        raise CheckpointError(
            f"{path}: not a readable checkpoint ({type(exc).__name__}: {exc})".splitlines()[0]
        ) from None
