"""Offline algorithms learn through the runtime from datasets the tests make themselves
(``tests/support/cartpole_data.py``): no workers, ``general_cfg.dataset``, online
evaluations of the checkpoints as in any run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support.cartpole_data import (
    MIXED_RATES,
    cartpole_episodes,
    episode_returns,
    write_task_dir,
)
from tests.support.cli_runs import evals, train_in_process
from tests.support.pendulum_data import pendulum_episodes
from tests.support.procs import task_dirs


def best_eval(summary: dict) -> float:
    return max(e["return_mean"] for e in summary["eval_history"])


@pytest.mark.timeout(400)
def test_bc_clones_an_expert_cartpole_dataset_to_475_on_ray_with_two_learners(
    tmp_path: Path, ray_session
) -> None:
    """20k steps of a scripted expert (500 every episode), two shards, two learners."""
    data = write_task_dir(cartpole_episodes(20_000, random_rate=0.0, seed=0), tmp_path / "data")
    summary = train_in_process(
        tmp_path / "tasks",
        "cartpole_bc",
        (
            f"general_cfg.dataset={data}",
            "general_cfg.n_learners=2",
            "general_cfg.n_replay_shards=2",
            "general_cfg.max_updates=1500",
            "general_cfg.model_save_fre=250",
        ),
        475,
    )
    assert summary["n_workers"] == 0 and summary["env_steps"] == 0
    assert best_eval(summary) >= 475, evals(summary)
    assert summary["stop_reason"] in ("reward_threshold", "max_updates"), summary["stop_reason"]


@pytest.mark.timeout(400)
def test_discrete_cql_learns_past_a_mixed_datasets_return_through_a_resume(
    tmp_path: Path,
) -> None:
    """A dataset where the poor controller's action is the most frequent wherever it and
    the expert disagree (mean return about 215): DiscreteCQL, 1500 updates, then a resume
    from that checkpoint to 3000, in one process, is evaluated well past the data."""
    episodes = cartpole_episodes(20_000, seed=0, **MIXED_RATES)
    data_return = float(np.mean(episode_returns(episodes)))
    data = write_task_dir(episodes, tmp_path / "data")
    common = (
        "general_cfg.mp_backend=single",
        f"general_cfg.dataset={data}",
        "general_cfg.model_save_fre=500",
        "general_cfg.seed=1",
    )
    first = train_in_process(
        tmp_path / "first", "cartpole_discrete_cql", (*common, "general_cfg.max_updates=1500"), None
    )
    assert first["updates"] == 1500
    (task,) = task_dirs(tmp_path / "first")
    resumed = train_in_process(
        tmp_path / "resumed",
        "cartpole_discrete_cql",
        (
            *common,
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={task}",
            "general_cfg.max_updates=3000",
        ),
        None,
    )
    assert resumed["updates"] == 3000 and resumed["resumed_from"]
    assert best_eval(resumed) >= data_return + 100, (data_return, evals(resumed))


@pytest.mark.timeout(400)
def test_iql_learns_pendulum_from_a_noisy_controllers_dataset_past_its_return(
    tmp_path: Path,
) -> None:
    """40k steps of a scripted swing-up controller with torque noise of std 2 (mean return
    about -450): IQL's evaluations reach -300 within 6000 updates, in one process."""
    episodes = pendulum_episodes(40_000, noise=2.0, seed=1)
    data = write_task_dir(episodes, tmp_path / "data")
    summary = train_in_process(
        tmp_path / "tasks",
        "pendulum_iql",
        ("general_cfg.mp_backend=single", f"general_cfg.dataset={data}"),
        None,
    )
    assert summary["dataset"]["mean_return"] < -400, summary["dataset"]
    assert best_eval(summary) >= -300, evals(summary)
