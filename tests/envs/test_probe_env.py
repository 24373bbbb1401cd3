"""probe_env: one env built with its wrappers; what the user must fix is one line."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest

from envs import EnvConfig, EnvSpecError, probe_env
from tests.support.runs import needs_extra, run_python

EXTRA_ENVS = "tests.support.extra_envs"


def _one_line_error(cfg: EnvConfig) -> str:
    with pytest.raises(EnvSpecError) as info:
        probe_env(cfg)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_spaces_of_the_wrapped_env() -> None:
    obs, act = probe_env(EnvConfig(id="CartPole-v1"))
    assert obs.shape == (4,) and act == gym.spaces.Discrete(2)
    obs, _ = probe_env(EnvConfig(id="envs.toy_image:ToyImageEnv", wrappers=["channels_first"]))
    assert obs.shape == (3, 16, 16) and obs.dtype == np.uint8


def test_dependency_not_installed_names_the_extra() -> None:
    message = _one_line_error(EnvConfig(id=f"{EXTRA_ENVS}:NeedsBox2DEnv"))
    assert message.startswith(f"env_cfg.id='{EXTRA_ENVS}:NeedsBox2DEnv' needs the box2d extra")
    assert 'pip install -r requirements-box2d.txt (or pip install "gymnasium[box2d]")' in message


def test_import_error_names_the_extra_by_module() -> None:
    message = _one_line_error(EnvConfig(id=f"{EXTRA_ENVS}:NeedsMujocoEnv"))
    assert "mujoco extra" in message and "requirements-mujoco.txt" in message
    assert "gymnasium[mujoco]" in message


def test_wrapper_without_opencv_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # opencv not installed, simulated
    cfg = EnvConfig(id="envs.toy_image:ToyImageEnv", wrappers=["resize"])
    message = _one_line_error(cfg)
    assert message.startswith("env_cfg.wrappers: resize on envs.toy_image:ToyImageEnv")
    assert "pip install -r requirements-atari.txt" in message


def test_missing_rom_says_reinstall() -> None:
    message = _one_line_error(EnvConfig(id=f"{EXTRA_ENVS}:MissingRomEnv"))
    assert "Atari ROM" in message
    assert "pip install --force-reinstall -r requirements-atari.txt" in message


def test_bad_kwargs_are_one_line() -> None:
    message = _one_line_error(EnvConfig(id="CartPole-v1", kwargs={"gravty": 9.8}))
    assert "env_cfg.kwargs" in message and "gravty" in message


def test_a_bug_in_the_env_keeps_its_traceback() -> None:
    with pytest.raises(ZeroDivisionError):
        probe_env(EnvConfig(id=f"{EXTRA_ENVS}:BuggyEnv"))


def test_gymnasium_box2d_env() -> None:
    needs_extra("Box2D", "requirements-box2d.txt")
    obs, act = probe_env(EnvConfig(id="LunarLander-v3"))
    assert obs.shape == (8,) and act == gym.spaces.Discrete(4)


def test_gymnasium_mujoco_env_names_the_extra_when_missing() -> None:
    try:
        import mujoco  # noqa: F401
    except ImportError:
        message = _one_line_error(EnvConfig(id="HalfCheetah-v5"))
        assert "mujoco extra" in message and "gymnasium[mujoco]" in message
    else:
        assert probe_env(EnvConfig(id="HalfCheetah-v5"))[1].shape == (6,)


def test_gymnasium_box2d_env_without_box2d_in_a_fresh_process() -> None:
    script = (
        "import sys\n"
        "sys.modules['Box2D'] = None  # Box2D not installed, simulated\n"
        "from envs import EnvConfig, EnvSpecError, probe_env\n"
        "try:\n"
        "    probe_env(EnvConfig(id='LunarLander-v3'))\n"
        "except EnvSpecError as exc:\n"
        "    print(exc)\n"
    )
    out = run_python(script)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith("env_cfg.id='LunarLander-v3' needs the box2d extra")
    assert 'pip install -r requirements-box2d.txt (or pip install "gymnasium[box2d]")' in out.stdout
