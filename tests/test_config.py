"""Config precedence (defaults, then yaml, then the command line); bad input: test_bad_input.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from joyrl_ray.config import RunConfig, load_config
from tests.support.runs import ROOT

JOYRL_YAML = """
general_cfg:
  algo_name: DQN # algo name
  device: cpu # device, cpu or cuda
  mode: train # run mode: train, test
  collect_traj: true
  mp_backend: single # multi-processing mode: null(default), ray
  n_workers: 1 # number of workers if using multi-processing, default 1
  load_checkpoint: false # if load checkpoint or not
  load_path: Train_CartPole-v1_DQN_20221026-054757 # config path in 'tasks' dir
  max_episode: 100 # max episodes, set -1 to keep running
  max_step: 200 # max steps per episode
  seed: 1 # random seed, set 0 not to use seed
  online_eval: true # if online eval or not
  online_eval_episode: 10 # online eval episodes
  model_save_fre: 500 # update step frequency of saving model
  save_best_model: # if save the best model or not, online_eval must be true)
  save_fig: true # if save fig or not
  show_fig: false # if show fig or not

algo_cfg:
  value_layers:
    - layer_type: linear
      layer_dim: [256]
      activation: relu
    - layer_type: Linear
      layer_size: [128]
      activation: LeakyReLU
  batch_size: 64
  buffer_type: REPLAY_QUE
  buffer_size: 100000
  epsilon_decay: 500
  epsilon_end: 0.01
  epsilon_start: 0.95
  gamma: 0.95
  lr: 0.0001
  target_update: 4
env_cfg:
  id: CartPole-v1
  render_mode: null
"""


@pytest.fixture
def joyrl_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "joyrl.yaml"
    path.write_text(JOYRL_YAML)
    return path


def test_joyrl_quick_start_yaml_is_accepted_with_its_meaning(joyrl_yaml: Path) -> None:
    cfg = RunConfig.from_omegaconf(load_config(str(joyrl_yaml), []))
    assert cfg.general.collect_traj is True
    assert cfg.general.max_episode == 100 and cfg.general.max_step == 200
    assert cfg.general.save_best_model is None  # blank in yaml: the default behaviour
    assert cfg.algo.gamma == 0.95 and cfg.algo.target_update == 4
    assert cfg.algo.epsilon_decay == 500 and cfg.algo.buffer_type == "REPLAY_QUE"
    assert [layer.layer_dim for layer in cfg.algo.value_layers] == [[256], [128]]
    assert cfg.algo.value_layers[1].activation == "LeakyReLU"


def test_precedence_defaults_then_yaml_then_cli(joyrl_yaml: Path) -> None:
    defaults = RunConfig.from_omegaconf(load_config(None, []))
    from_yaml = RunConfig.from_omegaconf(load_config(str(joyrl_yaml), []))
    from_cli = RunConfig.from_omegaconf(
        load_config(str(joyrl_yaml), ["algo_cfg.gamma=0.5", "general_cfg.seed=7"])
    )
    assert defaults.algo.gamma == 0.99 and defaults.general.seed == 0
    assert from_yaml.algo.gamma == 0.95 and from_yaml.general.seed == 1
    assert from_cli.algo.gamma == 0.5 and from_cli.general.seed == 7
    assert from_cli.algo.lr == 0.0001  # untouched yaml value survives the override
    assert defaults.algo.batch_size == 64 and defaults.env.id == "CartPole-v1"


def test_algo_defaults_follow_the_merged_algo_name() -> None:
    cfg = RunConfig.from_omegaconf(load_config(None, ["general_cfg.algo_name=DuelingDQN"]))
    assert cfg.algo.dueling is True and cfg.algo.double_q is True


def test_shipped_configs_load() -> None:
    for path in sorted((ROOT / "configs").glob("*.yaml")):
        load_config(str(path), [])


def test_a_command_line_policy_mapping_replaces_the_yamls_and_drops_policies_left_idle():
    # The yaml shares one policy between both seats; the command line gives the second seat
    # a random opponent. A first-match mapping merged key by key would keep the yaml's '*'
    # first and map both seats to the shared policy again.
    cfg = RunConfig.from_omegaconf(
        load_config(
            str(ROOT / "configs" / "tictactoe_dqn.yaml"),
            [
                "multi_agent.policies={learner: {}, opponent: {fixed: random}}",
                "multi_agent.policy_mapping={player_1: learner, player_2: opponent}",
            ],
        )
    )
    assert cfg.multi_agent is not None
    assert cfg.multi_agent.policy_mapping == {"player_1": "learner", "player_2": "opponent"}
    assert list(cfg.multi_agent.policies) == ["learner", "opponent"]  # the yaml's is idle
    # A policy the command line names stays, mapped or not (it is refused later, by name).
    kept = load_config(
        str(ROOT / "configs" / "tictactoe_dqn.yaml"),
        ["multi_agent.policies={spare: {}}", "multi_agent.policy_mapping={'*': tictactoe}"],
    )
    assert list(kept.multi_agent.policies) == ["tictactoe", "spare"]


def test_the_reward_threshold_defaults_to_the_envs_registered_one_and_null_turns_it_off() -> None:
    def threshold(*overrides: str) -> float | None:
        return RunConfig.from_omegaconf(load_config(None, list(overrides))).general.reward_threshold

    assert threshold() == 475.0  # CartPole-v1's registration
    assert threshold("env_cfg.id=Acrobot-v1") == -100.0
    assert threshold("general_cfg.reward_threshold=null") is None  # the whole budget
    assert threshold("general_cfg.reward_threshold=200") == 200.0
    # No registered threshold, or no online evaluation to reach it: none.
    assert threshold("env_cfg.id=Pendulum-v1", "general_cfg.algo_name=PPO") is None
    assert threshold("general_cfg.online_eval=false") is None
    # A threshold given turns the online evaluations on.
    given = load_config(None, ["general_cfg.online_eval=false", "general_cfg.reward_threshold=9"])
    assert RunConfig.from_omegaconf(given).general.online_eval is True
