"""A trial's checkpoint as Ray Tune keeps it, for population-based training.

What a trial reports with an evaluation is what a resume reads (:mod:`joyrl_ray.run.modes`)
in a folder laid out as a task directory: ``models/last.pt`` (the learner's newest
checkpoint), ``results/episodes.csv`` and ``results/evals.csv`` (so the restored run's
curves start with the history that led to the checkpoint), ``config.yaml``, and
``lineage.json``: which trial made it, at how many env steps, and that trial's metrics
then. Restoring one is an ordinary resume with ``load_path`` at the unpacked folder: the
run goes on from the checkpoint's env step, episode and update counts.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.run.checkpoint import CheckpointError, load_checkpoint

LINEAGE_FILE = "lineage.json"
RESTORED_PREFIX = "restored-"  # <trial root>/restored-<k>/: the k-th checkpoint restored
COPIED = ("config.yaml", "results/episodes.csv", "results/evals.csv")


@dataclass(frozen=True)
class Lineage:
    """Where a restored checkpoint came from."""

    trial_id: str
    env_steps: int
    metrics: dict[str, Any]

    def shown(self) -> str:
        return f"{self.trial_id} at {self.env_steps} env steps"


def pack(task_dir: Path, into: Path, trial_id: str, metrics: dict[str, Any]) -> bool:
    """Lay out ``task_dir``'s newest checkpoint in ``into``; False when it has none yet."""
    last = task_dir / "models" / "last.pt"
    if not last.is_file():
        return False
    (into / "models").mkdir(parents=True, exist_ok=True)
    (into / "results").mkdir(exist_ok=True)
    # last.pt is replaced atomically: the copy is one whole checkpoint, old or new.
    shutil.copy2(last, into / "models" / "last.pt")
    try:
        counters = load_checkpoint(into / "models" / "last.pt").get("counters") or {}
    except CheckpointError:
        return False
    for name in COPIED:
        if (task_dir / name).is_file():
            shutil.copy2(task_dir / name, into / name)
    lineage = {
        "trial_id": trial_id,
        "env_steps": int(counters.get("env_steps", 0)),
        "metrics": metrics,
    }
    (into / LINEAGE_FILE).write_text(json.dumps(lineage, default=str))
    return True


def unpack(checkpoint: Any, trial_root: Path) -> tuple[Path, Lineage]:
    """Copy Tune's ``checkpoint`` to the trial's next ``restored-<k>/`` folder."""
    trial_root.mkdir(parents=True, exist_ok=True)
    k = len(list(trial_root.glob(f"{RESTORED_PREFIX}*")))
    folder = trial_root / f"{RESTORED_PREFIX}{k}"
    with checkpoint.as_directory() as source:
        shutil.copytree(source, folder)
    return folder, read_lineage(folder)


def read_lineage(folder: Path) -> Lineage:
    data = json.loads((folder / LINEAGE_FILE).read_text())
    return Lineage(str(data["trial_id"]), int(data["env_steps"]), dict(data["metrics"]))


def restores(trial_root: Path, trial_id: str) -> list[Lineage]:
    """The checkpoints of other trials this trial restored, oldest first (a trial paused
    and resumed restores its own: not listed)."""
    found = sorted(
        trial_root.glob(f"{RESTORED_PREFIX}*"),
        key=lambda p: int(p.name.removeprefix(RESTORED_PREFIX)),
    )
    lineages = [read_lineage(folder) for folder in found if (folder / LINEAGE_FILE).is_file()]
    return [lineage for lineage in lineages if lineage.trial_id != trial_id]
