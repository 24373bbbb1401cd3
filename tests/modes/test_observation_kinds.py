"""Each observation kind a user brings (Dict, Tuple, Discrete, and a Dict holding an image)
goes through a whole run in one process: training with online evaluation, a checkpoint,
trajectories with the observations as the env gave them, then test mode (with a gif) from
that checkpoint. Learning on them is shown on Ray in ``tests/learning``."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from envs.goal_grid import GoalGridEnv
from envs.observations import PackedLayout
from joyrl_ray import export_minari
from joyrl_ray.run import trajectories
from joyrl_ray.run.runner import run
from tests.support.cli_runs import train_in_process
from tests.support.runs import ROOT, make_cfg, needs_extra

QUICK = (
    "general_cfg.mp_backend=single",
    "general_cfg.seed=3",
    "general_cfg.collect_traj=true",
    "general_cfg.online_eval_episode=3",
    "general_cfg.reward_threshold=null",
    "general_cfg.save_fig=false",
)
DQN_QUICK = (
    "general_cfg.max_env_steps=800",
    "general_cfg.model_save_fre=100",
    "algo_cfg.learn_start=300",
)
#: kind -> (config, overrides, the packed fields of an observation (None: not packed))
KINDS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...] | None]] = {
    "dict": ("goalgrid_dqn", DQN_QUICK, ("goal", "pos")),
    "tuple": (
        "goalgrid_ppo",
        ("general_cfg.max_env_steps=2048", "env_cfg.kwargs={observation: tuple}"),
        ("0", "1"),
    ),
    "discrete": ("frozenlake_dqn", DQN_QUICK, None),
    "dict_with_image": (
        "goalgrid_dqn",
        (
            *DQN_QUICK,
            "env_cfg.id=tests.support.space_envs:ImageDictEnv",
            "algo_cfg.value_layers=[{layer_type: conv2d, layer_dim: [8], kernel_size: 4, "
            "stride: 4}, {layer_type: linear, layer_dim: [32]}]",
        ),
        ("image", "time"),
    ),
}

RENDERED = ("dict", "tuple")  # the goal grid draws itself; FrozenLake would need pygame


def _observation_space(kind: str) -> gym.Space:
    if kind == "discrete":
        return gym.make("FrozenLake-v1").observation_space
    if kind == "dict_with_image":
        from tests.support.space_envs import ImageDictEnv

        return ImageDictEnv().observation_space
    return GoalGridEnv(observation=kind).observation_space


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.timeout(300)
def test_each_observation_kind_trains_evaluates_checkpoints_collects_and_tests(
    kind: str, tmp_path: Path
) -> None:
    config, overrides, fields = KINDS[kind]
    yaml_path = str(ROOT / "configs" / f"{config}.yaml")
    trained = run(make_cfg(tmp_path, *QUICK, *overrides, yaml_path=yaml_path))
    assert trained.exit_code == 0
    summary = trained.summary
    assert summary["updates"] > 0 and summary["eval_history"], summary.get("eval_history")
    assert (trained.task_dir / "models" / "last.pt").is_file()

    space = _observation_space(kind)
    trajs = trajectories.load(trained.task_dir)
    assert len(trajs) == summary["episodes"] > 0
    for traj in trajs:
        obs, next_obs = traj["obs"], traj["next_obs"]
        assert obs.dtype.names == fields
        np.testing.assert_array_equal(next_obs[:-1], obs[1:])
        rows = [PackedLayout(space).unpack(o) for o in obs] if fields else list(obs)
        assert all(space.contains(row) for row in rows)

    if kind == "dict_with_image":  # the conv layers went to the image key
        state = torch.load(trained.task_dir / "models" / "last.pt", weights_only=False)
        conv_keys = [k for k in state["policy"]["q_net"] if "convs.0" in k]
        assert conv_keys, list(state["policy"]["q_net"])

    tested = run(
        make_cfg(
            tmp_path,
            *QUICK,
            *overrides,
            "general_cfg.mode=test",
            f"general_cfg.load_path={trained.task_dir.name}",
            "general_cfg.max_episode=2",
            "general_cfg.collect_traj=false",
            *(("env_cfg.render_mode=rgb_array",) if kind in RENDERED else ()),
            yaml_path=yaml_path,
        )
    )
    assert tested.exit_code == 0
    assert tested.summary["episodes"] == 2
    if kind in RENDERED:
        assert (tested.task_dir / "videos" / "video.gif").is_file()


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_sac_on_dict_observations_with_box_actions_runs_on_ray(ray_session, tmp_path: Path) -> None:
    # The runner as main.py calls it, on the session's Ray: its workers, learner and
    # DataServer are real Ray actors, each building the policy for the dict observations.
    summary = train_in_process(
        tmp_path,
        "pendulum_sac",
        (
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=600",
            "general_cfg.model_save_fre=100",
            "general_cfg.online_eval_episode=3",
            "env_cfg.id=envs.goal_grid:GoalGridEnv",
            "env_cfg.kwargs={actions: continuous}",
            "algo_cfg.learn_start=200",
            "algo_cfg.random_steps=200",
            "algo_cfg.batch_size=32",
        ),
        threshold=None,
    )
    assert summary["algo"] == "SAC" and summary["stop_reason"] == "max_env_steps"
    assert summary["updates"] > 0 and summary["eval_history"]
    returns = [e["return_mean"] for e in summary["eval_history"]]
    assert all(-0.2 - 1e-9 <= r <= 1.0 for r in returns), returns  # GoalGrid: -0.01 a step


def test_dict_observations_export_to_minari_as_dicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    minari = needs_extra("minari", "requirements-minari.txt")
    needs_extra("h5py", "requirements-minari.txt")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    yaml_path = str(ROOT / "configs" / "goalgrid_dqn.yaml")
    trained = run(
        make_cfg(tmp_path, *QUICK, *DQN_QUICK, "general_cfg.online_eval=false", yaml_path=yaml_path)
    )
    assert export_minari.main([str(trained.task_dir), "joyrl/goalgrid-dqn-v0"]) == 0
    dataset = minari.load_dataset("joyrl/goalgrid-dqn-v0")
    trajs = trajectories.load(trained.task_dir)
    assert dataset.total_episodes == len(trajs) > 0
    for episode, traj in zip(dataset.iterate_episodes(), trajs, strict=True):
        for key in ("pos", "goal"):
            np.testing.assert_array_equal(episode.observations[key][:-1], traj["obs"][key])
            np.testing.assert_array_equal(episode.observations[key][-1], traj["next_obs"][-1][key])
        np.testing.assert_array_equal(episode.actions, traj["actions"])


#: algorithm -> (its shipped config, overrides for a few updates on the goal grid)
#: A few DQN updates: 200, with an evaluation every 100.
DQN_FEW = (
    "general_cfg.max_env_steps=600",
    "general_cfg.model_save_fre=100",
    "algo_cfg.learn_start=200",
    "algo_cfg.batch_size=32",
)
EVERY_ALGORITHM: dict[str, tuple[str, tuple[str, ...]]] = {
    "DQN": ("goalgrid_dqn", DQN_FEW),
    "DuelingDQN": ("goalgrid_dqn", (*DQN_FEW, "general_cfg.algo_name=DuelingDQN")),
    "PPO": ("goalgrid_ppo", ("general_cfg.max_env_steps=2048",)),
    "APPO": ("cartpole_appo", ("general_cfg.max_env_steps=2048",)),
    "IMPALA": ("cartpole_impala", ("general_cfg.max_env_steps=2048",)),
    # Sequences of 2 + 6 steps from one worker's envs, about 20 updates, an evaluation every 10.
    "R2D2": (
        "cartpole_novel_r2d2",
        (
            "general_cfg.n_workers=1",
            "general_cfg.n_replay_shards=1",
            "general_cfg.max_env_steps=600",
            "general_cfg.model_save_fre=10",
            "env_cfg.wrappers=[]",
            "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [32], activation: relu}, "
            "{layer_type: lstm, layer_dim: [32], activation: none}]",
            "algo_cfg.learn_start=200",
            "algo_cfg.batch_size=16",
            "algo_cfg.sequence_len=6",
            "algo_cfg.burn_in=2",
            "algo_cfg.sequence_overlap=4",
            "algo_cfg.n_step=3",
        ),
    ),
    # An update per env step: a checkpoint (and an evaluation) every 50 updates, not each.
    **{
        algo: (
            f"pendulum_{algo.lower()}",
            (
                "general_cfg.max_env_steps=300",
                "general_cfg.model_save_fre=50",
                "env_cfg.kwargs={actions: continuous}",
                "algo_cfg.learn_start=100",
                "algo_cfg.random_steps=100",
                "algo_cfg.batch_size=32",
            ),
        )
        for algo in ("SAC", "TD3")
    },
}


@pytest.mark.parametrize("algo", list(EVERY_ALGORITHM))
@pytest.mark.parametrize("observation", ["dict", "tuple"])
@pytest.mark.timeout(300)
def test_every_algorithm_updates_and_evaluates_on_nested_observations(
    algo: str, observation: str, tmp_path: Path
) -> None:
    config, overrides = EVERY_ALGORITHM[algo]
    result = run(
        make_cfg(
            tmp_path,
            *QUICK,
            "general_cfg.collect_traj=false",
            "general_cfg.model_save_fre=1",
            *overrides,
            "env_cfg.id=envs.goal_grid:GoalGridEnv",
            f"env_cfg.kwargs.observation={observation}",
            yaml_path=str(ROOT / "configs" / f"{config}.yaml"),
        )
    )
    assert result.exit_code == 0
    assert result.summary["algo"] == algo
    assert result.summary["updates"] > 0 and result.summary["eval_history"]
