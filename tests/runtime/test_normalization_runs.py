"""Normalization in real runs: what checkpoints hold, resume, test mode, and the Ray backend.

PPO on Pendulum whose observations are scaled by 1000 (``tests/support/scaled_envs.py``),
a few thousand env steps: enough for statistics to travel, not to learn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from algos import get_algorithm
from algos.base import Policy
from envs.probe import probe_env
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.normalization import CHECKPOINT_KEY, obs_transform
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.evaluator import Evaluator, OnlineEvaluator
from joyrl_ray.run.checkpoint import load_checkpoint, numbered_checkpoints
from joyrl_ray.run.runner import RunResult, run
from tests.support.runs import ROOT, make_cfg

CPU = torch.device("cpu")

PENDULUM_PPO = str(ROOT / "configs" / "pendulum_ppo.yaml")
SHORT = [
    "env_cfg.id=tests.support.scaled_envs:ScaledPendulum",
    "env_cfg.normalize_obs=true",
    "env_cfg.normalize_reward=true",
    "general_cfg.max_step=200",
    "general_cfg.n_workers=2",
    "general_cfg.n_envs_per_worker=2",
    "algo_cfg.rollout_len=64",
    "general_cfg.model_save_fre=2",
    "general_cfg.online_eval_episode=2",
    "general_cfg.save_fig=false",
    "general_cfg.seed=3",
]
ROLLOUT_STEPS = 2 * 2 * 64  # env steps per PPO iteration


def short_run(tasks: Path, *overrides: str) -> RunResult:
    return run(make_cfg(tasks, *SHORT, *overrides, yaml_path=PENDULUM_PPO))


def saved(task: Path) -> dict[str, Any]:
    return load_checkpoint(task / "models" / "last.pt")[CHECKPOINT_KEY]


#: The module's trained run: one process, eight PPO iterations.
TRAINED = ("general_cfg.mp_backend=single", "general_cfg.max_env_steps=2048")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    tasks = tmp_path_factory.mktemp("norm_tasks")
    return short_run(tasks, *TRAINED)


def acting_policy(cfg: RunConfig, state: dict[str, Any]) -> Policy:
    """The checkpoint ``state``'s acting policy, as test mode loads it."""
    spaces = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    policy = get_algorithm(cfg.general.algo_name).policy_cls(cfg.algo, *spaces, CPU)
    policy.load_acting_state(state["policy"])
    return policy


def test_checkpoint_holds_the_merged_statistics_of_both_workers(trained: RunResult) -> None:
    summary = trained.summary
    norm = summary["normalization"]
    assert norm["workers_merged"] == 2
    steps = summary["env_steps"]
    # Each worker also counts its envs' first observations; a rollout's deltas travel with it.
    assert steps <= norm["obs_count"] <= steps + 2 * 2
    assert norm["reward_count"] == steps
    state = saved(trained.task_dir)
    assert state["version"] == norm["version"] and state["obs"]["count"] == norm["obs_count"]
    mean, std, clip = obs_transform({CHECKPOINT_KEY: state}) or (None, None, None)
    assert clip == 10.0 and mean is not None and std is not None
    assert abs(mean[0]) < 1000 and std.max() > 100  # statistics of the scaled observations


def test_online_evaluations_act_on_the_frozen_statistics_of_the_checkpoint_they_evaluate(
    trained: RunResult,
) -> None:
    """An evaluator of the run's own settings, given each checkpoint in turn with its
    statistics, plays the evaluations the run recorded; without them, other episodes."""
    cfg = make_cfg(trained.task_dir.parent, *SHORT, *TRAINED, yaml_path=PENDULUM_PPO)
    history = trained.summary["eval_history"]
    models = trained.task_dir / "models"
    assert [e["updates"] for e in history] == numbered_checkpoints(models)  # each one kept
    spaces = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    frozen, raw = (OnlineEvaluator(EvaluatorConfig.of(cfg), spaces) for _ in range(2))
    for evaluation in history:
        state = load_checkpoint(models / f"{evaluation['updates']}.pt")
        weights = acting_policy(cfg, state).get_weights()
        updates, steps = evaluation["updates"], evaluation["env_steps"]
        normalized = frozen.evaluate(weights, updates, steps, state[CHECKPOINT_KEY])
        unnormalized = raw.evaluate(weights, updates, steps, None)
        assert normalized.returns["return_mean"] == evaluation["return_mean"]
        assert unnormalized.returns["return_mean"] != evaluation["return_mean"]
    frozen.close()
    raw.close()


