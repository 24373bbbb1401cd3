"""A pytest plugin that says what each test costs the machine: the CPU seconds every process
used while it ran (its Ray clusters, actors and subprocesses included, which the test's own
process never sees) and its wall seconds.

    python -m pytest -p tests.support.cpu_per_test -m "not alone" -q

The suite is CPU-bound on a 2-core machine, so the sum of these CPU seconds over 2 is the
floor of CI's parallel part; the table ranks where to cut. The machine's counters include
whatever else runs, so it means something only on an otherwise idle machine and without
xdist (tests side by side would each be charged for the others). A module's shared run
(a module-scoped fixture) is charged to its first test. At the end it prints the costliest
tests, the total, and the same per file; ``CPU_PER_TEST_JSONL=PATH`` also writes one JSON
line per test there.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
_SHOWN = 40
_costs: list[dict[str, Any]] = []


def _machine_cpu_s() -> float:
    """CPU seconds the machine spent in user and system mode since boot (all cores)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    user, nice, system = (int(x) for x in fields[1:4])
    return (user + nice + system) / _TICKS_PER_S


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator:
    cpu, wall = _machine_cpu_s(), time.monotonic()
    yield
    cost = {
        "test": item.nodeid,
        "cpu_s": round(_machine_cpu_s() - cpu, 1),
        "wall_s": round(time.monotonic() - wall, 1),
    }
    _costs.append(cost)
    path = os.environ.get("CPU_PER_TEST_JSONL")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(cost) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _costs:
        return
    write = terminalreporter.write_line
    terminalreporter.section("machine CPU per test")
    for cost in sorted(_costs, key=lambda c: -c["cpu_s"])[:_SHOWN]:
        write(f"{cost['cpu_s']:8.1f} CPU-s {cost['wall_s']:8.1f} s  {cost['test']}")
    total = sum(c["cpu_s"] for c in _costs)
    write(f"{total:8.1f} CPU-s in all, {len(_costs)} tests ({total / 2:.0f} s on 2 busy cores)")
    per_file: Counter[str] = Counter()
    for cost in _costs:
        per_file[cost["test"].split("::")[0]] += cost["cpu_s"]
    terminalreporter.section("machine CPU per file")
    for name, cpu_s in per_file.most_common(_SHOWN):
        write(f"{cpu_s:8.1f} CPU-s  {name}")
