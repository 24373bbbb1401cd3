"""Policies with memory reach their claimed return on the Ray backend, within their budget.

Why: a recurrent policy's state travels with the Ray runtime's data (workers carry each
env's memory across steps and ship the memory each sequence started from; the learner
replays the sequences, for APPO from rollouts acted by older weights), which one process
does not exercise in the same way. The cases are those of ``benchmarks/learning_matrix.py``
marked ``ci``. Each commit's CI runs one per rollout flow on a cue recalled 5 blank steps
later (no policy without memory beats it): PPO with a GRU (synchronous rollouts) and APPO
with a GRU (asynchronous rollouts, V-trace over sequences). The release check (``release``,
``bash .ci/release``) adds the long ones on CartPole without its velocities: PPO with an
LSTM to 475 (seed 3: a synchronous PPO run on Ray is reproducible), and R2D2 (an LSTM Q
network on sequence replay, two replay shards): free-running to 200 with 64 sequences per
update (a free-running off-policy run on Ray is not reproducible, and to 475 it misses now
and then), and in lockstep to 475 within 150k (seed 3: a lockstep run is the single
backend's, so a seed pins it).
PPO with an LSTM on CartPole without its velocities and APPO with an LSTM on Pendulum
without its angular velocity run in one process on each commit
(``test_single_learning.py``). Each is the run ``python main.py --yaml
configs/<name>.yaml`` makes, through the runner in the test's process, on the test
session's Ray (real Ray actors; no Ray of its own to start), with two workers and the
case's ``ci_seed`` (1 unless it says otherwise); it stops at the first online evaluation
(10 episodes) that reaches the threshold, and reads only ``results/summary.json``. One
learning run per data flow on Ray is in ``test_multi_learner.py``; every algorithm on Ray
is the benchmark's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.learning_matrix import CASES
from tests.support.cli_runs import assert_solved, train_in_process

RUN_TIMEOUT_S = 540  # a case takes 20 s to 2 minutes here; past this it hangs

MEMORY = [
    "ray-ppo-gru-cue-recall",
    "ray-appo-gru-cue-recall",
    "ray-ppo-lstm-cartpole-novel",
    "ray-r2d2-cartpole-novel-2-shards-to-200",
    "ray-r2d2-cartpole-novel-2-shards-lockstep",
]


def _param(case: str):
    """The case, marked ``release`` where only the release check runs it."""
    return pytest.param(case, marks=[pytest.mark.release] if CASES[case].release else [])


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("case", [_param(case) for case in MEMORY])
def test_a_policy_with_memory_reaches_its_threshold_on_ray(
    ray_session, tmp_path: Path, case: str
) -> None:
    learning = CASES[case]
    assert learning.ci and learning.backend == "ray"
    overrides = (*learning.args(), f"general_cfg.seed={learning.ci_seed}")
    summary = train_in_process(tmp_path / case, learning.config, overrides, learning.threshold)
    assert_solved(summary, learning.threshold, learning.budget)
