"""Trajectory files: ``results/trajs_0.pkl``, ``trajs_1.pkl``, ... (at most 1000 each).

Each file is a pickled list of trajectories; each trajectory is a dict of numpy arrays
with one row per step: ``obs``, ``actions``, ``rewards``, ``terminated``, ``truncated``,
``next_obs``. Files are rewritten atomically as they fill, so a crash loses nothing that
was flushed and never leaves a half-written file.

With ``collect_traj: true`` workers send finished episodes with their pushes; the
coordinator counts them (dropping, with their episodes, any past ``max_episode`` or after
the stop) and the driver's single writer appends them, so the files hold exactly the
episodes of ``episodes.csv``, in the same order. A resumed run's files hold the episodes
of that run only (``summary.json``: ``trajectories == episodes_this_run``).
Export to Minari: ``python -m joyrl_ray.export_minari <task dir> <dataset id>``.
"""

from __future__ import annotations

import pickle
import re
import time
from pathlib import Path
from typing import Any

from joyrl_ray.run.atomic_file import atomic_write
from joyrl_ray.wire.messages import Trajectory

MAX_PER_FILE = 1000
FLUSH_EVERY_S = 30.0
FILE_PATTERN = re.compile(r"^trajs_(\d+)\.pkl$")


def _atomic_pickle(obj: Any, path: Path) -> None:
    atomic_write(path, lambda f: pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL))


def trajectory_files(path: str | Path) -> list[Path]:
    """The trajectory files of a results folder (or a task directory), in order."""
    path = Path(path)
    if (path / "results").is_dir():
        path = path / "results"
    files = [
        (int(m.group(1)), p) for p in path.glob("trajs_*.pkl") if (m := FILE_PATTERN.match(p.name))
    ]
    return [p for _, p in sorted(files)]


def load(path: str | Path) -> list[Trajectory]:
    """All trajectories from one ``trajs_N.pkl`` file, a results folder or a task directory."""
    path = Path(path)
    files = [path] if path.is_file() else trajectory_files(path)
    if not files:
        raise FileNotFoundError(f"no trajs_*.pkl under {path}")
    trajectories: list[Trajectory] = []
    for file in files:
        with file.open("rb") as f:
            trajectories.extend(pickle.load(f))
    return trajectories


class TrajectoryWriter:
    """Appends finished episodes across files of at most ``MAX_PER_FILE`` trajectories."""

    def __init__(self, results_dir: Path, max_per_file: int = MAX_PER_FILE) -> None:
        self.dir = Path(results_dir)
        self.max_per_file = max_per_file
        self.file_index = len(trajectory_files(self.dir))
        self.current: list[Trajectory] = []
        self.last_flush = time.monotonic()
        self.total = 0

    def _path(self) -> Path:
        return self.dir / f"trajs_{self.file_index}.pkl"

    def extend(self, trajectories: list[Trajectory]) -> None:
        for traj in trajectories:
            self.current.append(traj)
            self.total += 1
            if len(self.current) == self.max_per_file:
                _atomic_pickle(self.current, self._path())
                self.file_index += 1
                self.current = []
        if self.current and time.monotonic() - self.last_flush > FLUSH_EVERY_S:
            self.flush()

    def flush(self) -> None:
        if self.current:
            _atomic_pickle(self.current, self._path())
        self.last_flush = time.monotonic()

    def close(self) -> None:
        self.flush()
