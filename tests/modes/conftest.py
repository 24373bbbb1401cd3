"""Fixtures for the modes-and-outputs tests: one small trained run shared by the session."""

from __future__ import annotations

import pytest

from joyrl_ray.run.runner import RunResult, run
from tests.support.modes_setup import TRAIN_OVERRIDES
from tests.support.runs import make_cfg


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """A finished single-process training run; tests read its task directory, never write it."""
    tasks = tmp_path_factory.mktemp("trained_tasks")
    return run(make_cfg(tasks, *TRAIN_OVERRIDES))
