"""The export command's inputs, checked before anything heavy loads: the format (and the
extra it needs), the task directory, the checkpoint.

Every refusal of the command is an :class:`ExportError`, whose message is the one line
shown; the checks here need no torch, so bad input is refused at once.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

FORMATS = ("onnx", "torchscript")
SUFFIXES = {"onnx": ".onnx", "torchscript": ".pt"}
ONNX_MODULES = ("onnx", "onnxruntime", "onnxscript")
INSTALL_LINE = "pip install -r requirements-export.txt"

TASK_HINT = "a task directory written by a train run (holding config.yaml and models/)"
CHECKPOINT_HINT = "best (best.pt, else the last), last, or an update number"


class ExportError(ValueError):
    """Bad input for the export; the message is the one line shown."""


def check_format(fmt: str) -> None:
    """Refuse an unknown format, and ONNX where the optional extra is not installed."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt!r} is not a format; allowed: {', '.join(FORMATS)}")
    if fmt == "onnx":
        missing = [name for name in ONNX_MODULES if importlib.util.find_spec(name) is None]
        if missing:
            raise ExportError(
                f"--format onnx needs {', '.join(missing)} (the optional export extra): "
                f"{INSTALL_LINE}"
            )


def find_task(task: str, tasks_dir: str) -> Path:
    """``task`` as a task directory: a name under ``tasks_dir`` or a path."""
    candidates = [Path(tasks_dir) / task, Path(task)]
    for candidate in candidates:
        if (candidate / "models").is_dir() and (candidate / "config.yaml").is_file():
            return candidate
    for candidate in candidates:
        if candidate.is_dir():
            lacks = [name for name in ("config.yaml", "models/") if not (candidate / name).exists()]
            raise ExportError(
                f"{task}: {candidate} has no {' or '.join(lacks)}; allowed: {TASK_HINT}"
            )
    raise ExportError(
        f"{task}: no such task directory under {tasks_dir}/ or at that path; allowed: {TASK_HINT}"
    )


def checkpoint_names(models: Path) -> list[str]:
    """The checkpoints in ``models``: named ones (best, last) first, then by update."""
    names = [p.stem for p in models.glob("*.pt")]
    numbered = sorted((n for n in names if n.isdigit()), key=int)
    return sorted(n for n in names if not n.isdigit()) + numbered


def check_checkpoint(task: Path, checkpoint: str) -> None:
    """Refuse a ``--checkpoint`` that is no name of one (:data:`CHECKPOINT_HINT`), a task
    without checkpoints, and an update number the task has no checkpoint of."""
    if not (checkpoint in ("best", "last") or checkpoint.isdigit()):
        raise ExportError(
            f"--checkpoint {checkpoint!r} is not a checkpoint; allowed: {CHECKPOINT_HINT}"
        )
    models = task / "models"
    available = checkpoint_names(models)
    if not available:
        raise ExportError(
            f"{task}: {models} holds no checkpoint; allowed: {TASK_HINT} that wrote one "
            "(every model_save_fre updates and at its end)"
        )
    if checkpoint.isdigit() and not (models / f"{int(checkpoint)}.pt").is_file():
        raise ExportError(
            f"--checkpoint {checkpoint}: {task} has no models/{int(checkpoint)}.pt; allowed: "
            f"{', '.join(available)}"
        )
