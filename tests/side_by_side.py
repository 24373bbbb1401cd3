"""Independent runs two at a time: how the slow tests use both of this machine's cores.

Why: a learning run here is learner-bound. Its learner keeps one core busy while its
workers wait on the update-to-data throttle, so one run at a time leaves the other core
idle for most of the suite. Two runs side by side take about the time of one, and what a
run shows does not change: budgets are counted in env steps, the runtime holds the
update-to-data ratio however the CPU is shared, single-backend runs are reproducible, and
every run has its own process tree, task folder and local Ray.

A module-scoped fixture runs the jobs of the selected tests once (``-k`` picks jobs too);
each test then asks for its own job's outcome, which raises the job's own assertion error
where it failed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Generic, TypeVar

import pytest

T = TypeVar("T")
SIDE_BY_SIDE = 2  # this machine's cores


@dataclass
class Outcome(Generic[T]):
    """What one job returned, or the exception it raised."""

    value: T | None = None
    error: BaseException | None = None

    def result(self) -> T:
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def _outcome(job: Callable[[], T]) -> Outcome[T]:
    try:
        return Outcome(value=job())
    except BaseException as exc:  # kept for the job's own test to raise
        return Outcome(error=exc)


def side_by_side(
    jobs: Mapping[str, Callable[[], T]], parallel: int = SIDE_BY_SIDE
) -> dict[str, Outcome[T]]:
    """Run every job, ``parallel`` at a time, in the order given (put the longest first)."""
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        futures = {name: pool.submit(_outcome, job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def selected_tests(request: pytest.FixtureRequest) -> set[str]:
    """What the session's selected tests of the requesting module are: each test's name and,
    for a test parametrized by ``case``, that case."""
    names: set[str] = set()
    for item in request.session.items:
        if getattr(item, "module", None) is not request.module:
            continue
        names.add(item.name)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "case" in callspec.params:
            names.add(str(callspec.params["case"]))
    return names
