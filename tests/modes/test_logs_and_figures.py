"""Tensorboard scalars, reward figures, checkpoints and online evaluations of a train run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from joyrl_ray.run.checkpoint import load_checkpoint
from joyrl_ray.run.runner import RunResult, run
from tests.support.modes_setup import TRAIN_OVERRIDES
from tests.support.runs import make_cfg


def event_scalars(logs: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    (events,) = logs.glob("events.out.tfevents.*")
    acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def algorithm_metric_names(trained: RunResult) -> set[str]:
    """What DQN's learn() returns, asked of the algorithm itself, plus its exploration stats."""
    import gymnasium as gym
    import torch

    from algos import get_algorithm

    cfg = make_cfg(trained.task_dir.parent, *TRAIN_OVERRIDES)
    env = gym.make("CartPole-v1")
    policy = get_algorithm("DQN").algorithm_cls(
        cfg.algo, env.observation_space, env.action_space, torch.device("cpu")
    )
    n = 8
    batch = {
        "obs": np.zeros((n, 4), np.float32),
        "actions": np.zeros(n, np.int64),
        "rewards": np.ones(n, np.float32),
        "next_obs": np.zeros((n, 4), np.float32),
        "discounts": np.full(n, 0.99, np.float32),
        "weights": np.ones(n, np.float32),
    }
    return set(policy.learn(batch).metrics) | set(policy.exploration_stats(0))


def test_tensorboard_has_every_learner_metric_and_the_run_scalars(trained: RunResult) -> None:
    scalars = event_scalars(trained.task_dir / "logs")
    metrics = algorithm_metric_names(trained)
    assert {"loss", "q_mean", "grad_norm", "lr", "epsilon"} <= metrics
    for name in metrics:
        points = scalars[f"learner/{name}"]
        assert points and all(math.isfinite(v) for _, v in points), name
        steps = [s for s, _ in points]
        assert steps == sorted(steps) and steps[-1] <= trained.summary["updates"]
    lr = make_cfg(trained.task_dir.parent, *TRAIN_OVERRIDES).algo.lr
    assert all(v == pytest.approx(lr) for _, v in scalars["learner/lr"])
    for tag in (
        "episode/return",
        "episode/length",
        "explore/epsilon",
        "eval/return_mean",
        "eval/return_std",
        "speed/env_steps_per_s_run_mean",
        "speed/updates_per_s_run_mean",
    ):
        assert scalars.get(tag), tag
    assert len(scalars["episode/return"]) == trained.summary["episodes"]
    assert len(scalars["eval/return_mean"]) == len(trained.summary["eval_history"])
    (speed,) = scalars["speed/env_steps_per_s_run_mean"]
    assert speed[1] > 0


def test_checkpoints_every_model_save_fre_and_best_from_online_eval(trained: RunResult) -> None:
    summary, models = trained.summary, trained.task_dir / "models"
    updates = summary["updates"]
    evals = summary["eval_history"]
    # One evaluation per model_save_fre (100) updates, on online_eval_episode (2) episodes.
    assert [e["updates"] for e in evals] == list(range(100, updates + 1, 100))
    assert all(e["episodes"] == 2 for e in evals)
    numbered = sorted(int(p.stem) for p in models.glob("[0-9]*.pt"))
    expected = sorted({*range(100, updates + 1, 100), updates})[-2:]  # keep_checkpoints=2
    assert numbered == expected
    assert {p.name for p in models.iterdir()} == {f"{n}.pt" for n in numbered} | {
        "last.pt",
        "best.pt",
    }
    best = load_checkpoint(models / "best.pt")
    top = max(e["return_mean"] for e in evals)
    first_top = next(e for e in evals if e["return_mean"] == top)
    assert best["best_return"] == pytest.approx(top)
    assert best["counters"]["updates"] == first_top["updates"]
    assert load_checkpoint(models / "last.pt")["counters"]["updates"] == updates
    assert not list(models.glob(".*"))  # no temp files left behind


def test_reward_figure_is_a_real_picture(trained: RunResult) -> None:
    import matplotlib.image as mpimg

    png = mpimg.imread(trained.task_dir / "figs" / "rewards.png")
    assert png.shape[:2] == (480, 900) and png[..., :3].std() > 0.05


def test_show_fig_without_a_display_still_writes_the_figure(
    trained: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(var, raising=False)
    layers = next(o for o in TRAIN_OVERRIDES if o.startswith("algo_cfg.value_layers="))
    common = [
        "general_cfg.mp_backend=single",
        "general_cfg.mode=test",
        "general_cfg.max_episode=2",
        f"general_cfg.load_path={trained.task_dir.name}",
        layers,
    ]
    tasks = trained.task_dir.parent
    shown = run(make_cfg(tasks, *common, "general_cfg.save_fig=false", "general_cfg.show_fig=true"))
    assert [p.name for p in (shown.task_dir / "figs").iterdir()] == ["test_returns.png"]
    quiet = run(make_cfg(tasks, *common, "general_cfg.save_fig=false"))
    assert not list((quiet.task_dir / "figs").iterdir())
