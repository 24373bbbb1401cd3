"""The vector envs a worker steps (``envs/vector.py``): closing one that broke."""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import pytest

from envs.latency import StepLatency
from envs.vector import close_vector_env, make_vector_env

STEP_S = 2.0  # long enough to be killed in the middle of a step


def test_a_broken_async_env_whose_sub_env_died_mid_step_is_closed() -> None:
    """A sub-env SIGKILLed while its step runs: gymnasium's own close would first wait for
    that step's answer from the dead pipe (EOFError); the worker's close ends them all."""
    envs = make_vector_env([lambda: StepLatency(gym.make("CartPole-v1"), STEP_S)] * 2, "async")
    envs.reset(seed=1)
    envs.step_async(envs.action_space.sample())
    time.sleep(STEP_S / 4)  # the sub-envs are inside their step now
    os.kill(envs.processes[0].pid, signal.SIGKILL)
    with pytest.raises((EOFError, OSError)):
        envs.step_wait(timeout=30)
    close_vector_env(envs, broken=True)
    assert envs.closed
    assert not any(process.is_alive() for process in envs.processes)
