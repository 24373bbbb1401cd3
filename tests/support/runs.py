"""Running the project as a user does: configs, ``python main.py``, optional extras."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import pytest

from joyrl_ray.config import RunConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


def needs_extra(module: str, requirements: str) -> ModuleType:
    """``module`` from an optional extra (``requirements-<name>.txt``).

    Never a skip: the test command (``bash .ci/run``) installs every extra, so a missing
    module fails the test with the install line, and no check turns silently into a skip.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"this test needs {requirements} (pip install -r {requirements}): {exc}")


def make_cfg(tmp_path: Path, *overrides: str, yaml_path: str | None = None) -> RunConfig:
    """A run config writing under ``tmp_path``, quiet, with the given overrides on top."""
    # A run on the test session's Ray may wait minutes for its actors to start while the
    # other test processes keep the cores busy: the stall watchdog's 120 s is no hang guard
    # here (the stall tests set their own).
    base = [
        f"general_cfg.tasks_dir={tmp_path}",
        "general_cfg.progress=false",
        "general_cfg.stall_timeout_s=400",
    ]
    return RunConfig.from_omegaconf(load_config(yaml_path, base + list(overrides)))


def run_python(
    code: str, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in a fresh interpreter, from the project root, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_main(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Run ``python main.py ARGS`` as a user would; returns its exit code and output.

    Every process it started is killed afterwards, so a run that overstays ``timeout``
    fails the test and leaves nothing behind.
    """
    from tests.support.procs import TrackedRun

    with tempfile.TemporaryDirectory(prefix="main_") as logs:
        run = TrackedRun(tuple(args), log_dir=Path(logs))
        try:
            code = run.wait(timeout, poll_s=0.2)
            out, err = run.stdout, run.stderr
        finally:
            run.kill()
    assert code is not None, f"main.py still running after {timeout:g} s\n{err[-3000:]}"
    return subprocess.CompletedProcess([sys.executable, "main.py", *args], code, out, err)
