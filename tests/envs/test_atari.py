"""ALE ids and gymnasium's Atari preprocessing: uint8 [4, 84, 84] frames for conv nets."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from envs import EnvConfig, EnvSpecError, make_env, probe_env
from tests.support.runs import needs_extra, run_python

needs_extra("ale_py", "requirements-atari.txt")
needs_extra("cv2", "requirements-atari.txt")

ATARI = ["atari_preprocessing", "frame_stack"]


def _check_frames(env: gym.Env) -> None:
    obs, _ = env.reset(seed=1)
    assert env.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    for _ in range(3):
        obs, reward, *_ = env.step(env.action_space.sample())
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and obs.max() > 0


def test_ale_id_with_atari_preprocessing_and_frame_stack() -> None:
    env = make_env(EnvConfig(id="ALE/Pong-v5", wrappers=ATARI))
    # AtariPreprocessing skips frames itself: the emulator's own skipping is turned off.
    assert env.unwrapped._frameskip == 1
    assert env.action_space == gym.spaces.Discrete(6)
    _check_frames(env)
    env.close()


def test_gymnasium_module_form_of_an_ale_id() -> None:
    env = make_env(EnvConfig(id="ale_py:ALE/Breakout-v5", wrappers=ATARI))
    assert env.spec.id == "ALE/Breakout-v5" and env.action_space == gym.spaces.Discrete(4)
    _check_frames(env)
    env.close()


def test_ale_id_in_a_fresh_process_imports_ale_py_for_the_user() -> None:
    script = (
        "import sys, gymnasium as gym\n"
        "from envs import EnvConfig, check_env_id, make_env\n"
        "assert 'ale_py' not in sys.modules and 'ALE/Pong-v5' not in gym.registry\n"
        "check_env_id('ALE/Pong-v5')\n"
        "env = make_env(EnvConfig(id='PongNoFrameskip-v4'))\n"
        "print(env.spec.id)\n"
    )
    out = run_python(script)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "PongNoFrameskip-v4"
    assert "A.L.E" not in out.stderr  # the emulator's banner is silenced


def test_frameskip_set_by_the_user_is_kept_and_its_conflict_is_one_line() -> None:
    cfg = EnvConfig(id="ALE/Pong-v5", wrappers=ATARI, kwargs={"frameskip": 4})
    with pytest.raises(EnvSpecError, match="atari_preprocessing on ALE/Pong-v5.*frame-skip"):
        probe_env(cfg)
    cfg = EnvConfig(id="ALE/Pong-v5", wrappers=ATARI, kwargs={"frameskip": 4}, atari_frame_skip=1)
    assert probe_env(cfg)[0].shape == (4, 84, 84)


def test_atari_preprocessing_options() -> None:
    cfg = EnvConfig(
        id="ALE/Pong-v5",
        wrappers=ATARI,
        frame_stack=2,
        atari_screen_size=64,
        atari_noop_max=0,
        atari_terminal_on_life_loss=True,
    )
    assert probe_env(cfg)[0].shape == (2, 64, 64)


def test_atari_preprocessing_refuses_a_non_atari_env() -> None:
    with pytest.raises(EnvSpecError, match="needs an Atari env"):
        probe_env(EnvConfig(id="CartPole-v1", wrappers=ATARI))
