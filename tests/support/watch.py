"""Watching a running ``main.py`` from outside: bounded wait loops, its roles, its files."""

from __future__ import annotations

import csv
import datetime
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch

from joyrl_ray.run.checkpoint import checkpoint_updates
from tests.support.procs import TrackedRun, descendants, task_dirs

T = TypeVar("T")


def wait_for(run: TrackedRun, what: str, probe: Callable[[], T | None], timeout: float) -> T:
    """Poll ``probe`` until it returns something; main.py must stay alive meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.poll_tree()
        found = probe()
        if found:
            return found
        code = run.proc.poll()
        assert code is None, f"main.py exited ({code}) before {what}\n{run.stderr[-3000:]}"
        time.sleep(0.3)
    raise AssertionError(f"no {what} within {timeout:g} s\n{run.stderr[-3000:]}")


def finish(run: TrackedRun, timeout: float) -> int:
    """main.py's exit code; fails when it is still running after ``timeout``."""
    code = run.wait(timeout)
    assert code is not None, f"main.py still running after {timeout:g} s\n{run.stderr[-3000:]}"
    return code


def the_task(tasks: Path) -> Path:
    (task,) = task_dirs(tasks)
    return task


def env_steps(tasks: Path) -> int:
    """Env steps of the run so far, from the episodes the driver has written."""
    dirs = task_dirs(tasks)
    path = dirs[-1] / "results" / "episodes.csv" if dirs else None
    if path is None or not path.is_file():
        return 0
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["env_steps"]) if rows else 0


def log_text(task: Path) -> str:
    path = task / "logs" / "log.txt"
    return path.read_text() if path.is_file() else ""


def role_pids(run: TrackedRun, prefix: str) -> set[int]:
    """Pids of the run's processes whose command line starts with ``prefix``
    (``ray::Worker``, ``ray::Learner``, ``ray::DataServer``), as a user finds them."""
    return pids_below(run.proc.pid, prefix)


def pids_below(root: int, prefix: str) -> set[int]:
    """Pids of the processes below ``root`` whose command line starts with ``prefix`` (the
    test's own pid: the roles of a run on the session's Ray, whose raylet it started)."""
    return {pid for (pid, _), line in descendants(root).items() if line.startswith(prefix)}


def two(pids: set[int]) -> set[int] | None:
    """``pids`` once there are two of them (a ``wait_for`` probe: two workers, shards...)."""
    return pids if len(pids) == 2 else None


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


#: How Python's hook for exceptions it cannot raise opens its report (``sys.unraisablehook``).
UNRAISABLE = "Exception ignored in: <function ActorHandle.__del__"


def without_handle_collection(stderr: str) -> str:
    """``stderr`` less what Python reports of Ray actor handles whose ``__del__`` failed.

    A run in the test's process shares it with the earlier tests' runs: a handle of theirs
    that the garbage collector takes during this run reports there. A user's ``main.py`` is
    a process of its own, which holds no earlier run's handles."""
    kept: list[str] = []
    lines = iter(stderr.splitlines())
    for line in lines:
        if not line.startswith(UNRAISABLE):
            kept.append(line)
            continue
        for rest in lines:  # the traceback's indented lines, then its exception's line
            if not rest.startswith((" ", "Traceback")):
                break
    return "\n".join(kept)


def the_error_line(code: int | None, stderr: str) -> str:
    """The one ``error:`` line of a run that failed (exit 1) and said so without a traceback."""
    assert code == 1, f"exit {code}\n{stderr[-3000:]}"
    errors = error_lines(stderr)
    assert len(errors) == 1, stderr[-3000:]
    assert "Traceback" not in without_handle_collection(stderr), stderr[-3000:]
    return errors[0]


def final_checkpoint_updates(task: Path) -> int:
    return checkpoint_updates(torch.load(task / "models" / "last.pt", weights_only=True))


def interrupt(run: TrackedRun, timeout: float) -> int:
    """SIGINT to main.py (Ctrl-C's signal, to the driver alone), then its exit code within
    ``timeout``: a run stopped once its test saw what it needed, as its user would stop it
    (130, ``stop_reason: interrupted``, the final checkpoint, the summary)."""
    run.poll_tree()
    os.kill(run.proc.pid, signal.SIGINT)
    return finish(run, timeout)


def numbered_checkpoints(task: Path) -> list[int]:
    """The updates of the numbered checkpoints written so far (``models/<updates>.pt``)."""
    return sorted(int(p.stem) for p in (task / "models").glob("*.pt") if p.stem.isdigit())


def log_time(task: Path, text: str) -> float:
    """When the first log line holding ``text`` was written (seconds since the epoch)."""
    for line in log_text(task).splitlines():
        if text in line:
            stamp = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
            return stamp.timestamp()
    raise AssertionError(f"no log line with {text!r}\n{log_text(task)[-3000:]}")
