"""Running the project as a user does: configs, ``python main.py``, optional extras."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from joyrl_ray.config import RunConfig, load_config

ROOT = Path(__file__).resolve().parents[2]


def needs_extra(module: str, requirements: str) -> ModuleType:
    """``module`` from an optional extra (``requirements-<name>.txt``).

    A developer without the extra sees the test skipped; in CI (``CI=true``, where
    ``.ci/run`` installs every extra) a missing module fails the test instead, so a
    dropped install step cannot turn a check into a silent skip.
    """
    if os.environ.get("CI", "").lower() in ("1", "true"):
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            pytest.fail(f"CI must install {requirements}: {exc}")
    return pytest.importorskip(module, reason=f"needs {requirements}")


def make_cfg(tmp_path: Path, *overrides: str, yaml_path: str | None = None) -> RunConfig:
    """A run config writing under ``tmp_path``, quiet, with the given overrides on top."""
    base = [f"general_cfg.tasks_dir={tmp_path}", "general_cfg.progress=false"]
    return RunConfig.from_omegaconf(load_config(yaml_path, base + list(overrides)))


def run_main(*args: str, cwd: Path = ROOT, timeout: float = 600, **popen: object):
    """Run ``python main.py ARGS`` as a user would; returns the CompletedProcess."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )
