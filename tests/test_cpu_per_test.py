"""The CPU-per-test table that docs/development.md points contributors to (where CI's time
goes): pytest with ``-p tests.support.cpu_per_test`` ranks the tests it ran by the machine's
CPU seconds, and writes one JSON line per test where ``CPU_PER_TEST_JSONL`` says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.runs import ROOT

TEST = "tests/test_config.py::test_precedence_defaults_then_yaml_then_cli"


def test_pytest_with_the_plugin_ranks_each_test_by_machine_cpu_seconds(tmp_path: Path) -> None:
    lines = tmp_path / "costs.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-p", "tests.support.cpu_per_test", TEST],
        cwd=ROOT,
        env={**os.environ, "CPU_PER_TEST_JSONL": str(lines)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "machine CPU per test" in done.stdout and "machine CPU per file" in done.stdout
    ranked = [line for line in done.stdout.splitlines() if line.endswith(TEST)]
    assert len(ranked) == 1 and "CPU-s" in ranked[0], done.stdout
    (cost,) = [json.loads(line) for line in lines.read_text().splitlines()]
    assert cost["test"] == TEST and cost["cpu_s"] >= 0 and cost["wall_s"] >= 0, cost
