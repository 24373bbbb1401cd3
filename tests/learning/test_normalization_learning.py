"""Observation normalization makes the difference: PPO on Pendulum whose observations are
scaled by 1000 learns far better with ``normalize_obs`` than without it, at the same seed
and budget.

The single backend (reproducible at a fixed seed); 2 workers x 4 envs, so the statistics
are merged over workers. A run stops at its budget or once an online evaluation reaches
-300. Best evaluations within 30,720 env steps, with / without, measured here: seed 1
-668 / -869, seed 2 -426 / -971, seed 3 -271 / -452. No one threshold parts the two for
every seed (seed 3 learns somewhat from raw observations), so the test asks for a gap at
the same seed that seeds 1-3 all clear by 80 or more.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg

PENDULUM_PPO = str(ROOT / "configs" / "pendulum_ppo.yaml")
STOP_AT = -300.0  # solved, as the Pendulum cases count it (a random policy scores -1200)
BUDGET = 30720  # env steps: 15 PPO iterations of 2 x 4 x 256
GAP = 100.0  # best evaluation with normalization over the best without


def best_eval(tmp_path: Path, normalize: bool) -> float:
    cfg = make_cfg(
        tmp_path,
        "env_cfg.id=tests.support.scaled_envs:ScaledPendulum",
        f"env_cfg.normalize_obs={str(normalize).lower()}",
        "general_cfg.mp_backend=single",
        "general_cfg.max_step=200",
        f"general_cfg.max_env_steps={BUDGET}",
        f"general_cfg.reward_threshold={STOP_AT}",
        "general_cfg.seed=2",
        "general_cfg.save_fig=false",
        yaml_path=PENDULUM_PPO,
    )
    summary = run(cfg).summary
    return max(e["return_mean"] for e in summary["eval_history"])


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_normalized_observations_learn_far_better_than_raw_ones_at_the_same_seed(
    tmp_path: Path,
) -> None:
    with_norm = best_eval(tmp_path / "norm", normalize=True)
    without = best_eval(tmp_path / "raw", normalize=False)
    assert with_norm >= without + GAP, (
        f"best eval {with_norm:.1f} with normalize_obs, {without:.1f} without"
    )
