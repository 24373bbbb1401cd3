"""Shared fixtures: one Ray for the tests that borrow one. Helpers live in tests/support/."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray shared by every test that needs one (runs borrow it and leave it up)."""
    import ray

    if not ray.is_initialized():
        _start_local_ray(ray)
    yield ray
    ray.shutdown()


#: What Ray adds to the nice value of its worker processes (every actor) over its raylet's,
#: which is the test process's own; Ray's default is 15.
SESSION_WORKER_NICENESS = "0"


def _start_local_ray(ray, tries: int = 3) -> None:
    """``ray.init`` of a local Ray, tried again when its node times out during startup: each
    xdist worker starts its own while the others run, and on a loaded 2-core machine a
    raylet may miss Ray's start-up deadline once.

    Its actors run at the test processes' priority (``RAY_worker_niceness``, read by the
    raylet when it starts): at Ray's nice 15 they get about 1/30 of the CPU time of each
    busy process at nice 0, and the other xdist workers' one-process runs are such
    processes. At the start of the parallel part a run's learner then took minutes to
    construct, and the run stopped as stalled before its first step. Only this Ray's
    workers: the Rays that ``main.py`` and ``ray start`` start in the tests keep Ray's
    default, beside their own drivers."""
    for attempt in range(1, tries + 1):
        try:
            with _environ(RAY_worker_niceness=SESSION_WORKER_NICENESS):
                # address="local": a bare init would join whatever cluster a stale file in
                # Ray's temp dir names (a cluster test's `ray start`, say) instead of
                # starting our own.
                ray.init(
                    address="local",
                    num_cpus=2,
                    include_dashboard=False,
                    logging_level=logging.WARNING,
                )
            return
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == tries:
                raise
            ray.shutdown()


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set, as it was again afterwards."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _shared_fixture_group(item: pytest.Item) -> str | None:
    """The group of a test reading a module- or session-scoped fixture of ours, else None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        defs = info.name2fixturedefs.get(name)
        # Our own fixtures only (pytest's tmp_path_factory is session-scoped too).
        if not defs or not defs[-1].func.__module__.startswith("tests"):
            continue
        if defs[-1].scope == "session" and name != "ray_session":
            return name
        if defs[-1].scope == "module":
            return item.module.__name__
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups off the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first, so that the xdist workers end together; and the tests sharing
    a module- or session-scoped fixture of ours (one run read by several tests) on one
    worker, so that the run happens once (``--dist loadgroup``). The session Ray is the
    exception: each xdist worker starts its own (``ray_session``) when a test of it first
    asks, so the tests borrowing one spread over the workers instead of queueing on one
    (an idle Ray costs a few percent of a core; a queue of Ray runs on one worker would be
    the suite's longest path)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = _shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
