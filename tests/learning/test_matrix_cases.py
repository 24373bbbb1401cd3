"""The learning matrix (``benchmarks/learning_matrix.py``) and CI agree: every case marked
``ci`` is run by a learning test, and every case names a shipped config and a backend."""

from __future__ import annotations

from benchmarks.learning_matrix import CASES
from tests.learning import test_multi_learner, test_ray_learning, test_single_learning
from tests.support.runs import ROOT

#: The cases tests/learning/ runs by name, outside the parametrized lists.
BY_NAME = {"ray-per-2-shards-2-learners", "single-slow-cartpole-ppo-async-envs"}


def test_every_ci_case_of_the_learning_matrix_is_run_by_a_learning_test() -> None:
    ci = {name for name, case in CASES.items() if case.ci}
    run = {
        *test_single_learning.SINGLE,
        *test_multi_learner.ROLLOUT_FLOWS,
        *test_ray_learning.MEMORY,
        *BY_NAME,
    }
    assert run == ci, (sorted(ci - run), sorted(run - ci))


def test_every_case_of_the_learning_matrix_names_a_shipped_config() -> None:
    for name, case in CASES.items():
        assert (ROOT / "configs" / f"{case.config}.yaml").is_file(), name
        assert case.backend in ("single", "ray") and name.startswith(case.backend), name
