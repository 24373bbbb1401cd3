"""The vector envs a worker steps (``envs/vector.py``): closing one that broke."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

from envs.vector import close_vector_env, make_vector_env


def test_a_broken_async_env_whose_sub_env_died_mid_step_is_closed() -> None:
    """A sub-env SIGKILLed while its step runs: gymnasium's own close would first wait for
    that step's answer from the dead pipe (EOFError); the worker's close ends them all."""
    envs = make_vector_env([lambda: gym.make("CartPole-v1")] * 2, "async")
    envs.reset(seed=1)
    envs.step_async(envs.action_space.sample())
    os.kill(envs.processes[0].pid, signal.SIGKILL)
    with pytest.raises((EOFError, OSError)):
        envs.step_wait(timeout=30)
    close_vector_env(envs, broken=True)
    assert envs.closed
    assert not any(process.is_alive() for process in envs.processes)
