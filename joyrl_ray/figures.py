"""Reward curves for ``figs/``: training returns (raw and smoothed) and online evaluations."""

from __future__ import annotations

from typing import Any

import numpy as np

from joyrl_ray.task_dir import TaskDir


def smooth(values: np.ndarray, weight: float = 0.9) -> np.ndarray:
    """Exponential moving average, as tensorboard draws it."""
    out = np.empty_like(values, dtype=np.float64)
    last = values[0] if len(values) else 0.0
    for i, v in enumerate(values):
        last = weight * last + (1 - weight) * v
        out[i] = last
    return out


def save_reward_figures(
    task: TaskDir,
    episodes: list[dict[str, Any]],
    evals: list[dict[str, Any]],
    *,
    show: bool = False,
) -> None:
    import matplotlib

    if not show:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    if episodes:
        steps = np.array([e["env_steps"] for e in episodes], dtype=np.float64)
        returns = np.array([e["return"] for e in episodes], dtype=np.float64)
        ax.plot(steps, returns, color="tab:blue", alpha=0.3, label="train return")
        ax.plot(steps, smooth(returns), color="tab:blue", label="train return (smoothed)")
    if evals:
        ax.errorbar(
            [e["env_steps"] for e in evals],
            [e["return_mean"] for e in evals],
            yerr=[e["return_std"] for e in evals],
            color="tab:red",
            marker="o",
            markersize=3,
            capsize=2,
            label="eval return (mean +- std)",
        )
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return")
    ax.set_title(task.root.name)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(task.figs / "rewards.png", dpi=100)
    if show:
        plt.show()
    plt.close(fig)
