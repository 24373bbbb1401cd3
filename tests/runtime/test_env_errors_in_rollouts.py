"""An env that raises inside an on-policy rollout costs only its failed step.

A real Worker steps a real vector of envs into a real rollout queue, in this process (the
``mp_backend: single`` arrangement). The env counts its steps in its observation and raises
on chosen steps of the whole vector, so the rollout can be read cell by cell: it keeps its
full length, the failed steps are marked not learned from (``valid``), the step before
each ends its episode as truncated, the env goes on from a fresh reset, and only the
failed steps are counted as dropped.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from joyrl_ray.batch import OBS, TERMINATED, TRUNCATED, VALID
from tests.runtime.test_worker_transitions import started_worker

GOAL, N_ENVS, ROLLOUT = 6, 3, 20
# The steps of the whole vector that raise (counted over every env): step s is env
# (s - 1) % 3 of vector step (s - 1) // 3, so 26 is env 1 at row 8 and 48 env 2 at row 15,
# both mid-episode.
FAIL_AT = {26, 48}


class CountingEnvThatFails(gym.Env):
    """Observation = steps taken in this episode; reward 1; ends after ``GOAL`` steps.
    ``step`` raises on the whole process's steps ``FAIL_AT``."""

    observation_space = gym.spaces.Box(0.0, 100.0, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)
    steps_in_process = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        CountingEnvThatFails.steps_in_process += 1
        if CountingEnvThatFails.steps_in_process in FAIL_AT:
            raise RuntimeError(f"simulator crashed at step {self.t}")
        self.t += 1
        return np.array([self.t], dtype=np.float32), 1.0, self.t >= GOAL, False, {}


def test_an_env_error_in_a_rollout_loses_only_the_failed_step_and_cuts_that_envs_episode() -> None:
    CountingEnvThatFails.steps_in_process = 0
    worker, planes = started_worker(
        [
            "general_cfg.algo_name=PPO",
            f"env_cfg.id={__name__}:CountingEnvThatFails",
            "general_cfg.seed=1",
            f"general_cfg.n_envs_per_worker={N_ENVS}",
            f"algo_cfg.rollout_len={ROLLOUT}",
        ],
        ROLLOUT * N_ENVS,
    )
    coordinator = planes.coordinator_object
    assert coordinator.publish_weights(worker.policy.get_weights(), version=1)
    worker.step(0.0)  # one rollout, into the rollout queue
    worker.finish()
    worker.close()
    (rollout,) = [queued.batch for queued in planes.objects[0].rollouts]
    obs = rollout[OBS][..., 0]

    # Full length, and exactly the two failed steps not learned from.
    assert obs.shape == (ROLLOUT, N_ENVS)
    failed = list(zip(*np.nonzero(~rollout[VALID]), strict=True))
    assert failed == [(8, 1), (15, 2)]
    ended = rollout[TERMINATED] | rollout[TRUNCATED]
    for t, i in failed:
        assert rollout[TRUNCATED][t, i] and not rollout[TERMINATED][t, i]
        # The step before the failed one ends its episode as truncated (bootstrapped), and
        # the env goes on from a fresh reset.
        assert rollout[TRUNCATED][t - 1, i] and not rollout[TERMINATED][t - 1, i]
        assert obs[t, i] == obs[t - 1, i] + 1  # the failed step started where the last ended
        assert obs[t + 1, i] == 0
    # Everywhere else the envs step as they would: the count goes up by one or restarts.
    kept = rollout[VALID].copy()
    kept[[t - 1 for t, _ in failed], [i for _, i in failed]] = False
    follows = np.where(ended[:-1], 0, obs[:-1] + 1)
    np.testing.assert_array_equal(obs[1:][kept[:-1]], follows[kept[:-1]])

    # Only the two failed steps are lost, counted; the rest are stored.
    reports = coordinator.drain_reports()
    assert len(reports.env_errors) == 2
    assert reports.env_errors[0] == (
        "worker 0: env 1 step raised RuntimeError: simulator crashed at step 2"
    )
    queue = planes.objects[0].stats()
    assert queue.transitions_stored == 0  # stored when learned from: no learner ran
    collected, dropped, _ = coordinator.desks["default"].books.totals(lambda *_: False)
    assert collected == ROLLOUT * N_ENVS
    assert dropped == {"env_error": 2}
    # The episodes cut short by the errors are not reported as ended; every other one is.
    assert {(e.ret, e.length) for e in reports.episodes} == {(float(GOAL), GOAL)}
    whole = int(((rollout[TERMINATED]) & rollout[VALID]).sum())
    assert len(reports.episodes) == whole
