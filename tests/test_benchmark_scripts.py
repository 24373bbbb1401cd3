"""The benchmark scripts still run against the runtime they measure (a refactor of the
runtime's constructors once broke throughput.py's collection and learning with an
AttributeError that no test saw)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.procs import ROOT, main_env


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_throughput_benchmark_measures_collection_and_the_learner_on_a_short_window() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/throughput.py",
            "--envs",
            "1",
            "--workers",
            "1",
            "--seconds",
            "1",
            "--warmup",
            "0.5",
            "--num-cpus",
            "2",
        ],
        cwd=ROOT,
        env=main_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["runtime_steps_per_s"]["1"]["1"] > 0
    assert figures["baseline_steps_per_s"]["1"] > 0 and figures["learner_updates_per_s"] > 0


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_offline_benchmark_loads_a_dataset_and_paces_a_learner_online_and_from_it() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/offline.py",
            "--transitions",
            "20000",
            "--updates",
            "200",
            "--rounds",
            "1",
        ],
        cwd=ROOT,
        env=main_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["transitions"] == 20000 and len(figures["shard_build_s"]) == 2
    assert figures["online_updates_per_s"][0] > 0 and figures["offline_updates_per_s"][0] > 0
