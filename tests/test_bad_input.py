"""Malformed input through ``main.py``: exit 2, one ``error:`` line, nothing started.

Each case of the table must end with exit code 2 and exactly one line on stderr, starting
``error:``, that names the key or value at fault (``named``) and what is allowed instead
(``allowed``), with no traceback and no task directory created. The cases that fail during
the config checks go through ``main.main(argv)``, the command line's own entry point, in the
test's process: each would be a second of interpreter and import start-up as a subprocess
(and a Ray start for those refused after Ray began starting in the background), and what
decides the outcome is the same code. They borrow the test session's Ray. The real
``python main.py`` subprocess runs the address case (checked against the process's own Ray,
which a borrowing run does not have) and the check that a config error is refused before
torch or Ray is imported.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.runs import ROOT, run_main

CARTPOLE_DQN = str(ROOT / "configs" / "cartpole_dqn.yaml")


@dataclass(frozen=True)
class Case:
    id: str
    args: Callable[[Path], list[str]]  # main.py arguments; files live under the given folder
    named: str  # regex: the key or value at fault
    allowed: str  # regex: what is allowed instead
    # modules made absent for the case, as if not installed (``sys.modules[name] = None``,
    # Python's own way of refusing an import): an optional extra the test command installs
    hidden: tuple[str, ...] = ()

    def argv(self, files: Path) -> list[str]:
        return self.args(files)


def fixed(*args: str) -> Callable[[Path], list[str]]:
    return lambda _files: list(args)


def yaml_file(name: str, text: str) -> Callable[[Path], list[str]]:
    def args(files: Path) -> list[str]:
        path = files / name
        path.write_text(text)
        return ["--yaml", str(path)]

    return args


def task_with_checkpoint(name: str, write: Callable[[Path], None]) -> Callable[[Path], list[str]]:
    """A task directory (outside tasks_dir) whose models/last.pt ``write`` makes."""

    def args(files: Path) -> list[str]:
        models = files / name / "models"
        models.mkdir(parents=True)
        write(models / "last.pt")
        return [
            "--yaml",
            CARTPOLE_DQN,
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={files / name}",
        ]

    return args


def sweep_file(text: str) -> Callable[[Path], list[str]]:
    """The DQN CartPole run with ``--sweep`` a file holding ``text``."""

    def args(files: Path) -> list[str]:
        path = files / "sweep.yaml"
        path.write_text(text)
        return ["--yaml", CARTPOLE_DQN, "--sweep", str(path)]

    return args


def resume_a_run_task_dir(files: Path) -> list[str]:
    """``--resume`` given a run's task directory (it has models/), not a sweep's."""
    (files / "Train_CartPole-v1_DQN" / "models").mkdir(parents=True)
    return ["--resume", str(files / "Train_CartPole-v1_DQN")]


def sweep_dir_of(files: Path) -> Path:
    """What a sweep leaves for --resume (its request and Tune's folder)."""
    root = files / "Sweep_CartPole-v1_DQN"
    (root / "tune").mkdir(parents=True)
    (root / "sweep_request.yaml").write_text("run_yaml: {}\noverrides: []\nsweep: {}\n")
    return root


def _foreign(path: Path) -> None:
    torch.save({"model": {"weight": torch.zeros(3, 3)}, "step": 7}, path)


def _truncated(path: Path) -> None:
    buffer = path.with_suffix(".full")
    torch.save({"policy": {"q": torch.zeros(256, 256)}, "algo_name": "DQN"}, buffer)
    data = buffer.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    buffer.unlink()


def _other_network(path: Path) -> None:
    """A joyrl-ray checkpoint layout whose network is not the one configured."""
    policy = {"updates": 10, "q_net": {"0.weight": torch.zeros(8, 4)}}
    torch.save({"algo_name": "DQN", "policy": policy, "counters": {"updates": 10}}, path)


def _other_algo(path: Path) -> None:
    torch.save({"algo_name": "PPO", "policy": {"updates": 10}, "counters": {"updates": 10}}, path)


def _load_path_file(files: Path) -> list[str]:
    path = files / "a_file.pt"
    path.write_bytes(b"not a directory")
    return ["general_cfg.load_checkpoint=true", f"general_cfg.load_path={path}"]


def _episode(obs_dim: int, action: np.ndarray, steps: int = 50) -> dict[str, np.ndarray]:
    """A recorded episode of ``steps`` steps with observations of ``obs_dim`` floats."""
    obs = np.zeros((steps, obs_dim), np.float32)
    done = np.zeros(steps, bool)
    done[-1] = True
    return {
        "obs": obs,
        "actions": np.repeat(action[None], steps, axis=0),
        "rewards": np.ones(steps, np.float32),
        "next_obs": obs,
        "terminated": done,
        "truncated": np.zeros(steps, bool),
    }


def dataset_of(episodes: object, *args: str) -> Callable[[Path], list[str]]:
    """A run learning from a trajs_0.pkl holding ``episodes`` (pickled as they are)."""

    def make(files: Path) -> list[str]:
        (files / "data" / "results").mkdir(parents=True)
        with (files / "data" / "results" / "trajs_0.pkl").open("wb") as f:
            pickle.dump(episodes, f)
        return [f"general_cfg.dataset={files / 'data'}", "general_cfg.max_updates=10", *args]

    return make


CARTPOLE_EPISODES = [_episode(4, np.array(1)) for _ in range(4)]
PENDULUM_EPISODES = [_episode(3, np.zeros(1, np.float32)) for _ in range(4)]

TICTACTOE = "pettingzoo.classic.tictactoe_v3:env"
SHARED = "multi_agent.policies={shared: {algo_name: PPO}}"
SHARED_BY_ALL = "multi_agent.policy_mapping={'*': shared}"


def agents(*args: str) -> Callable[[Path], list[str]]:
    """A tic-tac-toe run (tic-tac-toe unless the arguments say another env) with ``args``."""
    return fixed(f"env_cfg.id={TICTACTOE}", *args)


MULTI_AGENT_CASES = [
    # learning from a dataset
    Case(
        "dataset_missing",
        fixed("general_cfg.dataset=no_such_data", "general_cfg.max_updates=10"),
        r"general_cfg\.dataset=no_such_data: no such file, task directory or Minari dataset",
        r"allowed: a task directory written with general_cfg\.collect_traj=true, a trajs_\*\.pkl "
        r"file, a folder of either, or a local Minari dataset id",
    ),
    Case(
        "dataset_without_max_updates",
        fixed("general_cfg.dataset=no_such_data"),
        r"general_cfg\.dataset=no_such_data needs general_cfg\.max_updates",
        r"allowed: max_updates >= 1",
    ),
    Case(
        "dataset_of_another_env",
        dataset_of(PENDULUM_EPISODES),
        r"general_cfg\.dataset=.*: its observations are float32 rows of shape \(3,\)",
        r"allowed: a dataset recorded on this env_cfg",
    ),
    Case(
        "dataset_not_trajectories",
        dataset_of({"weights": [1, 2, 3]}),
        r"general_cfg\.dataset=.*trajs_0\.pkl is not a trajectory file",
        r"a list of episodes, each a dict of obs, actions",
    ),
    Case(
        "dataset_for_an_on_policy_algorithm",
        dataset_of(CARTPOLE_EPISODES, "general_cfg.algo_name=PPO"),
        r"general_cfg\.algo_name=PPO learns from rollouts",
        r"allowed: .*DQN",
    ),
    Case(
        "random_action_rate_above_one",
        fixed("general_cfg.random_action_rate=1.5"),
        r"general_cfg\.random_action_rate=1\.5 is out of range",
        r"allowed: 0 <= rate <= 1",
    ),
    Case(
        "random_action_rate_in_training",
        fixed("general_cfg.random_action_rate=0.3"),
        r"general_cfg\.random_action_rate=0\.3 is for test mode",
        r"allowed in mode=train: 0",
    ),
    Case(
        "dataset_smaller_than_a_batch",
        dataset_of(CARTPOLE_EPISODES[:1]),
        r"general_cfg\.dataset holds 50 transitions, fewer than algo_cfg\.batch_size=",
        r"allowed: a larger dataset, or a smaller batch_size",
    ),
    Case(
        "multi_agent_extra_missing",
        agents(SHARED, SHARED_BY_ALL),
        r"env_cfg\.id='pettingzoo\.classic\.tictactoe_v3:env'.*needs the multiagent extra",
        r"pip install -r requirements-multiagent\.txt",
        hidden=("pettingzoo", "mpe2"),
    ),
    Case(
        "multi_agent_env_without_a_section",
        fixed(f"env_cfg.id={TICTACTOE}"),
        r"env_cfg\.id='pettingzoo\.classic\.tictactoe_v3:env' is a multi-agent env",
        r"add a multi_agent section",
    ),
    Case(
        "multi_agent_section_on_a_single_agent_env",
        fixed(SHARED, SHARED_BY_ALL),
        r"multi_agent: env_cfg\.id='CartPole-v1' is a single-agent env",
        r"remove the multi_agent section",
    ),
    Case(
        "multi_agent_mapping_to_an_unknown_policy",
        agents(SHARED, "multi_agent.policy_mapping={'*': sharde}"),
        r"\* -> sharde: no policy 'sharde'",
        r"policies: shared",
    ),
    Case(
        "multi_agent_agent_without_a_policy",
        agents(SHARED, "multi_agent.policy_mapping={player_1: shared}"),
        r"agent player_2 has no policy",
        r"map it .* to one of: shared",
    ),
    Case(
        "multi_agent_pattern_that_matches_no_agent",
        agents(SHARED, "multi_agent.policy_mapping={'agent_*': shared}"),
        r"'agent_\*' matches no agent",
        r"agents: player_1, player_2",
    ),
    Case(
        "multi_agent_algorithm_that_cannot_act_for_the_agent",
        agents("multi_agent.policies={shared: {algo_name: SAC}}", SHARED_BY_ALL),
        r"multi_agent\.policies\.shared\.algo_name=SAC",
        r"it supports: Box",
    ),
    Case(
        "multi_agent_mask_on_a_continuous_action_space",
        fixed(
            "env_cfg.id=tests.support.agent_envs:MaskedBoxWorld",
            "multi_agent.policies={shared: {algo_name: PPO}}",
            SHARED_BY_ALL,
        ),
        r"multi_agent\.policies\.shared\.algo_name=PPO",
        r"Discrete",
    ),
    Case(
        "multi_agent_agents_of_one_policy_with_different_spaces",
        fixed("env_cfg.id=tests.support.agent_envs:TwoSpacesWorld", SHARED, SHARED_BY_ALL),
        r"policy shared acts for small and large, whose observation spaces differ",
        r"give them a policy each",
    ),
    Case(
        "multi_agent_unknown_policy_key",
        agents("multi_agent.policies={shared: {algo_nme: PPO}}", SHARED_BY_ALL),
        r"multi_agent\.policies\.shared\.algo_nme",
        r"did you mean multi_agent\.policies\.shared\.algo_name\?",
    ),
    Case(
        "multi_agent_fixed_checkpoint_without_a_load_path",
        agents(
            "multi_agent.policies={shared: {}, old: {fixed: checkpoint}}",
            "multi_agent.policy_mapping={player_1: shared, player_2: old}",
        ),
        r"multi_agent\.policies\.old\.fixed=checkpoint needs load_path",
        r"a task directory or a \.pt file",
    ),
    Case(
        "multi_agent_unknown_fixed_behaviour",
        agents(
            "multi_agent.policies={shared: {}, other: {fixed: randm}}",
            "multi_agent.policy_mapping={player_1: shared, player_2: other}",
        ),
        r"multi_agent\.policies\.other\.fixed='randm'",
        r"allowed: null \(it learns\), random, checkpoint",
    ),
    Case(
        "multi_agent_every_policy_fixed",
        agents(
            "multi_agent.policies={other: {fixed: random}}",
            "multi_agent.policy_mapping={'*': other}",
        ),
        r"every policy is fixed",
        r"leave fixed unset on the policy that should learn",
    ),
    Case(
        "multi_agent_policy_with_memory",
        agents(
            "multi_agent.policies={shared: {algo_name: PPO, algo_cfg: {actor_layers: "
            "[{layer_type: lstm, layer_dim: [32]}]}}}",
            SHARED_BY_ALL,
        ),
        r"multi_agent\.policies\.shared\.algo_name=PPO: a policy with memory",
        r"allowed: feed-forward layers",
    ),
    Case(
        "multi_agent_with_observation_normalization",
        agents(SHARED, SHARED_BY_ALL, "env_cfg.normalize_obs=true"),
        r"env_cfg\.normalize_obs=true",
        r"allowed: false",
    ),
    Case(
        "multi_agent_unknown_eval_opponent",
        agents(SHARED, SHARED_BY_ALL, "multi_agent.eval_opponents=[randm]"),
        r"multi_agent\.eval_opponents: 'randm'",
        r"allowed: random, shared",
    ),
    Case(
        "multi_agent_win_rate_threshold_without_an_opponent",
        agents(SHARED, SHARED_BY_ALL, "multi_agent.threshold_metric=win_rate"),
        r"multi_agent\.threshold_metric=win_rate",
        r"name one in multi_agent\.eval_opponents",
    ),
]

LEARNER = "multi_agent.policies={main: {algo_name: PPO}}"


def _task_without_snapshots(files: Path) -> Path:
    """A task directory whose run froze no snapshot (its models/ folder only)."""
    task = files / "Train_no_league"
    (task / "models" / "main").mkdir(parents=True, exist_ok=True)
    return task


LEAGUE_CASES = [
    Case(
        "league_on_a_single_agent_env",
        fixed("league.main=main", "league.snapshot_every_updates=10"),
        r"league: env_cfg\.id='CartPole-v1' is a single-agent env",
        r"remove the league section",
    ),
    Case(
        "league_snapshot_rule_without_a_main_policy",
        agents(LEARNER, "league.snapshot_every_updates=10"),
        r"league\.main is not set",
        r"allowed: main",
    ),
    Case(
        "league_main_that_does_not_learn",
        agents(
            LEARNER,
            "multi_agent.policies.main.fixed=random",
            "multi_agent.policies.learner={}",
            "league.main=main",
            "league.snapshot_every_updates=10",
        ),
        r"league\.main='main' is not a learning policy",
        r"allowed: learner",
    ),
    Case(
        "league_without_a_snapshot_rule",
        agents(LEARNER, "league.main=main"),
        r"league: no snapshot rule",
        r"league\.snapshot_every_updates",
    ),
    Case(
        "league_exploiter_that_is_main",
        agents(
            LEARNER,
            "league.main=main",
            "league.snapshot_every_updates=10",
            "league.exploiters=[main]",
        ),
        r"league\.exploiters: 'main' is not a learning policy beside main",
        r"allowed: none \(add one to multi_agent\.policies\)",
    ),
    Case(
        "league_exploiter_without_an_opponent",
        agents(
            "multi_agent.policies={main: {}, exploiter: {}}",
            "league.main=main",
            "league.snapshot_every_updates=10",
            "league.exploiters=[exploiter]",
            "league.exploiter_share=0",
        ),
        r"league\.exploiters=\['exploiter'\] with league\.exploiter_share=0",
        r"allowed: a share in \(0, 1\]",
    ),
    Case(
        "league_with_a_second_policy",
        agents(
            "multi_agent.policies={main: {}, other: {fixed: random}}",
            "multi_agent.policy_mapping={player_1: main, player_2: other}",
            "league.main=main",
            "league.snapshot_every_updates=10",
        ),
        r"league: multi_agent\.policies has other beside league\.main=main",
        r"remove them",
    ),
    Case(
        "league_unknown_opponent_rule",
        agents(
            LEARNER, "league.main=main", "league.snapshot_every_updates=10", "league.opponents=psfp"
        ),
        r"league\.opponents",
        r"self_play, uniform, pfsp",
    ),
    Case(
        "league_test_opponent_that_is_no_snapshot_of_the_run",
        lambda files: [
            *agents(LEARNER, "league.main=main", "league.snapshot_every_updates=10")(files),
            "general_cfg.mode=test",
            f"general_cfg.load_path={_task_without_snapshots(files)}",
            "league.test_opponent=main@10",
        ],
        r"league\.test_opponent='main@10' is not a snapshot of",
        r"allowed: none \(that run froze none\)",
    ),
    Case(
        "league_unknown_key",
        agents(LEARNER, "league.main=main", "league.snapshot_every=10"),
        r"league\.snapshot_every\b",
        r"did you mean league\.snapshot_every_updates\?",
    ),
]

CASES = [
    Case(
        "max_updates_zero",
        fixed("general_cfg.max_updates=0"),
        r"general_cfg\.max_updates=0 is out of range",
        r"allowed: >= 1, or -1 \(no limit\)",
    ),
    Case(
        "reward_threshold_word",
        fixed("general_cfg.reward_threshold=solved"),
        r"general_cfg\.reward_threshold='solved'",
        r"allowed: a number, env .* or null",
    ),
    # keys and sections
    Case(
        "unknown_key",
        fixed("general_cfg.sed=1"),
        r"general_cfg\.sed\b",
        r"did you mean general_cfg\.seed\?",
    ),
    Case(
        "unknown_algo_key",
        fixed("algo_cfg.learning_rate=0.1"),
        r"algo_cfg\.learning_rate",
        r"allowed: .*\blr\b",
    ),
    Case(
        "unknown_section",
        fixed("train_cfg.seed=1"),
        r"train_cfg",
        r"general_cfg, algo_cfg, env_cfg",
    ),
    Case(
        "unknown_section_in_yaml",
        yaml_file("section.yaml", "general:\n  seed: 1\n"),
        r"\bgeneral\b",
        r"general_cfg, algo_cfg, env_cfg",
    ),
    Case(
        "unknown_key_in_yaml",
        yaml_file("typo.yaml", "algo_cfg:\n  epsilon_decy: 500\n"),
        r"algo_cfg\.epsilon_decy",
        r"did you mean algo_cfg\.epsilon_decay",
    ),
    Case(
        "unknown_env_family",
        fixed("general_cfg.env_name=atari"),
        r"general_cfg\.env_name='atari'",
        r"allowed: gym\b.*env_cfg\.id",
    ),
    Case(
        "joyrl_env_id_disagrees_with_id",
        yaml_file("env_id.yaml", "env_cfg:\n  env_id: Pendulum-v1\n  id: CartPole-v1\n"),
        r"env_cfg\.env_id='Pendulum-v1' and env_cfg\.id='CartPole-v1'",
        r"set one of them",
    ),
    Case("override_without_section", fixed("seed=1"), r"'seed=1'", r"section\.key=value"),
    Case(
        "override_without_value",
        fixed("general_cfg.seed"),
        r"general_cfg\.seed",
        r"section\.key=value",
    ),
    # types
    Case(
        "int_given_a_word",
        fixed("general_cfg.n_workers=two"),
        r"general_cfg\.n_workers",
        r"converted to Integer",
    ),
    Case(
        "bool_given_a_word",
        fixed("general_cfg.online_eval=maybe"),
        r"general_cfg\.online_eval",
        r"not a valid bool",
    ),
    Case("float_given_a_list", fixed("algo_cfg.lr=[1,2]"), r"algo_cfg\.lr", r"converted to Float"),
    # ranges
    Case("gamma_above_1", fixed("algo_cfg.gamma=1.5"), r"algo_cfg\.gamma=1\.5", r"0 <= gamma <= 1"),
    Case("negative_lr", fixed("algo_cfg.lr=-1"), r"algo_cfg\.lr=-1", r"0 < lr"),
    Case(
        "epsilon_start_above_1",
        fixed("algo_cfg.epsilon_start=1.5"),
        r"algo_cfg\.epsilon_start=1\.5",
        r"0 <= epsilon_start <= 1",
    ),
    Case(
        "epsilon_end_below_0",
        fixed("algo_cfg.epsilon_end=-0.1"),
        r"algo_cfg\.epsilon_end=-0\.1",
        r"0 <= epsilon_end <= 1",
    ),
    Case("n_learners_0", fixed("general_cfg.n_learners=0"), r"general_cfg\.n_learners=0", r">= 1"),
    Case(
        "first_checkpoint_s_negative",
        fixed("general_cfg.first_checkpoint_s=-5"),
        r"general_cfg\.first_checkpoint_s=-5",
        r"> 0 seconds, or null \(off\)",
    ),
    Case(
        "min_workers_above_n_workers",
        fixed("general_cfg.n_workers=2", "general_cfg.min_workers=3"),
        r"general_cfg\.min_workers=3 is out of range",
        r"1 <= min_workers <= n_workers \(2\), or null \(1\)",
    ),
    Case(
        "max_workers_below_n_workers",
        fixed("general_cfg.n_workers=2", "general_cfg.max_workers=1"),
        r"general_cfg\.max_workers=1 is below general_cfg\.n_workers=2",
        r">= n_workers, or null",
    ),
    Case(
        "max_workers_on_single",
        fixed("general_cfg.mp_backend=single", "general_cfg.max_workers=3"),
        r"general_cfg\.max_workers=3 needs general_cfg\.mp_backend=ray",
        r"allowed with single: null or n_workers \(1\)",
    ),
    Case(
        "max_workers_with_two_on_policy_learners",
        fixed(
            "--yaml",
            str(ROOT / "configs" / "cartpole_ppo.yaml"),
            "general_cfg.n_learners=2",
            "general_cfg.n_workers=2",
            "general_cfg.max_workers=4",
        ),
        r"general_cfg\.max_workers=4 with general_cfg\.n_learners=2",
        r"allowed with several learners: max_workers null or n_workers",
    ),
    Case(
        "lockstep_with_two_learners",
        fixed("general_cfg.lockstep=true", "general_cfg.n_learners=2"),
        r"general_cfg\.lockstep=true takes one learner, not general_cfg\.n_learners=2",
        r"allowed: n_learners=1, or lockstep=false",
    ),
    Case(
        "lockstep_with_a_growing_fleet",
        fixed("general_cfg.lockstep=true", "general_cfg.n_workers=2", "general_cfg.max_workers=3"),
        r"general_cfg\.lockstep=true keeps the fleet as it starts.*max_workers=3",
        r"allowed: max_workers null or n_workers \(2\), or lockstep=false",
    ),
    Case(
        "learner_lost_after_s_0",
        fixed("general_cfg.learner_lost_after_s=0"),
        r"general_cfg\.learner_lost_after_s=0",
        r"must be > 0 seconds",
    ),
    Case(
        "stall_timeout_0",
        fixed("general_cfg.stall_timeout_s=0"),
        r"general_cfg\.stall_timeout_s=0",
        r"> 0",
    ),
    Case(
        "worker_silent_after_0",
        fixed("general_cfg.worker_silent_after_s=0"),
        r"general_cfg\.worker_silent_after_s=0",
        r"seconds > 0, or -1",
    ),
    Case(
        "eval_timeout_0",
        fixed("general_cfg.eval_timeout_s=0"),
        r"general_cfg\.eval_timeout_s=0",
        r"seconds > 0, or -1",
    ),
    Case(
        "learner_silent_after_negative",
        fixed("general_cfg.learner_silent_after_s=-5"),
        r"general_cfg\.learner_silent_after_s=-5",
        r"seconds > 0, or -1",
    ),
    Case(
        "step_timeout_with_sync_envs",
        fixed("env_cfg.step_timeout_s=5"),
        r"env_cfg\.step_timeout_s=5",
        r"needs env_cfg\.vector_mode=async",
    ),
    Case(
        "reset_timeout_0",
        fixed("env_cfg.vector_mode=async", "env_cfg.reset_timeout_s=0"),
        r"env_cfg\.reset_timeout_s=0",
        r"seconds > 0, or -1",
    ),
    Case(
        "env_error_rate_1",
        fixed("general_cfg.fault_injection.env_error_rate=1.0"),
        r"env_error_rate=1\.0",
        r"0 <= env_error_rate < 1",
    ),
    Case(
        "eval_env_error_rate_negative",
        fixed("general_cfg.fault_injection.eval_env_error_rate=-0.1"),
        r"eval_env_error_rate=-0\.1",
        r"0 <= eval_env_error_rate < 1",
    ),
    # normalization (env_cfg.normalize_obs / normalize_reward)
    *(
        Case(
            f"normalize_{key}_not_a_bool",
            fixed(f"env_cfg.normalize_{key}={value}"),
            rf"env_cfg\.normalize_{key}={value!r}",
            r"allowed: true, false",
        )
        for key, value in (("obs", 2), ("reward", "maybe"))
    ),
    *(
        Case(
            f"{key}_not_positive",
            fixed(f"env_cfg.{key}={value}"),
            rf"env_cfg\.{key}={float(value)}",
            r"must be > 0",
        )
        for key, value in (("clip_obs", -1), ("clip_reward", 0), ("norm_epsilon", 0))
    ),
    Case(
        "normalize_obs_on_discrete_observations",
        fixed("env_cfg.id=FrozenLake-v1", "env_cfg.normalize_obs=true"),
        r"env_cfg\.normalize_obs=true: the observation space Discrete\(16\)",
        r"allowed: a 1-D float Box \(Dict, Tuple, discrete and image",
    ),
    Case(
        "normalize_obs_on_dict_observations",
        fixed("env_cfg.id=tests.support.space_envs:ImageDictEnv", "env_cfg.normalize_obs=true"),
        r"env_cfg\.normalize_obs=true: the observation space Dict\(",
        r"allowed: a 1-D float Box",
    ),
    Case(
        "tracker_unknown",
        fixed("general_cfg.tracking=[mlflow, neptune]"),
        r"general_cfg\.tracking=\[mlflow, neptune\]: unknown tracker 'neptune'",
        r"allowed: mlflow, wandb",
    ),
    Case(
        "tracker_library_missing",
        fixed("general_cfg.tracking=[wandb, mlflow]"),
        r"general_cfg\.tracking=\[wandb, mlflow\]: mlflow is not installed",
        r"pip install -r requirements-tracking\.txt",
        hidden=("mlflow",),
    ),
    Case(
        "mode_unknown",
        fixed("general_cfg.mode=play"),
        r"general_cfg\.mode='play'",
        r"allowed: train, test",
    ),
    # observation spaces the runtime does not take
    *(
        Case(
            f"observation_space_{name.lower()}",
            fixed(f"env_cfg.id=tests.support.space_envs:{name}ObservationEnv"),
            rf"observation space .*\({name}\) is not supported",
            r"supported: Box, Discrete, MultiDiscrete, MultiBinary, and Dict or Tuple",
        )
        for name in ("Text", "Graph", "Sequence")
    ),
    Case(
        "observation_space_dict_holding_text",
        fixed("env_cfg.id=tests.support.space_envs:DictWithTextEnv"),
        r"observation space Text\(.*\(Text\) is not supported",
        r"Dict or Tuple of these",
    ),
    # cross-field rules
    Case(
        "batch_larger_than_buffer",
        fixed("algo_cfg.batch_size=512", "algo_cfg.buffer_size=256"),
        r"algo_cfg\.batch_size=512",
        r"batch_size <= buffer_size",
    ),
    Case(
        "batch_not_divisible_by_learners",
        fixed("general_cfg.n_learners=3"),
        r"algo_cfg\.batch_size=64.*n_learners=3",
        r"divisible by n_learners",
    ),
    Case(
        "single_backend_with_2_learners",
        fixed("general_cfg.mp_backend=single", "general_cfg.n_learners=2"),
        r"general_cfg\.n_learners=2",
        r"mp_backend=ray.*allowed with single: 1",
    ),
    Case(
        "test_mode_without_load_path",
        fixed("general_cfg.mode=test"),
        r"general_cfg\.mode=test",
        r"needs general_cfg\.load_path",
    ),
    # yaml files
    Case(
        "yaml_is_a_list",
        yaml_file("list.yaml", "- general_cfg\n- algo_cfg\n"),
        r"list\.yaml",
        r"a mapping with sections general_cfg, algo_cfg, env_cfg",
    ),
    Case(
        "yaml_with_tabs",
        yaml_file("tabs.yaml", "general_cfg:\n\tseed: 1\n"),
        r"tabs\.yaml.*line 2",
        r"indent yaml with spaces, not tabs",
    ),
    Case(
        "yaml_section_not_a_mapping",
        yaml_file("flat.yaml", "general_cfg: 5\n"),
        r"section general_cfg",
        r"must be a mapping",
    ),
    Case(
        "yaml_missing",
        fixed("--yaml", "/nonexistent/joyrl/nope.yaml"),
        r"nope\.yaml",
        r"no such file",
    ),
    # checkpoints
    Case(
        "load_path_is_a_file",
        _load_path_file,
        r"general_cfg\.load_path=.*a_file\.pt",
        r"is a file, not a task directory; allowed: a task directory",
    ),
    Case(
        "foreign_checkpoint",
        task_with_checkpoint("foreign", _foreign),
        r"foreign/models/last\.pt",
        r"a joyrl-ray checkpoint holds algo_name, policy",
    ),
    Case(
        "truncated_checkpoint",
        task_with_checkpoint("truncated", _truncated),
        r"truncated/models/last\.pt.*truncated",
        r"allowed: models/last\.pt, best\.pt or <update>\.pt",
    ),
    Case(
        "checkpoint_of_another_network",
        task_with_checkpoint("other_net", _other_network),
        r"other_net/models/last\.pt",
        r"does not fit this env_cfg / algo_cfg.*--yaml .*config\.yaml",
    ),
    Case(
        "checkpoint_of_another_algo",
        task_with_checkpoint("other_algo", _other_algo),
        r"algo 'PPO'.*algo_name='DQN'",
        r"set it to match",
    ),
    Case(
        "yaml_malformed",
        yaml_file("bad.yaml", "general_cfg:\n  seed: 1\n  mode: [train\nalgo_cfg: {}\n"),
        r"bad\.yaml: malformed yaml",
        r"at line 4",
    ),
    Case(
        "layer_type_unknown",
        fixed("algo_cfg.value_layers=[{layer_type: attention, layer_dim: [8], activation: relu}]"),
        r"layer_type='attention'",
        r"allowed: linear, conv2d, lstm, gru",
    ),
    Case(
        "recurrent_layer_where_no_sequence_learning",
        fixed("algo_cfg.value_layers=[{layer_type: lstm, layer_dim: [8], activation: none}]"),
        r"algo_cfg\.value_layers\[0\]\.layer_type: this algorithm learns no recurrent layers",
        r"it takes lstm / gru in: none of its layer lists",
    ),
    Case(
        "r2d2_without_a_recurrent_layer",
        fixed(
            "--yaml",
            str(ROOT / "configs" / "cartpole_novel_r2d2.yaml"),
            "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [8], activation: relu}]",
        ),
        r"algo_cfg\.value_layers has no recurrent layer",
        r"allowed: value_layers with one layer of layer_type lstm or gru",
    ),
    Case(
        "buffer_type_unknown",
        fixed("algo_cfg.buffer_type=ring"),
        r"algo_cfg\.buffer_type='RING'",
        r"allowed: REPLAY_QUE, PER",
    ),
    Case(
        "rollout_not_divisible_by_learners",
        fixed(
            "general_cfg.n_learners=2",
            "general_cfg.algo_name=PPO",
            "general_cfg.n_workers=3",
            "general_cfg.n_envs_per_worker=1",
        ),
        r"3 envs does not split across general_cfg\.n_learners=2",
        r"divisible by n_learners",
    ),
    Case(
        "env_module_missing",
        fixed("env_cfg.id=nosuchmodule:Env"),
        r"env_cfg\.id='nosuchmodule:Env'",
        r"cannot import module 'nosuchmodule'",
    ),
    # algorithms and envs
    Case("unknown_algo", fixed("general_cfg.algo_name=Foo"), r"\bFoo\b", r"DQN.*PPO|PPO.*DQN"),
    Case(
        "sac_on_cartpole",
        fixed("general_cfg.algo_name=SAC"),
        r"general_cfg\.algo_name=SAC.*Discrete",
        r"supports: Box",
    ),
    Case(
        "dqn_on_pendulum",
        fixed("env_cfg.id=Pendulum-v1"),
        r"general_cfg\.algo_name=DQN.*Box",
        r"supports: Discrete",
    ),
    Case(
        "unknown_env_id",
        fixed("env_cfg.id=CartPol-v1"),
        r"env_cfg\.id='CartPol-v1'",
        r"did you mean CartPole-v1",
    ),
    Case(
        "sac_on_unbounded_actions",
        fixed(
            "general_cfg.algo_name=SAC", "env_cfg.id=tests.support.extra_envs:UnboundedActionEnv"
        ),
        r"general_cfg\.algo_name=SAC needs finite action bounds, got Box\(-inf, inf",
        r"supports: Box \(1-D, bounded\)",
    ),
    Case(
        "td3_on_unbounded_actions",
        fixed(
            "general_cfg.algo_name=TD3", "env_cfg.id=tests.support.extra_envs:UnboundedActionEnv"
        ),
        r"general_cfg\.algo_name=TD3 needs finite action bounds, got Box\(-inf, inf",
        r"supports: Box \(1-D, bounded\)",
    ),
    Case(
        "appo_queue_smaller_than_batch",
        fixed(
            "general_cfg.algo_name=APPO",
            "algo_cfg.batch_rollouts=3",
            "algo_cfg.rollout_queue_capacity=2",
        ),
        r"algo_cfg\.rollout_queue_capacity=2 is smaller than algo_cfg\.batch_rollouts=3",
        r"allowed: rollout_queue_capacity >= batch_rollouts",
    ),
    Case(
        "cuda_without_a_gpu_in_one_process",
        fixed("general_cfg.device=cuda", "general_cfg.mp_backend=single"),
        r"general_cfg\.device=cuda: torch sees no GPU",
        r"allowed here: auto \(cuda when visible\) or cpu",
    ),
    Case(
        "env_kwargs_not_taken",
        fixed("env_cfg.kwargs={gravity: 3}"),
        r"env_cfg\.id='CartPole-v1'.*gravity",
        r"does not take these env_cfg\.kwargs",
    ),
    Case(
        "mask_velocity_on_an_env_it_does_not_know",
        fixed("env_cfg.id=Taxi-v4", "env_cfg.wrappers=[mask_velocity]"),
        r"env_cfg\.wrappers: mask_velocity .*\bTaxi-v4\b",
        r"supported ids .*CartPole-v1.*Pendulum-v1",
    ),
    *MULTI_AGENT_CASES,
    *LEAGUE_CASES,
]

# Checked before Ray starts, against the process's own Ray: run as a subprocess (a run in
# a process whose Ray is already up borrows that one, whatever the address).
SUBPROCESS_CASES = [
    Case(
        "bad_ray_address",
        fixed("general_cfg.ray_address=127.0.0.1:1"),
        r"127\.0\.0\.1:1",
        r"ray start --head|auto|host:port",
    ),
    # A worker SIGKILLs its own process, which with single is the test's: never in-process.
    Case(
        "kill_at_env_steps_with_single_backend",
        fixed(
            "general_cfg.mp_backend=single", "general_cfg.fault_injection.kill_at_env_steps=[50]"
        ),
        r"general_cfg\.fault_injection\.kill_at_env_steps=\[50\]",
        r"needs general_cfg\.mp_backend=ray.*allowed with single: \[\]",
    ),
    # sweeps (--sweep FILE, or a sweep_cfg section of the yaml)
    Case(
        "sweep_file_missing",
        lambda files: ["--yaml", CARTPOLE_DQN, "--sweep", str(files / "none.yaml")],
        r"--sweep .*none\.yaml",
        r"no such file",
    ),
    Case(
        "sweep_unknown_key",
        sweep_file("spaces: {algo_cfg.lr: {choice: [0.001]}}\n"),
        r"unknown sweep key spaces",
        r"allowed: space, seeds, metric",
    ),
    Case(
        "sweep_space_key_not_in_the_run_config",
        sweep_file("space: {algo_cfg.learning_rate: {choice: [0.001]}}\n"),
        r"sweep space algo_cfg\.learning_rate",
        r"allowed: .*\blr\b",
    ),
    Case(
        "sweep_space_value_the_run_refuses",
        sweep_file("space: {algo_cfg.buffer_type: {choice: [PER, ring]}}\n"),
        r"sweep space algo_cfg\.buffer_type='ring'",
        r"allowed: .*PER",
    ),
    Case(
        "sweep_unknown_dimension_kind",
        sweep_file("space: {algo_cfg.lr: {normal: [0.001, 0.01]}}\n"),
        r"sweep space algo_cfg\.lr: unknown kind 'normal'",
        r"allowed: choice, grid, uniform, loguniform, randint",
    ),
    Case(
        "sweep_asha_first_rung_past_the_budget",
        lambda files: [
            *sweep_file(
                "space: {algo_cfg.lr: {choice: [0.001]}}\nscheduler: asha\n"
                "asha: {grace_env_steps: 10000}\n"
            )(files),
            "general_cfg.max_env_steps=4000",
        ],
        r"sweep asha\.grace_env_steps=10000 is past general_cfg\.max_env_steps=4000",
        r"allowed: 1 to 4000",
    ),
    Case(
        "sweep_unknown_scheduler",
        sweep_file("space: {algo_cfg.lr: {choice: [0.001]}}\nscheduler: hyperband\n"),
        r"sweep scheduler='hyperband'",
        r"allowed: fifo, asha, pbt",
    ),
    Case(
        "sweep_resume_of_a_run_task_directory",
        resume_a_run_task_dir,
        r"--resume .*Train_CartPole-v1_DQN: not a sweep directory",
        r"a run resumes with: python main\.py --yaml .*load_checkpoint=true",
    ),
    Case(
        "sweep_resume_with_a_yaml",
        lambda files: ["--resume", str(sweep_dir_of(files)), "--yaml", CARTPOLE_DQN],
        r"--resume takes the sweep's directory alone",
        r"its run config, overrides and sweep are saved there",
    ),
    Case(
        "sweep_optuna_over_a_grid",
        sweep_file("space: {algo_cfg.lr: {grid: [0.001, 0.0003]}}\nsearcher: optuna\n"),
        r"sweep space algo_cfg\.lr: grid with searcher optuna",
        r"use choice, or searcher random for a grid",
    ),
    Case(
        "sweep_pbt_mutation_of_a_shape",
        sweep_file(
            "scheduler: pbt\npbt:\n  perturbation_env_steps: 4096\n  mutations:\n"
            "    algo_cfg.value_layers: {choice: ["
            "[{layer_type: linear, layer_dim: [64], activation: relu}], "
            "[{layer_type: linear, layer_dim: [128], activation: relu}]]}\n"
        ),
        r"sweep pbt\.mutations algo_cfg\.value_layers: a checkpoint made with .* does not load",
        r"size mismatch.*PBT can mutate only keys a restored run can take",
    ),
    Case(
        "sweep_pbt_mutation_outside_algo_cfg",
        sweep_file(
            "scheduler: pbt\npbt:\n  perturbation_env_steps: 4096\n  mutations:\n"
            "    general_cfg.n_workers: {choice: [1, 2]}\n"
        ),
        r"sweep pbt\.mutations general_cfg\.n_workers",
        r"only algo_cfg keys can change",
    ),
    Case(
        "sweep_pbt_without_a_perturbation_interval",
        sweep_file(
            "scheduler: pbt\npbt:\n  mutations: {algo_cfg.lr: {uniform: [0.0001, 0.001]}}\n"
        ),
        r"sweep pbt\.perturbation_env_steps: required",
        r"env steps between a trial's perturbations",
    ),
    Case(
        "sweep_section_in_the_yaml_unknown_key",
        yaml_file("with_sweep.yaml", "general_cfg:\n  seed: 1\nsweep_cfg:\n  sample: 4\n"),
        r"unknown sweep key sample",
        r"allowed: space, seeds, metric",
    ),
]

# Need a Ray up to know the cluster's resources.
RAY_CASES = [
    Case(
        "learner_gpu_on_a_cpu_machine",
        fixed("general_cfg.learner_num_gpus=1"),
        r"learner asks for .*1 GPU",
        r"largest node \(.*\) has .*\b0 GPU|largest node .* has none",
    ),
    Case(
        "worker_resource_no_node_has",
        fixed("general_cfg.worker_resources={gpu_node: 1}"),
        r"worker asks for .*1 gpu_node",
        r"no node has 'gpu_node'|largest node .* has none",
    ),
    Case(
        "cuda_on_a_cluster_without_a_gpu",
        fixed("general_cfg.device=cuda"),
        r"general_cfg\.device=cuda: no node of the Ray cluster has a GPU \(.*0 GPUs\)",
        r"allowed here: auto \(cuda when visible\) or cpu",
    ),
    Case(
        "sweep_trial_no_cluster_can_hold",
        lambda files: [
            *sweep_file("space: {algo_cfg.lr: {choice: [0.001]}}\n")(files),
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=5",  # its driver 1 CPU, a learner 1, 5 workers 1 each
        ],
        r"a sweep trial needs 7 CPU",
        r"largest node .*: 2 CPU.*lower general_cfg\.n_workers",
    ),
]


# ----- python -m joyrl_ray.export: refused before torch loads, so each runs as a subprocess -----


def export_task(files: Path, *checkpoints: str) -> Path:
    """A task directory as far as the export reads it before loading anything: config.yaml
    and models/ with the named checkpoint files (empty: never read before the refusal)."""
    task = files / "Train_CartPole-v1_DQN"
    (task / "models").mkdir(parents=True)
    (task / "config.yaml").write_text("general_cfg: {algo_name: DQN}\n")
    for name in checkpoints:
        (task / "models" / f"{name}.pt").write_bytes(b"")
    return task


def exporting(
    *args: str, checkpoints: tuple[str, ...] = ("last", "50")
) -> Callable[[Path], list[str]]:
    """The export's arguments after a task directory holding ``checkpoints``."""
    return lambda files: [str(export_task(files, *checkpoints)), *args]


def existing_out(files: Path) -> list[str]:
    out = files / "policy.onnx"
    out.write_bytes(b"someone's file")
    return [str(export_task(files, "last")), "--format", "torchscript", "--out", str(out)]


EXPORT_CASES = [
    Case(
        "export_bad_task_path",
        fixed("no/such/task", "--format", "onnx"),
        r"no/such/task: no such task directory",
        r"allowed: a task directory written by a train run",
    ),
    Case(
        "export_folder_not_a_task",
        lambda files: [str(files), "--format", "onnx"],
        r"has no config\.yaml or models/",
        r"allowed: a task directory written by a train run",
    ),
    Case(
        "export_unknown_format",
        exporting("--format", "tflite"),
        r"--format 'tflite' is not a format",
        r"allowed: onnx, torchscript",
    ),
    Case(
        "export_without_format",
        exporting(),
        r"arguments are required: --format",
        r"usage: python -m joyrl_ray\.export <task> --format onnx\|torchscript",
    ),
    Case(
        "export_unknown_checkpoint_name",
        exporting("--format", "torchscript", "--checkpoint", "newest"),
        r"--checkpoint 'newest' is not a checkpoint",
        r"allowed: best .*, last, or an update number",
    ),
    Case(
        "export_update_without_checkpoint",
        exporting("--format", "torchscript", "--checkpoint", "7"),
        r"--checkpoint 7: .* has no models/7\.pt",
        r"allowed: last, 50",
    ),
    Case(
        "export_task_without_checkpoint",
        exporting("--format", "torchscript", checkpoints=()),
        r"models holds no checkpoint",
        r"allowed: a task directory written by a train run .*that wrote one",
    ),
    Case(
        "export_existing_out",
        existing_out,
        r"--out .*policy\.onnx exists",
        r"allowed: another --out, or --force to replace it",
    ),
]


def run_export_case(
    case: Case, root: Path, hidden: tuple[str, ...] = ()
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``python -m joyrl_ray.export`` with the case's arguments, ``hidden`` modules made
    unimportable (as if not installed)."""
    files, tasks = root / case.id / "files", root / case.id / "tasks"
    files.mkdir(parents=True)
    argv = [*case.argv(files), "--tasks-dir", str(tasks)]
    code = (
        "import runpy, sys\n"
        f"sys.modules.update(dict.fromkeys({list(hidden)!r}))\n"
        f"sys.argv = ['joyrl_ray.export', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('joyrl_ray.export', run_name='__main__', alter_sys=True)\n"
        "finally:\n"
        "    print('torch loaded' if 'torch' in sys.modules else 'torch not loaded')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    return result, tasks


def case_argv(case: Case, root: Path) -> tuple[list[str], Path]:
    files, tasks = root / case.id / "files", root / case.id / "tasks"
    files.mkdir(parents=True)
    argv = [*case.argv(files), f"general_cfg.tasks_dir={tasks}", "general_cfg.progress=false"]
    return argv, tasks


def run_case(case: Case, root: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``python main.py`` with the case's arguments, in a subprocess."""
    argv, tasks = case_argv(case, root)
    return run_main(*argv, timeout=120), tasks


@contextlib.contextmanager
def hidden_modules(names: tuple[str, ...]) -> Iterator[None]:
    """``names`` cannot be imported (nor found) meanwhile, as when they are not installed;
    nor can their submodules that an earlier test imported."""
    names = (*names, *(m for m in sys.modules for n in names if m.startswith(f"{n}.")))
    saved = {name: sys.modules.get(name) for name in names}
    sys.modules.update(dict.fromkeys(names))
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module


def run_case_in_process(case: Case, root: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``main.main(argv)`` with the case's arguments, its exit code and output captured; an
    exception escaping it is written to stderr with its traceback, as the interpreter would."""
    import main

    argv, tasks = case_argv(case, root)
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        hidden_modules(case.hidden),
    ):
        try:
            code = main.main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue()), tasks


def check_refused(case: Case, result: subprocess.CompletedProcess[str], tasks: Path) -> None:
    err = result.stderr.strip()
    shown = f"exit {result.returncode}\nstdout: {result.stdout[-2000:]}\nstderr: {err[-3000:]}"
    assert "Traceback" not in result.stderr, shown
    assert result.returncode == 2, shown
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), shown
    assert re.search(case.named, lines[0]), f"{case.named!r} not in: {lines[0]}"
    assert re.search(case.allowed, lines[0]), f"{case.allowed!r} not in: {lines[0]}"
    assert not tasks.exists() or not any(tasks.iterdir()), list(tasks.iterdir())


def test_every_case_has_its_own_id():
    """The quick cases' outcomes are looked up by id: a repeated id would check one twice."""
    ids = [c.id for c in CASES + SUBPROCESS_CASES + RAY_CASES + EXPORT_CASES]
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_in_one_line(case: Case, tmp_path: Path, ray_session) -> None:
    # The session's Ray: a case refused after the config checks (a checkpoint, an env) has
    # Ray starting in the background by then, and a run borrowing one leaves it up.
    check_refused(case, *run_case_in_process(case, tmp_path))


@pytest.mark.parametrize("case", SUBPROCESS_CASES, ids=[c.id for c in SUBPROCESS_CASES])
def test_bad_input_is_refused_in_one_line_by_python_main_py(case: Case, tmp_path: Path) -> None:
    check_refused(case, *run_case(case, tmp_path))


@pytest.mark.parametrize("case", RAY_CASES, ids=[c.id for c in RAY_CASES])
def test_requests_no_node_can_hold_are_refused_before_any_actor_starts(
    case: Case, tmp_path: Path, ray_session
) -> None:
    """Against the session's Ray (2 CPUs, no GPU, no custom resource), which the run borrows."""
    check_refused(case, *run_case_in_process(case, tmp_path))


@pytest.mark.parametrize("case", EXPORT_CASES, ids=[c.id for c in EXPORT_CASES])
def test_bad_input_is_refused_in_one_line_by_the_export(case: Case, tmp_path: Path) -> None:
    """Refused before torch loads (a second or more of imports)."""
    result, tasks = run_export_case(case, tmp_path)
    check_refused(case, result, tasks)
    assert result.stdout.strip() == "torch not loaded", result.stdout


def test_onnx_export_without_the_extra_names_the_install_line(tmp_path: Path) -> None:
    case = Case(
        "export_onnx_without_the_extra",
        exporting("--format", "onnx"),
        r"--format onnx needs onnxruntime, onnxscript \(the optional export extra\)",
        r"pip install -r requirements-export\.txt",
    )
    check_refused(case, *run_export_case(case, tmp_path, hidden=("onnxruntime", "onnxscript")))


def test_a_config_error_is_refused_before_torch_or_ray_is_imported() -> None:
    """Checking the config is quick: a bad value fails before the heavy imports (torch
    takes about a second), so Ray can start right after the checks of a good config."""
    check = (
        "import sys; sys.argv = ['main.py', 'general_cfg.n_workers=0']; import main; "
        "code = main.main(); "
        "print(code, 'torch' in sys.modules, 'ray' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.stdout.split() == ["2", "False", "False"], result.stdout + result.stderr
    assert result.stderr.startswith("error: general_cfg.n_workers"), result.stderr


def test_an_empty_token_file_is_refused_in_one_line_before_ray_is_called(tmp_path: Path) -> None:
    """RAY_AUTH_MODE=token with RAY_AUTH_TOKEN_PATH naming an empty file: Ray would fail on
    it; the run says so in one line before its address is even tried (nothing listens on
    127.0.0.1:1, so an address line instead would show the token check was skipped)."""
    from tests.support.procs import TrackedRun, main_env

    token = tmp_path / "auth_token"
    token.write_text("\n")
    tasks = tmp_path / "tasks"
    env = main_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    env.pop("RAY_AUTH_TOKEN", None)
    args = (
        "general_cfg.ray_address=127.0.0.1:1",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
    )
    run = TrackedRun(args, env=env, log_dir=tmp_path)
    try:
        code = run.wait(120, poll_s=0.2)
        result = subprocess.CompletedProcess(args, code, run.stdout, run.stderr)
    finally:
        run.kill()
    case = Case(
        "empty_token_file",
        fixed(),
        rf"general_cfg\.ray_address='127\.0\.0\.1:1': RAY_AUTH_TOKEN_PATH='{re.escape(str(token))}'"
        r" is empty",
        r"allowed: a file holding the head node's token.*RAY_AUTH_TOKEN=<token>",
    )
    check_refused(case, result, tasks)