def test_test_mode_uses_the_checkpoint_statistics_and_never_moves_them(
    trained: RunResult,
) -> None:
    before = saved(trained.task_dir)
    testing = (
        "general_cfg.mode=test",
        f"general_cfg.load_path={trained.task_dir}",
        "general_cfg.load_model_step=last",
        "general_cfg.max_episode=2",
        "general_cfg.mp_backend=single",
        "env_cfg.render_mode=rgb_array",
        "general_cfg.max_step=40",  # short episodes: a recorded one is drawn frame by frame
    )
    tested = short_run(trained.task_dir.parent, *testing)
    norm = tested.summary["normalization"]
    assert tested.summary["episodes"] == 2
    assert norm["version"] == before["version"]
    assert norm["obs_count"] == int(before["obs"]["count"]) and norm["workers_merged"] == 0
    assert saved(trained.task_dir) == before
    # The recorded episode is an evaluator's on the checkpoint's frozen statistics.
    cfg = make_cfg(trained.task_dir.parent, *SHORT, *testing, yaml_path=PENDULUM_PPO)
    policy = acting_policy(cfg, load_checkpoint(trained.task_dir / "models" / "last.pt"))

    def recorded(normalization: dict[str, Any] | None) -> float:
        general = cfg.general
        evaluator = Evaluator(
            cfg.env,
            policy,
            seed=general.seed,
            max_step=general.max_step,
            stream="video",
            normalization=normalization,
        )
        try:
            return evaluator.run_episode()[0]
        finally:
            evaluator.close()

    assert tested.summary["rendered_returns"] == [recorded(before)]
    assert tested.summary["rendered_returns"] != [recorded(None)]


def test_test_mode_refuses_a_config_that_does_not_normalize_as_trained(
    trained: RunResult,
) -> None:
    with pytest.raises(ConfigError, match=r"env_cfg\.normalize_obs=false, but .* trained with"):
        short_run(
            trained.task_dir.parent,
            "general_cfg.mode=test",
            f"general_cfg.load_path={trained.task_dir}",
            "general_cfg.mp_backend=single",
            "env_cfg.normalize_obs=false",
        )


def test_resume_continues_from_the_checkpoint_statistics(trained: RunResult) -> None:
    before = saved(trained.task_dir)
    resumed = short_run(
        trained.task_dir.parent,
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={trained.task_dir}",
        "general_cfg.max_env_steps=3072",
        "general_cfg.mp_backend=single",
    )
    norm = resumed.summary["normalization"]
    new_steps = resumed.summary["env_steps"] - trained.summary["env_steps"]
    assert new_steps >= ROLLOUT_STEPS
    assert norm["version"] > before["version"]
    assert norm["obs_count"] >= before["obs"]["count"] + new_steps


@pytest.mark.usefixtures("ray_session")
def test_ray_backend_merges_the_deltas_of_both_workers(tmp_path: Path) -> None:
    result = short_run(
        tmp_path,
        "general_cfg.mp_backend=ray",
        "general_cfg.max_env_steps=2048",
        "general_cfg.online_eval=false",
    )
    summary = result.summary
    norm = summary["normalization"]
    assert norm["workers_merged"] == 2
    collected = summary["transitions_collected"]
    # Every reported step's observation was merged (plus each env's first observation);
    # what a worker saw after its last report is the unsynced tail.
    assert collected <= norm["obs_count"] <= collected + 2 * 2
    assert norm["reward_count"] == collected


def test_a_seeded_normalized_run_in_one_process_is_reproducible(
    trained: RunResult, tmp_path: Path
) -> None:
    """The same seed again, observations and rewards normalized: the statistics travel in
    call order, so the weights, the statistics and the evaluations come out the same."""
    again = short_run(tmp_path, *TRAINED)
    first, second = trained.summary, again.summary
    assert first["normalization"]["version"] > 0
    assert second["normalization"] == first["normalization"]
    assert second["learners"][0]["params_digest"] == first["learners"][0]["params_digest"]
    returns = [(e["updates"], e["return_mean"]) for e in first["eval_history"]]
    assert [(e["updates"], e["return_mean"]) for e in second["eval_history"]] == returns
    assert returns and saved(again.task_dir) == saved(trained.task_dir)
