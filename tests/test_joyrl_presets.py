"""JoyRL's later presets (tests/data/joyrl/, copied from JoyRL's presets/ folder, see the
README there) as JoyRL writes them: each loads with its keys read as JoyRL means them, one
runs verbatim through ``python main.py``, the PPO one learns CartPole within 100 of its
episodes, and the keys with no effect here are named in one warning line. The dialect's
rules on small yamls: joyrl_ray/config/joyrl_dialect.py; docs: docs/config.md, "Coming
from JoyRL"."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from joyrl_ray.config import ConfigError, RunConfig, build_config, load_config
from joyrl_ray.config.docs import joyrl_section, reference
from tests.support.cli_runs import evals, summary_of
from tests.support.procs import task_dirs
from tests.support.runs import ROOT, run_main

PRESETS = ROOT / "tests" / "data" / "joyrl"
RUN_TIMEOUT_S = 120  # the runs below take 5-20 s alone on 2 shared cores


def preset(name: str) -> Path:
    return PRESETS / f"{name}.yaml"


def loaded(name: str, *overrides: str) -> RunConfig:
    return RunConfig.from_omegaconf(load_config(str(preset(name)), list(overrides)))


def layers(layer_list: list[Any]) -> list[tuple[str, list[int], str]]:
    return [(x.layer_type, x.layer_dim, x.activation) for x in layer_list]


MLP_256_RELU = [("linear", [256], "relu")] * 2
MLP_256_TANH = [("linear", [256], "tanh")] * 2

#: What each kept preset's JoyRL keys become here (a key missing from the dialect is
#: refused at load, one mapped wrongly fails its value here).
EXPECTED: dict[str, dict[str, Any]] = {
    "CartPole-v1_DQN": {
        "general": {"algo_name": "DQN", "n_workers": 1, "device": "cpu", "lockstep": True},
        "algo": {"buffer_size": 100_000, "batch_size": 128, "updates_per_step": 1.0},
        "layers": {"value_layers": MLP_256_RELU},
    },
    "CartPole-v1_DoubleDQN": {
        "general": {"algo_name": "DoubleDQN", "device": "cpu", "lockstep": False},
        "algo": {"buffer_size": 100_000, "double_q": True, "gamma": 0.99},
        "layers": {"value_layers": MLP_256_RELU},
    },
    "CartPole-v1_DuelingDQN": {
        "general": {"algo_name": "DuelingDQN", "device": "cpu"},
        "algo": {"buffer_size": 100_000, "dueling": True, "batch_size": 128},
        "layers": {"value_layers": MLP_256_RELU},
    },
    "CartPole-v1_PPO": {
        "general": {"algo_name": "PPO", "n_workers": 10, "device": "cpu", "lockstep": True},
        "algo": {
            "rollout_len": 200,  # exps_trucation_size; x 10 interactors = its batch_size 2000
            "minibatch_size": 200,
            "n_epochs": 4,
            "clip_eps": 0.1,
            "vf_coef": 0.002,  # 2 x critic_loss_coef
            "ent_coef": 0.001,
            "gae_lambda": 1.0,  # return_form td
            "lr": 0.0003,  # one optimizer (independ_actor false): actor_lr, critic_lr unused
            "critic_lr": None,
        },
        "layers": {"actor_layers": MLP_256_RELU, "critic_layers": MLP_256_RELU},
    },
    "Pendulum-v1_TD3": {
        "general": {"algo_name": "TD3", "max_episode": 400, "max_step": 200},
        "algo": {"buffer_size": 8000, "actor_lr": 0.001, "critic_lr": 0.001, "tau": 0.005},
        "layers": {"actor_layers": MLP_256_TANH, "critic_layers": MLP_256_TANH},
    },
}
#: The warning line's keys per preset (in the line's order).
NO_EFFECT = {
    "CartPole-v1_DQN": ["general_cfg.policy_summary_fre"],
    "CartPole-v1_DoubleDQN": ["general_cfg.policy_summary_fre"],
    "CartPole-v1_DuelingDQN": ["general_cfg.policy_summary_fre"],
    "CartPole-v1_PPO": [
        "general_cfg.policy_summary_fre",
        "general_cfg.interact_summary_fre",
        "algo_cfg.actor_lr",
        "algo_cfg.critic_lr",
        "algo_cfg.gae_lambda",
        "algo_cfg.actor_branch_layers",
        "algo_cfg.critic_branch_layers",
    ],
    "Pendulum-v1_TD3": ["algo_cfg.policy_loss_weight", "algo_cfg.action_space"],
}


def test_the_kept_presets_are_the_readme_s() -> None:
    readme = (PRESETS / "README.md").read_text()
    kept = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    assert kept == sorted(EXPECTED)
    assert all(f"{name}.yaml" in readme for name in kept)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_preset_loads_with_its_keys_as_joyrl_means_them(name: str) -> None:
    cfg = loaded(name)
    expected = EXPECTED[name]
    assert cfg.general.joyrl_version is not None  # recorded as given
    assert cfg.env.wrappers == []  # JoyRL's multi-head wrappers: built in here
    for key, value in expected["general"].items():
        assert getattr(cfg.general, key) == value, (key, getattr(cfg.general, key))
    for key, value in expected["algo"].items():
        assert getattr(cfg.algo, key) == value, (key, getattr(cfg.algo, key))
    for key, value in expected["layers"].items():
        assert layers(getattr(cfg.algo, key)) == value, key


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_keys_with_no_effect_are_named_in_one_warning_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    loaded(name)
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("warning: JoyRL keys accepted with no effect here"), line
    assert line.split("): ", 1)[1].split(", ") == NO_EFFECT[name]


def test_every_key_of_the_kept_presets_is_documented() -> None:
    """Each key is in the Coming from JoyRL tables or is this project's own (and so in the
    reference tables)."""
    documented = set()
    for line in (joyrl_section() + "\n" + reference()).splitlines():
        if line.startswith("| `"):
            first, *more = line.split("`")[1].split(", ")
            section = first.split(".")[0]
            documented |= {first, *(f"{section}.{key}" for key in more)}
    for path in PRESETS.glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        keys = [f"{section}.{key}" for section, body in data.items() for key in body]
        missing = [key for key in keys if key not in documented]
        assert not missing, f"{path.name}: docs/config.md does not say what these do: {missing}"


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_the_dqn_preset_runs_verbatim_with_one_warning_line(tmp_path: Path) -> None:
    done = run_main(
        "--yaml",
        str(preset("CartPole-v1_DQN")),
        "general_cfg.mp_backend=single",
        "general_cfg.max_episode=3",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "general_cfg.policy_summary_fre" in warnings[0], warnings
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert (summary["algo"], summary["episodes"], summary["stop_reason"]) == (
        "DQN",
        3,
        "max_episode",
    )
    saved = yaml.safe_load((task / "config.yaml").read_text())
    assert saved["general_cfg"]["joyrl_version"] == "0.6.5"
    assert saved["algo_cfg"]["buffer_size"] == 100_000


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_the_ppo_preset_learns_cartpole_within_100_of_its_episodes(tmp_path: Path) -> None:
    """100 episodes of its max_step 200 (JoyRL's budget is unlimited: max_episode -1): the
    first evaluation (after model_save_fre 10 updates of 2000 steps) plays 200 of 200."""
    done = run_main(
        "--yaml",
        str(preset("CartPole-v1_PPO")),
        "general_cfg.mp_backend=single",
        "general_cfg.max_env_steps=20000",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert summary["env_steps"] == 20_000 and summary["n_workers"] == 10, summary
    assert max(e["return_mean"] for e in summary["eval_history"]) >= 195.0, evals(summary)


# ----- the dialect's rules, on small yamls -----------------------------------------------


def built(yaml_data: dict[str, Any], **overrides: dict[str, Any]) -> tuple[RunConfig, list[str]]:
    notes: list[str] = []
    cfg = build_config(copy.deepcopy(yaml_data), dict(overrides), notes)
    return RunConfig.from_omegaconf(cfg), notes


def test_learn_frequency_sets_the_update_to_data_ratio_as_joyrl_s_learner_takes_updates() -> None:
    # JoyRL's CartPole-v1_DQN_1 preset: async, an update per 200 new transitions.
    async_dqn = {
        "general_cfg": {"is_learner_async": True, "n_interactors": 5},
        "algo_cfg": {"exps_trucation_size": 20, "learn_frequency": 200},
    }
    cfg, _ = built(async_dqn)
    assert cfg.algo.updates_per_step == 1 / 200
    assert (cfg.general.worker_chunk_steps, cfg.general.lockstep) == (20, False)
    # Sync: a round of 4 interactors x 1 step makes one update at most.
    cfg, _ = built({"general_cfg": {"is_learner_async": False, "n_interactors": 4}})
    assert cfg.algo.updates_per_step == 1 / 4 and cfg.general.lockstep
    cfg, _ = built(
        {"general_cfg": {"n_interactors": 4}, "algo_cfg": {"learn_frequency": 2}},
    )
    assert cfg.algo.updates_per_step == 1 / 4 and cfg.general.n_workers == 4
    # An override of one of the keys counts in the yaml's rule; one of the ratio wins.
    cfg, _ = built(async_dqn, general_cfg={"is_learner_async": False})
    assert cfg.algo.updates_per_step == 1 / 200 and cfg.general.lockstep
    cfg, _ = built(async_dqn, algo_cfg={"updates_per_step": 0.5})
    assert cfg.algo.updates_per_step == 0.5


def test_independ_actor_and_share_optimizer_decide_ppo_s_networks_and_rates() -> None:
    branch = {"name": "state", "layers": [{"layer_type": "linear", "layer_size": [32]}]}
    algo = {
        "actor_branch_layers": [branch],
        "critic_branch_layers": [branch],
        "critic_merge_layers": [{"layer_type": "linear", "layer_size": [16], "activation": "tanh"}],
        "lr": 0.1,
        "actor_lr": 0.01,
        "critic_lr": 0.02,
        "critic_loss_coef": 0.5,
    }
    general = {"algo_name": "PPO"}
    cfg, notes = built({"general_cfg": general, "algo_cfg": {**algo, "independ_actor": True}})
    assert layers(cfg.algo.actor_layers) == [("linear", [32], "relu")]
    assert layers(cfg.algo.critic_layers) == [("linear", [32], "relu"), ("linear", [16], "tanh")]
    assert (cfg.algo.lr, cfg.algo.critic_lr, cfg.algo.vf_coef) == (0.01, 0.02, 1.0)
    assert notes and notes[0].endswith(": algo_cfg.lr")  # JoyRL's actor_lr replaces it
    # JoyRL up to 0.6.2: separate optimizers with share_optimizer false, an unweighted
    # critic loss; the networks still follow independ_actor (false: the shared pair).
    old = {**algo, "share_optimizer": False, "merge_layers": [{"layer_type": "linear"}]}
    cfg, notes = built({"general_cfg": general, "algo_cfg": old})
    assert (cfg.algo.lr, cfg.algo.critic_lr, cfg.algo.vf_coef) == (0.01, 0.02, 0.5)
    assert (
        layers(cfg.algo.actor_layers)
        == layers(cfg.algo.critic_layers)
        == [("linear", [256], "relu")]
    )
    assert "algo_cfg.critic_loss_coef" in notes[0] and "algo_cfg.actor_branch_layers" in notes[0]


def test_an_older_on_policy_batch_size_is_the_rollout_over_the_interactors() -> None:
    old = {
        "general_cfg": {"algo_name": "PPO", "n_interactors": 4},
        "algo_cfg": {"batch_size": 1000, "buffer_type": "ONPOLICY_QUE"},
    }
    cfg, notes = built(old)
    assert (cfg.algo.rollout_len, cfg.general.n_workers, notes) == (250, 4, [])
    # With exps_trucation_size JoyRL sets the batch itself: a batch_size that differs is
    # named, not used.
    cfg, notes = built(old, general_cfg={"exps_trucation_size": 100})
    assert cfg.algo.rollout_len == 100 and notes[0].endswith(": algo_cfg.batch_size")


def test_joyrl_layers_translate_conv_and_pass_through() -> None:
    conv = {"layer_type": "conv2d", "out_channel": 32, "kernel_size": 8, "stride": 4}
    spec = {
        "branch_layers": [{"name": "img", "layers": [conv, {"layer_type": "flatten"}]}],
        "merge_layers": [{"layer_type": "none"}, {"layer_type": "Linear", "layer_size": 64}],
    }
    cfg, _ = built({"algo_cfg": spec})
    (first, second) = cfg.algo.value_layers
    assert (first.layer_type, first.layer_dim, first.kernel_size, first.stride) == (
        "conv2d",
        [32],
        8,
        4,
    )
    assert (second.layer_type, second.layer_dim, first.padding) == ("linear", [64], 0)


def test_joyrl_wrappers_map_onto_this_project_s_or_are_named() -> None:
    atari = [
        {"wrapper_name": "EpisodicLifeEnv"},
        {"wrapper_name": "GrayScaleObservation"},
        {"wrapper_name": "ResizeObservation", "shape": 64},
        {"wrapper_name": "ClipRewardEnv"},
        {"wrapper_name": "FrameStack", "num_stack": 3},
        {"wrapper_name": "MultiHeadObsWrapper"},
        {"wrapper_name": "FrameStack2Numpy"},
    ]
    data = {"env_cfg": {"id": "CartPole-v1", "wrappers": atari}}
    yaml_cfg = copy.deepcopy(data)
    translated, notes = built(yaml_cfg)
    env = translated.env
    assert env.wrappers == ["grayscale", "resize", "frame_stack"]
    assert (env.resize, env.frame_stack, env.clip_rewards) == ([64, 64], 3, True)
    assert notes == [notes[0]] and notes[0].endswith(": env_cfg.wrappers: EpisodicLifeEnv")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"env_cfg": {"wrappers": [{"wrapper_name": "BaseSkipFrame", "skip": 4}]}},
            r"env_cfg\.wrappers\[0\]: JoyRL's BaseSkipFrame has no counterpart here",
        ),
        (
            {"env_cfg": {"wrappers": [{"wrapper_name": "NoSuchWrapper"}]}},
            r"env_cfg\.wrappers\[0\]\.wrapper_name='NoSuchWrapper' is not one of JoyRL's",
        ),
        (
            {"env_cfg": {"wrappers": [{"wrapper_name": "ResizeObservation", "size": 8}]}},
            r"env_cfg\.wrappers\[0\]\.size: ResizeObservation takes no such setting.*shape",
        ),
        (
            {"algo_cfg": {"merge_layers": [{"layer_type": "noisy_linear", "layer_size": [8]}]}},
            r"algo_cfg\.merge_layers\[0\]\.layer_type='noisy_linear' has no counterpart",
        ),
        (
            {"algo_cfg": {"branch_layers": [{"layers": [{"layer_size": [8]}]}]}},
            r"algo_cfg\.branch_layers\[0\]\.layers\[0\]\.layer_type is missing",
        ),
        (
            {
                "general_cfg": {"algo_name": "TD3"},
                "algo_cfg": {
                    "critic_branch_layers": [
                        {"name": "state", "layers": [{"layer_type": "linear"}]},
                        {"name": "action", "layers": [{"layer_type": "none"}]},
                    ]
                },
            },
            r"algo_cfg\.critic_branch_layers\[0\] has layers; the critics here read concat",
        ),
        (
            {"general_cfg": {"n_interactors": 2, "n_workers": 3}},
            r"general_cfg\.n_interactors=2 and general_cfg\.n_workers=3 disagree",
        ),
        (
            {"general_cfg": {"is_learner_async": "yes"}},
            r"general_cfg\.is_learner_async='yes' is not allowed; allowed: true, false",
        ),
        (
            {"general_cfg": {"algo_name": "PPO"}, "algo_cfg": {"return_form": "nstep"}},
            r"algo_cfg\.return_form='nstep' is not allowed; allowed: mc, td, gae",
        ),
        (
            {"general_cfg": {"algo_name": "PPO"}, "algo_cfg": {"buffer_type": "REPLAY_QUE"}},
            r"algo_cfg\.buffer_type='REPLAY_QUE' is not allowed.*allowed: ONPOLICY_QUE",
        ),
        (
            {"general_cfg": {"algo_name": "PPO"}, "algo_cfg": {"independ_actor": "no"}},
            r"algo_cfg\.independ_actor='no' is not allowed; allowed: true, false",
        ),
        (
            {"algo_cfg": {"learn_frequency": 0}},
            r"learn_frequency=0 is not allowed; allowed: a whole number >= 1",
        ),
    ],
)
def test_bad_joyrl_input_is_one_line_naming_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        built(data)
    assert "\n" not in str(caught.value)


def test_a_preset_s_joyrl_version_is_only_recorded() -> None:
    plain, _ = built({})
    versioned, notes = built({"general_cfg": {"joyrl_version": "0.6.5"}})
    assert versioned.general.joyrl_version == "0.6.5" and notes == []
    assert dataclasses.replace(versioned.general, joyrl_version=None) == plain.general
