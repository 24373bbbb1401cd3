"""Shared fixtures: one Ray per test session (per xdist worker). Helpers live in tests/support/."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray shared by every test that needs one (runs borrow it and leave it up)."""
    import ray

    if not ray.is_initialized():
        # address="local": a bare init would join whatever cluster a stale file in Ray's
        # temp dir names (a cluster test's `ray start`, say) instead of starting our own.
        ray.init(
            address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING
        )
    yield ray
    ray.shutdown()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups off the items
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first, so that two xdist workers end together; and the tests sharing
    a module- or session-scoped fixture (one run read by several tests) on one worker, so
    that the run happens once (``--dist loadgroup``)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name)
            # Our own fixtures only (pytest's tmp_path_factory is session-scoped too); every
            # worker has its own Ray.
            if (
                not defs
                or name == "ray_session"
                or not defs[-1].func.__module__.startswith("tests")
            ):
                continue
            scope = defs[-1].scope
            if scope == "session":
                item.add_marker(pytest.mark.xdist_group(name))
                break
            if scope == "module":
                item.add_marker(pytest.mark.xdist_group(item.module.__name__))
                break
