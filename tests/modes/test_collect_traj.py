"""collect_traj: every counted episode is written once, across files of at most 1000."""

from __future__ import annotations

import csv
import pickle
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from joyrl_ray import export_minari
from joyrl_ray.run import trajectories
from joyrl_ray.run.checkpoint import find_checkpoint
from joyrl_ray.run.runner import RunResult, run
from tests.support.modes_setup import TRAIN_OVERRIDES
from tests.support.runs import make_cfg, needs_extra

LAYERS = next(o for o in TRAIN_OVERRIDES if o.startswith("algo_cfg.value_layers="))


def assert_trajectories_match_episodes(result: RunResult) -> list[dict[str, np.ndarray]]:
    """One trajectory per episodes.csv row, in order, matching its length and return."""
    with (result.task_dir / "results" / "episodes.csv").open() as f:
        rows = list(csv.DictReader(f))
    trajs = trajectories.load(result.task_dir)
    assert len(trajs) == len(rows) == result.summary["episodes"] == result.summary["trajectories"]
    for row, traj in zip(rows, trajs, strict=True):
        assert len(traj["obs"]) == int(row["length"])
        assert float(traj["rewards"].sum()) == pytest.approx(float(row["return"]))
        assert traj["terminated"][-1] or traj["truncated"][-1]
        np.testing.assert_array_equal(traj["next_obs"][:-1], traj["obs"][1:])
    return trajs


def test_train_mode_collects_every_episode(tmp_path: Path) -> None:
    result = run(
        make_cfg(
            tmp_path,
            *TRAIN_OVERRIDES,
            "general_cfg.max_env_steps=600",
            "general_cfg.collect_traj=true",
        )
    )
    trajs = assert_trajectories_match_episodes(result)
    first = trajs[0]
    assert first["obs"].dtype == np.float32 and first["obs"].shape[1:] == (4,)
    assert first["actions"].dtype == np.int64 and first["terminated"].dtype == bool
    assert sum(len(t["obs"]) for t in trajs) <= result.summary["env_steps"]


def test_files_hold_at_most_1000_and_minari_missing_is_one_line(
    trained: RunResult,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1100 two-step test episodes: trajs_0.pkl holds 1000, trajs_1.pkl 100."""
    result = run(
        make_cfg(
            tmp_path,
            "general_cfg.mp_backend=single",
            "general_cfg.mode=test",
            f"general_cfg.load_path={trained.task_dir}",
            "general_cfg.max_episode=1100",
            "general_cfg.max_step=2",
            "general_cfg.collect_traj=true",
            LAYERS,
        )
    )
    files = trajectories.trajectory_files(result.task_dir)
    assert [f.name for f in files] == ["trajs_0.pkl", "trajs_1.pkl"]
    assert [len(pickle.loads(f.read_bytes())) for f in files] == [1000, 100]
    trajs = assert_trajectories_match_episodes(result)
    assert all(len(t["obs"]) == 2 and t["truncated"][-1] for t in trajs)

    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "minari", None)  # as if it were not installed
    code = export_minari.main([str(result.task_dir), "joyrl/cartpole-test-v0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [
        'error: minari is not installed (it is optional): pip install "minari[hdf5]"'
    ]


@pytest.mark.slow
def test_ray_train_mode_caps_at_max_episode_without_losing_or_duplicating(
    tmp_path: Path, ray_session
) -> None:
    result = run(
        make_cfg(
            tmp_path,
            *TRAIN_OVERRIDES,
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_episode=40",
            "general_cfg.max_env_steps=100000",
            "general_cfg.collect_traj=true",
        )
    )
    assert result.summary["stop_reason"] == "max_episode"
    assert result.summary["episodes"] == 40
    assert_trajectories_match_episodes(result)


def test_export_to_minari(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    minari = needs_extra("minari", "requirements-minari.txt")
    needs_extra("h5py", "requirements-minari.txt")
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    result = run(
        make_cfg(
            tmp_path,
            *TRAIN_OVERRIDES,
            "general_cfg.max_env_steps=500",
            "general_cfg.collect_traj=true",
        )
    )
    assert export_minari.main([str(result.task_dir), "joyrl/cartpole-dqn-v0"]) == 0
    dataset = minari.load_dataset("joyrl/cartpole-dqn-v0")
    trajs = trajectories.load(result.task_dir)
    assert dataset.total_episodes == len(trajs)
    assert dataset.total_steps == sum(len(t["obs"]) for t in trajs)
    for episode, traj in zip(dataset.iterate_episodes(), trajs, strict=True):
        np.testing.assert_allclose(episode.observations[:-1], traj["obs"])
        np.testing.assert_allclose(episode.observations[-1], traj["next_obs"][-1])
        np.testing.assert_array_equal(episode.actions, traj["actions"])
        np.testing.assert_allclose(episode.rewards, traj["rewards"])
        np.testing.assert_array_equal(episode.terminations, traj["terminated"])
    env = dataset.recover_environment()
    assert env.spec.id == "CartPole-v1"
    env.close()
    # The same id again is refused in one line, and the existing dataset is left alone.
    assert export_minari.main([str(result.task_dir), "joyrl/cartpole-dqn-v0"]) == 2
    assert minari.load_dataset("joyrl/cartpole-dqn-v0").total_episodes == len(trajs)


def _greedy_share(trained: RunResult, trajs: list[dict[str, np.ndarray]]) -> float:
    """The share of recorded actions that the checkpoint's greedy policy would take."""
    cfg = make_cfg(trained.task_dir.parent, *TRAIN_OVERRIDES)
    state = find_checkpoint(trained.task_dir, "best").state
    env = gym.make("CartPole-v1")
    spaces = (env.observation_space, env.action_space)
    policy = get_algorithm("DQN").policy_cls(cfg.algo, *spaces, torch.device("cpu"))
    policy.load_acting_state(state["policy"])
    obs = np.concatenate([t["obs"] for t in trajs])
    actions = np.concatenate([t["actions"] for t in trajs])
    greedy, _ = policy.act(obs, explore=False, env_steps=0)
    return float(np.mean(greedy == actions))


def test_test_mode_records_a_dataset_of_chosen_quality_with_random_action_rate(
    trained: RunResult, tmp_path: Path
) -> None:
    """At rate 0 every recorded action is the checkpoint's greedy one; at rate 1 each is
    drawn at random (of CartPole's two actions, about half agree with the greedy one)."""
    shares = {}
    for rate in (0.0, 1.0):
        result = run(
            make_cfg(
                tmp_path / str(rate),
                "general_cfg.mp_backend=single",
                "general_cfg.mode=test",
                f"general_cfg.load_path={trained.task_dir}",
                "general_cfg.max_episode=20",
                "general_cfg.collect_traj=true",
                f"general_cfg.random_action_rate={rate}",
                "general_cfg.seed=3",
                LAYERS,
            )
        )
        trajs = assert_trajectories_match_episodes(result)
        shares[rate] = _greedy_share(trained, trajs)
    assert shares[0.0] == 1.0, shares
    assert 0.35 < shares[1.0] < 0.65, shares
