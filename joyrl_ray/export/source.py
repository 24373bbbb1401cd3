"""What an export starts from: a task directory, its config and a checkpoint, loaded into
the acting policy the run trained (as test mode loads it), on the CPU.

Every refusal here is an :class:`ExportError`, whose message is the one line shown.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from algos import get_algorithm
from algos.base import Policy
from joyrl_ray.config import ConfigError, RunConfig, load_config
from joyrl_ray.run.checkpoint import CheckpointError, find_checkpoint

TASK_HINT = "a task directory written by a train run (holding config.yaml and models/)"
CHECKPOINT_HINT = "best (best.pt, else the last), last, or an update number"


class ExportError(ValueError):
    """Bad input for the export; the message is the one line shown."""


@dataclass
class Source:
    """The trained policy to export, and where it came from."""

    task: Path
    checkpoint: Path
    cfg: RunConfig
    policy: Policy
    notes: list[str] = field(default_factory=list)  # fallbacks taken (no best.pt, ...)

    def make_env(self) -> gym.Env:
        """One env as the run built it (its wrappers and time limit), without rendering."""
        from envs.registry import make_env

        env_cfg = dataclasses.replace(self.cfg.env, render_mode=None)
        return make_env(env_cfg, max_episode_steps=self.cfg.general.max_step)


def find_task(task: str, tasks_dir: str) -> Path:
    """``task`` as a task directory: a name under ``tasks_dir`` or a path."""
    candidates = [Path(tasks_dir) / task, Path(task)]
    for candidate in candidates:
        if (candidate / "models").is_dir() and (candidate / "config.yaml").is_file():
            return candidate
    for candidate in candidates:
        if candidate.is_dir():
            return _not_a_task(task, candidate)
    raise ExportError(
        f"{task}: no such task directory under {tasks_dir}/ or at that path; allowed: {TASK_HINT}"
    )


def _not_a_task(task: str, folder: Path) -> Path:
    lacks = [name for name in ("config.yaml", "models/") if not (folder / name).exists()]
    raise ExportError(f"{task}: {folder} has no {' or '.join(lacks)}; allowed: {TASK_HINT}")


def checkpoint_names(models: Path) -> list[str]:
    """The checkpoints in ``models``: named ones (best, last) first, then by update."""
    names = [p.stem for p in models.glob("*.pt")]
    numbered = sorted((n for n in names if n.isdigit()), key=int)
    return sorted(n for n in names if not n.isdigit()) + numbered


def load_source(task_name: str, tasks_dir: str, checkpoint: str) -> Source:
    """The task's acting policy with ``checkpoint``'s weights (see :data:`CHECKPOINT_HINT`)."""
    if not (checkpoint in ("best", "last") or checkpoint.isdigit()):
        raise ExportError(
            f"--checkpoint {checkpoint!r} is not a checkpoint; allowed: {CHECKPOINT_HINT}"
        )
    task = find_task(task_name, tasks_dir)
    models = task / "models"
    available = checkpoint_names(models)
    if not available:
        raise ExportError(
            f"{task}: {models} holds no checkpoint; allowed: {TASK_HINT} that "
            "wrote one (every model_save_fre updates and at its end)"
        )
    if checkpoint.isdigit() and not (models / f"{int(checkpoint)}.pt").is_file():
        raise ExportError(
            f"--checkpoint {checkpoint}: {task} has no models/{int(checkpoint)}.pt"
            f"; allowed: {', '.join(available)}"
        )
    try:
        found = find_checkpoint(task, checkpoint)
        cfg = RunConfig.from_omegaconf(load_config(str(task / "config.yaml"), []))
    except (CheckpointError, ConfigError) as exc:
        raise ExportError(str(exc)) from None
    state = found.state
    if state.get("algo_name") != cfg.general.algo_name:
        raise ExportError(
            f"{found.path} was written by algo {state.get('algo_name')!r}, but {task} ran "
            f"{cfg.general.algo_name!r}; allowed: a checkpoint of the task's own run"
        )
    policy = _load_policy(cfg, state, found.path)
    # find_checkpoint's notes name the folder, which the output line names already
    notes = ["no best.pt" if note.startswith("no best.pt") else note for note in found.notes]
    return Source(task, found.path, cfg, policy, notes)


def _load_policy(cfg: RunConfig, state: dict[str, Any], path: Path) -> Policy:
    """The acting policy on the CPU with the checkpoint's acting modules."""
    import torch

    from envs.errors import EnvSpecError
    from envs.probe import probe_env

    try:
        spaces = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    except EnvSpecError as exc:
        raise ExportError(str(exc)) from None
    spec = get_algorithm(cfg.general.algo_name)
    try:
        policy = spec.policy_cls(cfg.algo, *spaces, torch.device("cpu"))
        policy.load_acting_state(state["policy"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        # torch's first line only says where ("... for Sequential:"); the next says what
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = " ".join(lines[:2])[:300] if lines else type(exc).__name__
        raise ExportError(f"{path} does not fit its task's config.yaml ({detail})") from None
    return policy
