"""Checkpoints in ``models/``: numbered, ``last`` and ``best``, each written atomically.

A checkpoint is written atomically (:mod:`joyrl_ray.run.atomic_file`), so a run killed
mid-write (even with SIGKILL) leaves the previous checkpoint intact and at worst a stray
``.<name>.*.tmp`` file, which loading ignores.
Loading uses ``torch.load(weights_only=True)``: checkpoints hold tensors, numbers, strings
and containers of them only.

Which file a run starts from (:func:`find_checkpoint`):

- ``best``: ``best.pt``; without one (or if it cannot be read), as ``last``.
- ``last``: the newest readable checkpoint: ``last.pt`` unless a numbered checkpoint is
  newer (a run killed between writing ``<update>.pt`` and ``last.pt``) or ``last.pt`` cannot
  be read, then the newest readable numbered one.
- ``<update>``: exactly ``<update>.pt``.

torch is imported where a checkpoint is read or written, not with this module: the
command line names :class:`CheckpointError` before anything heavy loads.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from joyrl_ray.run.atomic_file import atomic_write, atomic_write_bytes

NUMBERED = re.compile(r"^(\d+)\.pt$")
CHECKPOINT_KEYS = "a joyrl-ray checkpoint holds algo_name, policy, counters"


class CheckpointError(ValueError):
    """A checkpoint that cannot be found or read; the message says which and why."""


def atomic_torch_save(obj: Any, path: Path) -> None:
    import torch

    atomic_write(path, lambda f: torch.save(obj, f))


class CheckpointStore:
    """The models/ folder of one task directory."""

    def __init__(self, models_dir: str | Path, keep: int = 5) -> None:
        self.dir = Path(models_dir)
        self.keep = keep

    def save(self, state: dict[str, Any], updates: int, *, best: bool = False) -> Path:
        """Write ``<updates>.pt``, ``last.pt`` (and ``best.pt``); prune old numbered ones."""
        path = self.dir / f"{updates}.pt"
        atomic_torch_save(state, path)
        atomic_torch_save(state, self.dir / "last.pt")
        if best:
            atomic_torch_save(state, self.dir / "best.pt")
        self._prune()
        return path

    def save_bytes(self, data: bytes, updates: int) -> Path:
        """A checkpoint the learner serialised: ``<updates>.pt`` and ``last.pt``."""
        path = self.dir / f"{updates}.pt"
        atomic_write_bytes(data, path)
        atomic_write_bytes(data, self.dir / "last.pt")
        self._prune()
        return path

    def save_best(self, data: bytes, evaluation: dict[str, Any]) -> None:
        """``best.pt``: the checkpoint ``data`` with the evaluation that made it the best."""
        import torch

        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        state["best_return"] = float(evaluation["return_mean"])
        state["evaluation"] = dict(evaluation)
        atomic_torch_save(state, self.dir / "best.pt")

    def numbered(self) -> list[int]:
        return numbered_checkpoints(self.dir)

    def _prune(self) -> None:
        for step in self.numbered()[: -self.keep]:
            (self.dir / f"{step}.pt").unlink(missing_ok=True)


def numbered_checkpoints(models_dir: Path) -> list[int]:
    """Update numbers of the ``<update>.pt`` files in ``models_dir``, oldest first."""
    if not models_dir.is_dir():
        return []
    return sorted(int(m.group(1)) for p in models_dir.iterdir() if (m := NUMBERED.match(p.name)))


def resolve_task_dir(load_path: str | None, tasks_dir: str | Path) -> Path:
    """``load_path`` as a task directory: a name under ``tasks_dir`` or a path."""
    if not load_path:
        raise CheckpointError("general_cfg.load_path is not set (name a task directory)")
    candidates = [Path(tasks_dir) / load_path, Path(load_path)]
    for candidate in candidates:
        if (candidate / "models").is_dir():
            return candidate
    for candidate in candidates:
        if candidate.is_file():
            raise CheckpointError(_file_not_task_dir(load_path, candidate, tasks_dir))
    for candidate in candidates:
        if candidate.is_dir():
            raise CheckpointError(
                f"general_cfg.load_path={load_path!r}: {candidate} has no models/ folder "
                "(is it a task directory written by a train run?)"
            )
    raise CheckpointError(
        f"general_cfg.load_path={load_path!r}: no such task directory under {tasks_dir}/ "
        "or at that path"
    )


def _file_not_task_dir(load_path: str, path: Path, tasks_dir: str | Path) -> str:
    hint = ""
    if path.parent.name == "models" and path.suffix == ".pt":  # a checkpoint file itself
        hint = (
            f"; for this checkpoint: general_cfg.load_path={path.parent.parent} "
            f"general_cfg.load_model_step={path.stem}"
        )
    return (
        f"general_cfg.load_path={load_path!r} is a file, not a task directory; allowed: a "
        f"task directory holding models/ (a name under {tasks_dir}/ or a path){hint}"
    )


def _available(models: Path) -> str:
    names = [p.stem for p in models.glob("*.pt")]
    numbered = sorted((n for n in names if n.isdigit()), key=int)
    named = sorted(n for n in names if not n.isdigit())
    return ", ".join(named + numbered) or "none"


def load_checkpoint(path: Path) -> dict[str, Any]:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a truncated or foreign file
        # torch's first sentence says what broke; the rest is advice for its own developers
        detail = str(exc).strip().splitlines()[0].split(". ")[0] if str(exc).strip() else ""
        raise CheckpointError(
            f"{path}: not a readable checkpoint, truncated or not a torch file "
            f"({type(exc).__name__}: {detail})"
        ) from None
    if not isinstance(state, dict) or "policy" not in state:
        held = sorted(map(str, state))[:5] if isinstance(state, dict) else [type(state).__name__]
        raise CheckpointError(
            f"{path}: not a joyrl-ray checkpoint (it holds {', '.join(held) or 'nothing'}; "
            f"{CHECKPOINT_KEYS})"
        )
    return state


def checkpoint_updates(state: dict[str, Any]) -> int:
    """The learner update count a checkpoint was written at."""
    counters = state.get("counters") or {}
    if "updates" in counters:
        return int(counters["updates"])
    return int(state.get("policy", {}).get("updates", 0))


@dataclass
class FoundCheckpoint:
    """The checkpoint a run starts from, and what was skipped on the way (for the log)."""

    path: Path
    state: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def find_checkpoint(task_dir: Path, step: str, policy: str | None = None) -> FoundCheckpoint:
    """The checkpoint ``load_model_step`` names (of ``policy``: a multi-agent run's, whose
    policies each have a folder under ``models/``); see the module docstring for the
    fallbacks."""
    models = task_dir / "models" if policy is None else task_dir / "models" / policy
    notes: list[str] = []
    step = str(step)
    if step.isdigit():
        path = models / f"{int(step)}.pt"
        if not path.is_file():
            raise CheckpointError(
                f"general_cfg.load_model_step={step}: {path} does not exist "
                f"(available: {_available(models)})"
            )
        return FoundCheckpoint(path, load_checkpoint(path))
    if step == "best":
        best = models / "best.pt"
        if best.is_file():
            try:
                return FoundCheckpoint(best, load_checkpoint(best))
            except CheckpointError as exc:
                notes.append(f"skipped {exc}")
        else:
            notes.append(f"no best.pt in {models}: loading the last checkpoint")
    found = _newest(models, notes)
    if found is None:
        if not any(models.glob("*.pt")):
            raise CheckpointError(
                f"general_cfg.load_path={task_dir.name}: {models} holds no checkpoint (a train "
                "run writes one every model_save_fre updates and at its end)"
            )
        raise CheckpointError(
            f"general_cfg.load_path={task_dir.name}: no readable checkpoint in {models} "
            f"({notes[-1]}); allowed: models/last.pt, best.pt or <update>.pt as a joyrl-ray "
            "train run writes them"
        )
    return found


def _newest(models: Path, notes: list[str]) -> FoundCheckpoint | None:
    last_path = models / "last.pt"
    last: FoundCheckpoint | None = None
    if last_path.is_file():
        try:
            last = FoundCheckpoint(last_path, load_checkpoint(last_path), notes)
        except CheckpointError as exc:
            notes.append(f"skipped {exc}")
    last_updates = checkpoint_updates(last.state) if last is not None else -1
    for number in reversed(numbered_checkpoints(models)):
        if number <= last_updates:
            break
        path = models / f"{number}.pt"
        try:
            return FoundCheckpoint(path, load_checkpoint(path), notes)
        except CheckpointError as exc:
            notes.append(f"skipped {exc}")
    return last
