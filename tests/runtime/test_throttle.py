"""The update-to-data throttle holds workers back when the learner trails the ratio.

A learner made slow on purpose (every update sleeps 10 ms, so at most ~100 updates/s)
learns at ``updates_per_step = 1`` while two workers could step CartPole ten times faster.
``results/progress.csv`` has the run's counters every half second; at every row the env
steps may run ahead of what the ratio allows by at most the lag tolerance, plus what is
already on its way when the throttle engages: the pushes in flight of every worker, the
updates the learner holds granted but not done (two rounds), and the updates since its last
report. The tolerance asked for is far above the default (64), and the workers must reach
it: a throttle that ignored ``learner_lag_tolerance`` would hold them back much sooner, and
no throttle would let them run ahead by the whole run.
"""

from __future__ import annotations

import csv

import pytest

from joyrl_ray.roles.learner.learner import MAX_UPDATES_PER_ROUND, REPORT_EVERY_S
from joyrl_ray.run.runner import run
from tests.support.procs import task_dirs
from tests.support.runs import make_cfg

RATIO = 1.0
LEARN_START = 200
TOLERANCE = 400  # updates; the default is 64
N_WORKERS, N_ENVS, CHUNK, IN_FLIGHT = 2, 1, 16, 2
SLEEP_S = 0.01
MAX_ENV_STEPS = 2000  # without a throttle, ~1700 steps ahead


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_slow_learner_holds_the_workers_back_by_the_lag_tolerance_asked_for(
    ray_session, tmp_path
):
    # The runner as main.py calls it, on the session's Ray: real actors, this process drives.
    result = run(
        make_cfg(
            tmp_path,
            "general_cfg.mp_backend=ray",
            "general_cfg.algo_name=tests.support.slow_algos:SLOW_DQN",
            f"algo_cfg.learn_sleep_s={SLEEP_S}",
            f"algo_cfg.updates_per_step={RATIO}",
            f"algo_cfg.learn_start={LEARN_START}",
            "algo_cfg.batch_size=32",
            f"general_cfg.learner_lag_tolerance={TOLERANCE}",
            f"general_cfg.n_workers={N_WORKERS}",
            f"general_cfg.n_envs_per_worker={N_ENVS}",
            f"general_cfg.worker_chunk_steps={CHUNK}",
            f"general_cfg.max_pushes_in_flight={IN_FLIGHT}",
            f"general_cfg.max_env_steps={MAX_ENV_STEPS}",
            "general_cfg.online_eval=false",
            "general_cfg.seed=2",
        )
    )
    assert result.exit_code == 0, result.summary
    (task,) = task_dirs(tmp_path)
    with (task / "results" / "progress.csv").open() as f:
        rows = [{k: float(v) for k, v in r.items() if k != "limit"} for r in csv.DictReader(f)]
    learning = [r for r in rows if r["env_steps"] > LEARN_START + 2 * N_WORKERS * CHUNK]
    assert len(learning) >= 10, rows  # the slow learner makes the run last a while

    updates_per_s = 1.0 / SLEEP_S
    on_its_way = (
        N_WORKERS * N_ENVS * CHUNK * (IN_FLIGHT + 1)  # collected before the ack said wait
        + (2 * MAX_UPDATES_PER_ROUND + REPORT_EVERY_S * updates_per_s) / RATIO
    )
    bound = TOLERANCE / RATIO + on_its_way
    ahead = [r["env_steps"] - (LEARN_START + r["updates"] / RATIO) for r in learning]
    assert max(ahead) <= bound, (max(ahead), bound)
    # The workers ran up to the tolerance asked for before they waited (the default's bound,
    # 64 plus what is on its way, is below it).
    assert max(ahead) >= TOLERANCE / RATIO, (max(ahead), TOLERANCE)
