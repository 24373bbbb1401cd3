"""Watching a ``main.py`` run attached to a test cluster while the test changes the cluster
under it: wait for a line in its log, a row of its progress, while the nodes' processes are
recorded for the final check that nothing is left."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from tests.support.procs import TrackedRun, task_dirs

T = TypeVar("T")


class Tracked(Protocol):
    def track(self) -> None: ...


def wait_for(
    run: TrackedRun,
    cluster: Tracked,
    tasks: Path,
    ready: Callable[[Path], T | None],
    what: str,
    timeout: float,
) -> T:
    """What ``ready(task dir)`` returns once it is not None, while the run goes on."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.poll_tree()
        cluster.track()
        assert run.proc.poll() is None, f"main.py exited early\n{run.stderr[-3000:]}"
        dirs = task_dirs(tasks)
        if dirs and (found := ready(dirs[0])) is not None:
            return found
        time.sleep(0.5)
    raise AssertionError(f"no {what} within {timeout} s\n{run.stderr[-3000:]}")


def read_text(path: Path) -> str:
    """The file's text, or "" while the run has not created it yet."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def in_log(text: str) -> Callable[[Path], bool | None]:
    """True once the run's log holds ``text``."""

    def ready(task: Path) -> bool | None:
        return True if text in read_text(task / "logs" / "log.txt") else None

    return ready


def env_steps_past(steps: int) -> Callable[[Path], bool | None]:
    """True once the run's progress.csv counts ``steps`` env steps."""

    def ready(task: Path) -> bool | None:
        rows = read_text(task / "results" / "progress.csv").splitlines()
        return True if len(rows) > 1 and int(rows[-1].split(",")[1]) >= steps else None

    return ready
