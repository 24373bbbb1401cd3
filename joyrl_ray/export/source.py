"""What an export starts from: a task directory, its config and a checkpoint, loaded into
the acting policy the run trained (as test mode loads it), on the CPU."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from algos import get_algorithm
from algos.base import Policy
from joyrl_ray.config import ConfigError, RunConfig, load_config
from joyrl_ray.export.inputs import ExportError
from joyrl_ray.normalization import CHECKPOINT_KEY, FrozenObsNorm
from joyrl_ray.run.checkpoint import CheckpointError, find_checkpoint


@dataclass
class Source:
    """The trained policy to export, and where it came from."""

    task: Path
    checkpoint: Path
    cfg: RunConfig
    policy: Policy
    notes: list[str] = field(default_factory=list)  # fallbacks taken (no best.pt, ...)
    # The checkpoint's frozen observation statistics (``env_cfg.normalize_obs``), or None.
    obs_norm: FrozenObsNorm | None = None

    def make_env(self) -> gym.Env:
        """One env as the run built it (its wrappers and time limit), without rendering."""
        from envs.registry import make_env

        env_cfg = dataclasses.replace(self.cfg.env, render_mode=None)
        return make_env(env_cfg, max_episode_steps=self.cfg.general.max_step)

    def policy_input(self, obs: np.ndarray) -> np.ndarray:
        """What the policy acts on for the env's ``obs``: normalized as the run did."""
        return obs if self.obs_norm is None else self.obs_norm(obs)


def load_source(task: Path, checkpoint: str) -> Source:
    """The acting policy of ``task`` (checked by :func:`~joyrl_ray.export.inputs.find_task`)
    with the weights of ``checkpoint`` (checked by
    :func:`~joyrl_ray.export.inputs.check_checkpoint`)."""
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
    return Source(task, found.path, cfg, policy, notes, FrozenObsNorm.of(state.get(CHECKPOINT_KEY)))


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
