"""Config precedence and the one-line errors for bad input (exit code 2, before anything runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

import main
from joyrl_ray.config import ConfigError, RunConfig, load_config
from tests.support.runs import ROOT, run_main

JOYRL_YAML = """
general_cfg:
  algo_name: DQN # algo name
  device: cpu # device, cpu or cuda
  env_name: gym # env name, differ from env_id in env_cfgs
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


BAD_INPUT = [
    (["general_cfg.sed=1"], "general_cfg.seed"),  # unknown key, closest valid key named
    (["algo_cfg.learning_rate=0.1"], "algo_cfg.learning_rate"),
    (["general_cfg.n_workers=two"], "general_cfg.n_workers"),  # wrong type
    (["general_cfg.algo_name=Foo"], "DQN"),  # unknown algo: lists the registered ones
    (["env_cfg.id=CartPol-v1"], "CartPole-v1"),  # unknown env id: closest ids
    (["env_cfg.id=nosuchmodule:Env"], "nosuchmodule"),
    (["algo_cfg.value_layers=[{layer_type: lstm, layer_dim: [8], activation: relu}]"], "lstm"),
    (["algo_cfg.buffer_type=ring"], "REPLAY_QUE"),
    (["general_cfg.mode=play"], "train, test"),
    (["seed=1"], "section.key=value"),
]


@pytest.mark.parametrize(("overrides", "named"), BAD_INPUT)
def test_bad_overrides_exit_2_with_one_line(overrides, named, capsys) -> None:
    code = main.main(overrides)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and named in err


def test_missing_yaml_file(tmp_path: Path, capsys) -> None:
    assert main.main(["--yaml", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_malformed_yaml_names_the_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("general_cfg:\n  seed: 1\n  mode: [train\nalgo_cfg: {}\n")
    assert main.main(["--yaml", str(path)]) == 2
    err = capsys.readouterr().err
    assert "malformed yaml" in err and "line 4" in err


def test_unknown_key_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("algo_cfg:\n  epsilon_decy: 500\n")
    with pytest.raises(ConfigError, match="did you mean algo_cfg.epsilon_decay"):
        load_config(str(path), [])


def test_bad_input_from_the_command_line_prints_no_traceback(tmp_path: Path) -> None:
    result = run_main("general_cfg.sed=1", f"general_cfg.tasks_dir={tmp_path}")
    assert result.returncode == 2
    assert (
        result.stderr.strip().splitlines() == [result.stderr.strip()]
        and "did you mean general_cfg.seed" in result.stderr
    )
    assert not list(tmp_path.iterdir())  # nothing started, nothing written
