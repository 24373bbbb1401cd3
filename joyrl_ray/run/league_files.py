"""A league in the task directory: its snapshots' weights, its table, and a resume's start.

Each snapshot's acting weights are written once, when the league freezes it, to
``models/league/<name>.npz`` (atomically, as checkpoints are); the league's state (members,
payoff, ratings) travels inside every checkpoint of the main policy, so a resume takes the
league of the checkpoint it starts from and its snapshots' files. ``results/league.csv`` has
a row per snapshot and per learning policy: when it was frozen, its rating, its games and
its results against the main policy.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from joyrl_ray.league.checkpoint import LEAGUE_KEY
from joyrl_ray.league.league import League, LeagueSettings
from joyrl_ray.run.atomic_file import atomic_write_bytes
from joyrl_ray.run.checkpoint import CheckpointError, find_checkpoint
from joyrl_ray.run.task_dir import TaskDir

LEAGUE_DIR = "league"
CSV_FILE = "league.csv"
RATINGS_FILE = "league_ratings.csv"


def snapshot_path(models: Path, name: str) -> Path:
    return models / LEAGUE_DIR / f"{name}.npz"


def write_snapshot(models: Path, name: str, weights: dict[str, np.ndarray]) -> Path:
    path = snapshot_path(models, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = io.BytesIO()
    savez: Any = np.savez  # numpy's stub reads **arrays as its allow_pickle flag
    savez(data, **weights)
    atomic_write_bytes(data.getvalue(), path)
    return path


def snapshot_names(task: Path) -> list[str]:
    """The snapshots a league run froze, by the update count they were frozen at."""
    found = [p.stem for p in (task / "models" / LEAGUE_DIR).glob("*.npz")]
    return sorted(found, key=lambda name: int(u) if (u := name.rpartition("@")[2]).isdigit() else 0)


def read_snapshot(models: Path, name: str) -> dict[str, np.ndarray]:
    path = snapshot_path(models, name)
    if not path.is_file():
        raise CheckpointError(
            f"{path}: the league's snapshot {name} is missing (the checkpoint's league "
            "names it); resume from a task directory that holds models/league/"
        )
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def league_start(source: Path, checkpoint: dict[str, Any]) -> dict[str, Any] | None:
    """A resumed run's league: the checkpoint's state and its snapshots' weights from
    ``source``'s files (None: the checkpoint holds no league)."""
    state = checkpoint.get(LEAGUE_KEY)
    if state is None:
        return None
    names = [m["name"] for m in state["members"] if m.get("active", True)]
    weights = {name: read_snapshot(source / "models", name) for name in names}
    return {"state": state, "weights": weights}


def league_at_checkpoint(task: Path, settings: LeagueSettings) -> dict[str, Any] | None:
    """The standing of the league in the main policy's newest checkpoint of ``task``, for a
    run that lost its coordinator (and the live league with it): what a resume starts from.
    None when no checkpoint of main holds a league yet."""
    try:
        state = find_checkpoint(task, "last", policy=settings.main).state.get(LEAGUE_KEY)
    except CheckpointError:
        return None
    if state is None:
        return None
    return League.from_state(settings, state).standing()


def carry_snapshots(source: Path, task_models: Path) -> int:
    """Copy ``source``'s snapshot files into the new task directory; how many."""
    found = sorted((source / "models" / LEAGUE_DIR).glob("*.npz"))
    if not found:
        return 0
    (task_models / LEAGUE_DIR).mkdir(parents=True, exist_ok=True)
    for path in found:
        shutil.copy2(path, task_models / LEAGUE_DIR / path.name)
    return len(found)


def write_league_csv(results: Path, rows: list[dict[str, Any]]) -> Path:
    return write_csv(results / CSV_FILE, rows)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    if rows:
        writer = csv.DictWriter(text, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_bytes(text.getvalue().encode(), path)
    return path


def write_league(
    task: TaskDir,
    league: dict[str, Any],
    ratings: list[tuple[int, dict[str, float]]],
    figures: bool,
) -> None:
    """A league run's ``results/league.csv``, ``results/league_ratings.csv`` and (``figures``)
    its figures, from the coordinator's closing ``league`` summary."""
    write_league_csv(task.results, league["rows"])
    rows = [
        {"env_steps": steps, "member": name, "rating": round(rating, 1)}
        for steps, row in ratings
        for name, rating in row.items()
    ]
    write_csv(task.results / RATINGS_FILE, rows)
    if figures:
        from joyrl_ray.run.league_figures import save_league_figures

        save_league_figures(task.figs, league["payoff"], ratings)
