"""The update-to-data throttle holds workers back when the learner trails the ratio.

A learner made slow on purpose (every update sleeps 10 ms, so at most ~100 updates/s)
learns at ``updates_per_step = 1`` while two workers could step CartPole ten times faster.
``results/progress.csv`` has the run's counters every half second; at every row the env
steps may run ahead of what the ratio allows by at most the lag tolerance, plus what is
already on its way when the throttle engages: the pushes in flight of every worker, the
updates the learner holds granted but not done (two rounds), and the updates since its last
report (it reports once a second).
"""

from __future__ import annotations

import csv

import pytest

from joyrl_ray.learner import MAX_UPDATES_PER_ROUND, REPORT_EVERY_S
from tests.conftest import run_main

RATIO = 1.0
LEARN_START = 200
TOLERANCE = 32
N_WORKERS, N_ENVS, CHUNK, IN_FLIGHT = 2, 1, 16, 2
SLEEP_S = 0.01
MAX_ENV_STEPS = 1500


@pytest.mark.slow
def test_a_slow_learner_holds_the_workers_back_at_every_report(tmp_path):
    done = run_main(
        "general_cfg.mp_backend=ray",
        "general_cfg.algo_name=tests.slow_algos:SLOW_DQN",
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
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (task,) = [p for p in tmp_path.iterdir() if p.is_dir()]
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
    # Without the throttle the workers (thousands of steps/s) would be far ahead of a
    # learner doing at most ~100 updates/s: the bound is tight relative to that.
    duration = learning[-1]["wall_time_s"] - learning[0]["wall_time_s"]
    assert learning[-1]["env_steps"] - learning[0]["env_steps"] <= (updates_per_s * 1.2 + 50) * (
        duration + 1
    )
