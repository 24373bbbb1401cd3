"""env_cfg.id as gymnasium takes it: ids, module:EnvId, module:ClassName, one-line errors."""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import pytest

from envs import EnvConfig, EnvSpecError, check_env_id, check_wrappers, make_env
from joyrl_ray.run.runner import run
from tests.support import registering_env
from tests.support.registering_env import ENV_ID, CountdownEnv
from tests.support.runs import make_cfg

MODULE = "tests.support.registering_env"


def _steps_to_done(env: gym.Env) -> int:
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        *_, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            return steps


def test_module_env_id_imports_the_module_then_makes_its_id(monkeypatch) -> None:
    # As in a fresh worker process: the module is not imported and its id not registered.
    monkeypatch.delitem(sys.modules, MODULE)
    monkeypatch.delitem(gym.registry, ENV_ID)
    check_env_id(f"{MODULE}:{ENV_ID}")
    assert ENV_ID in gym.registry
    env = make_env(EnvConfig(id=f"{MODULE}:{ENV_ID}", kwargs={"length": 3}))
    assert env.spec.id == ENV_ID and env.unwrapped.length == 3
    assert _steps_to_done(env) == 3


def test_module_env_id_matches_gymnasium_make() -> None:
    ours = make_env(EnvConfig(id=f"{MODULE}:{ENV_ID}"), max_episode_steps=2)
    theirs = gym.make(f"{MODULE}:{ENV_ID}", max_episode_steps=2)
    assert ours.spec.id == theirs.spec.id == ENV_ID
    assert _steps_to_done(ours) == _steps_to_done(theirs) == 2


def test_module_class_name_still_builds_the_class() -> None:
    env = make_env(EnvConfig(id=f"{MODULE}:CountdownEnv", kwargs={"length": 2}))
    assert isinstance(env, CountdownEnv) and _steps_to_done(env) == 2
    limited = make_env(EnvConfig(id=f"{MODULE}:CountdownEnv"), max_episode_steps=4)
    assert _steps_to_done(limited) == 4


def test_name_the_module_neither_holds_nor_registers() -> None:
    with pytest.raises(EnvSpecError, match=f"{MODULE}.*did you mean {ENV_ID}") as info:
        check_env_id(f"{MODULE}:JoyrlCountdown-v9")
    assert "\n" not in str(info.value)
    assert registering_env.ENV_ID in gym.registry


def test_unknown_id_names_close_matches() -> None:
    with pytest.raises(EnvSpecError, match="did you mean CartPole-v1") as info:
        check_env_id("CartPole-v2")
    assert "\n" not in str(info.value)


def test_missing_user_module_is_not_mistaken_for_an_extra() -> None:
    with pytest.raises(EnvSpecError, match="cannot import module 'my_mujoco_envs'") as info:
        check_env_id("my_mujoco_envs:Walker")
    assert "requirements-" not in str(info.value)


def test_ale_ids_without_ale_py_name_the_pip_command(monkeypatch) -> None:
    # ale-py not installed, simulated: its ids unregistered and its import failing.
    for env_id in [k for k in gym.registry if k.startswith("ALE/")]:
        monkeypatch.delitem(gym.registry, env_id)
    monkeypatch.setitem(sys.modules, "ale_py", None)
    for env_id in ("ALE/Pong-v5", "ale_py:ALE/Pong-v5"):
        with pytest.raises(EnvSpecError) as info:
            check_env_id(env_id)
        message = str(info.value)
        assert "\n" not in message
        assert "atari extra" in message and "pip install -r requirements-atari.txt" in message


def test_wrapper_names_suggest_ours_for_gymnasium_class_names() -> None:
    with pytest.raises(EnvSpecError, match="did you mean atari_preprocessing"):
        check_wrappers(["AtariPreprocessing"])
    with pytest.raises(EnvSpecError, match="did you mean frame_stack"):
        check_wrappers(["FrameStackObservation"])
    with pytest.raises(EnvSpecError, match="atari_preprocessing must come first"):
        check_wrappers(["frame_stack", "atari_preprocessing"])
    check_wrappers(["atari_preprocessing", "frame_stack"])


def test_a_module_constant_is_not_taken_for_an_env() -> None:
    with pytest.raises(EnvSpecError, match="has no env class 'ENV_ID'"):
        check_env_id(f"{MODULE}:ENV_ID")


@pytest.mark.slow
def test_every_ray_role_resolves_a_module_env_id(ray_session, tmp_path) -> None:
    # Workers, learner and DataServer are Ray actors, each a process of its own (the runner
    # as main.py calls it, on the session's Ray): each must import the module (registering
    # the id) by itself. The evaluator is a thread of the driver, this process.
    result = run(
        make_cfg(
            tmp_path,
            f"env_cfg.id={MODULE}:{ENV_ID}",
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=400",
            "general_cfg.model_save_fre=100",
            "general_cfg.online_eval_episode=2",
            "general_cfg.save_fig=false",
            "algo_cfg.learn_start=64",
            "algo_cfg.batch_size=32",
            "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [32], activation: relu}]",
        )
    )
    assert result.exit_code == 0, result.summary
    (task,) = list(tmp_path.iterdir())
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["env_id"] == f"{MODULE}:{ENV_ID}" and summary["eval_history"]
    assert summary["eval_history"][-1]["return_mean"] == 5.0  # JoyrlCountdown-v0: length 5
