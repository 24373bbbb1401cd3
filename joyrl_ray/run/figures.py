"""Reward curves for ``figs/`` (``save_fig``), shown on screen with ``show_fig``.

Train runs write ``figs/rewards.png``: training episode returns against env steps, raw
(faint) and smoothed (an exponential moving average, as tensorboard draws it), and the
online evaluations (mean with a +- std band, and smoothed). Test runs write
``figs/test_returns.png``: the return of every test episode and their mean. Figures are
drawn with matplotlib's object API on the Agg canvas, so saving never needs a display;
``show_fig`` draws them with pyplot and shows them when a display is available (without
one the files are still written and the run says where).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from joyrl_ray.run.task_dir import TaskDir

SMOOTHING = 0.9


def smooth(values: np.ndarray, weight: float = SMOOTHING) -> np.ndarray:
    """Debiased exponential moving average (tensorboard's smoothing)."""
    values = np.asarray(values, dtype=np.float64)
    out = np.empty_like(values)
    last, norm = 0.0, 0.0
    for i, v in enumerate(values):
        last = weight * last + (1 - weight) * v
        norm = weight * norm + (1 - weight)
        out[i] = last / norm
    return out


def new_figure(on_screen: bool = False) -> tuple[Any, Any]:
    if on_screen:  # a pyplot figure, so plt.show() can open it
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(9, 4.8))
    else:  # no pyplot: no global backend, no display needed
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(9, 4.8))
        FigureCanvasAgg(fig)
    return fig, fig.add_subplot(1, 1, 1)


def _train_figure(
    title: str, episodes: list[dict[str, Any]], evals: list[dict[str, Any]], on_screen: bool
) -> Any:
    fig, ax = new_figure(on_screen)
    if episodes:
        steps = np.array([e["env_steps"] for e in episodes], dtype=np.float64)
        returns = np.array([e["return"] for e in episodes], dtype=np.float64)
        ax.plot(steps, returns, color="tab:blue", alpha=0.25, lw=0.8, label="train return")
        ax.plot(steps, smooth(returns), color="tab:blue", lw=1.8, label="train (smoothed)")
    if evals:
        steps = np.array([e["env_steps"] for e in evals], dtype=np.float64)
        mean = np.array([e["return_mean"] for e in evals], dtype=np.float64)
        std = np.array([e.get("return_std", 0.0) for e in evals], dtype=np.float64)
        ax.fill_between(steps, mean - std, mean + std, color="tab:red", alpha=0.15)
        ax.plot(
            steps,
            mean,
            color="tab:red",
            marker="o",
            ms=3,
            lw=0.8,
            alpha=0.6,
            label="eval return (mean +- std)",
        )
        ax.plot(steps, smooth(mean, 0.6), color="tab:red", lw=1.8, label="eval (smoothed)")
    ax.set_xlabel("env steps")
    ax.set_ylabel("episode return")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if episodes or evals:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig


def _test_figure(title: str, episodes: list[dict[str, Any]], on_screen: bool) -> Any:
    fig, ax = new_figure(on_screen)
    returns = np.array([e["return"] for e in episodes], dtype=np.float64)
    index = np.arange(1, len(returns) + 1)
    ax.bar(index, returns, color="tab:blue", alpha=0.6, label="test episode return")
    if len(returns):
        ax.axhline(
            returns.mean(),
            color="tab:red",
            lw=1.5,
            label=f"mean {returns.mean():.1f} +- {returns.std():.1f}",
        )
        ax.legend(loc="upper right", fontsize=8)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if len(returns) and returns.max() > 0:
        ax.set_ylim(top=returns.max() * 1.15)  # headroom for the legend
    ax.set_xlabel("test episode")
    ax.set_ylabel("episode return")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return fig


def save_reward_figures(
    task: TaskDir,
    episodes: list[dict[str, Any]],
    evals: list[dict[str, Any]],
    *,
    mode: str = "train",
    save: bool = True,
    show: bool = False,
) -> list[Path]:
    """Write the mode's figure(s) to ``figs/`` and, with ``show`` and a display, show them.

    Shown figures are saved too (the window goes, the file stays). Returns the files.
    """
    from joyrl_ray.run.video import display_available

    on_screen = show and display_available()
    if mode == "test":
        figures = {"test_returns.png": _test_figure(task.root.name, episodes, on_screen)}
    else:
        figures = {"rewards.png": _train_figure(task.root.name, episodes, evals, on_screen)}
    paths = []
    for name, fig in figures.items():
        if save or show:
            path = task.figs / name
            fig.savefig(path, dpi=100)
            paths.append(path)
    if show and not on_screen:
        print(
            f"warning: show_fig: no display to show figures on; they are in {task.figs}",
            file=sys.stderr,
        )
    if on_screen:
        import matplotlib.pyplot as plt

        plt.show()  # blocks until the windows are closed
        plt.close("all")
    return paths
