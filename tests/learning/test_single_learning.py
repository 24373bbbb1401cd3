"""Every shipped algorithm learns in one process (``mp_backend: single``).

Why: one process is reproducible, so these runs pin what an algorithm learns at a fixed
seed independently of the Ray runtime (``test_multi_learner.py`` has the Ray flows). The
cases are those of ``benchmarks/learning_matrix.py`` marked ``ci`` on the single backend:
the shipped yaml (the hyperparameters a user runs) and a budget a few times what the seed
needs. Each goes through the runner as ``main.py`` calls it, in the test's process (no
interpreter or import to start), reads ``results/summary.json``, and is its own test with
its own time limit. The rest of the matrix (each algorithm again on Ray, the variants at 475,
the observation kinds) is the benchmark's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.learning_matrix import CASES
from tests.support.cli_runs import assert_solved, train_in_process

RUN_TIMEOUT_S = 540

#: The slow-env example has a test of its own (test_slow_env_config.py).
SINGLE = [
    name
    for name, case in CASES.items()
    if case.ci and case.backend == "single" and not name.startswith("single-slow")
]


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("case", SINGLE)
def test_reaches_threshold_in_one_process(tmp_path: Path, case: str) -> None:
    learning = CASES[case]
    summary = train_in_process(
        tmp_path / case, learning.config, learning.args(), learning.threshold
    )
    assert_solved(summary, learning.threshold, learning.budget)
