"""What a run starts from: the mode's checks, the checkpoint, and the history it continues.

Everything here runs before any env, actor or task directory exists, so bad input ends
the run with one line (``ConfigError`` / ``CheckpointError``, exit code 2).

Test mode (``general_cfg.mode: test``)
    Loads ``load_path``'s checkpoint (``load_checkpoint`` is implied): ``load_model_step``
    ``best`` (default; falls back to the last checkpoint), ``last`` or an update number.
    Runs ``max_episode`` greedy episodes over the workers; ``max_episode: -1`` (the
    default, "unset") means :data:`TEST_DEFAULT_EPISODES`, any other value must be > 0.
    ``max_env_steps`` does not apply. ``render_mode: human`` without a display falls back
    to ``rgb_array`` (``videos/video.gif``) with a warning.

Resume (``mode: train`` with ``load_checkpoint: true``)
    Continues the run in ``load_path`` from its last checkpoint (``load_model_step: best``,
    the default, means last here: best is for testing; an update number picks an older
    numbered checkpoint). Model, optimizer, target nets, update / env-step / episode
    counters, the learner's RNG and the best eval return continue. The replay buffer
    continues only with ``general_cfg.save_buffer: true`` (written to ``replay.npz`` beside
    ``last.pt``); otherwise it refills, ``learn_start`` steps first. ``max_env_steps`` and
    ``max_episode`` are totals over the whole run, as SB3's
    ``learn(reset_num_timesteps=False)``: resuming a 20k-step run with
    ``max_env_steps: 40000`` trains 20k more. A total already reached is an error.
    The new task directory starts with the old run's episodes.csv / evals.csv rows (up to
    the checkpoint), its tensorboard events and its best.pt, so curves, summary and
    figures cover the whole run.
"""

from __future__ import annotations

import csv
import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from algos import get_algorithm
from algos.base import Algorithm, Policy
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.normalization import CHECKPOINT_KEY
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.acting import acting_policy
from joyrl_ray.run.checkpoint import (
    CheckpointError,
    FoundCheckpoint,
    checkpoint_updates,
    find_checkpoint,
    resolve_task_dir,
)
from joyrl_ray.run.task_dir import TaskDir
from joyrl_ray.run.video import display_available

TEST_DEFAULT_EPISODES = 10
REPLAY_FILE = "replay.npz"  # general_cfg.save_buffer writes it beside last.pt


@dataclass
class Start:
    """A checked config and, for test / resume, the checkpoint and the policy it loads into."""

    cfg: RunConfig
    checkpoint: dict[str, Any] | None = None
    source: Path | None = None  # the task directory loaded from
    checkpoint_file: Path | None = None
    # test mode: the acting Policy it acts with; resume: the Algorithm the learner continues
    policy: Any = None
    notes: list[str] = field(default_factory=list)  # to log and print: fallbacks taken
    # A multi-agent run's, by learning policy: the checkpoint each starts from, and (test
    # mode) the acting policy it plays with.
    policy_checkpoints: dict[str, FoundCheckpoint] = field(default_factory=dict)
    acting: dict[str, Policy] = field(default_factory=dict)

    @property
    def resume(self) -> dict[str, Any] | None:
        return self.checkpoint if self.cfg.general.mode == "train" else None

    def checkpoint_bytes(self) -> bytes | None:
        """The start checkpoint as written, for the learners to load."""
        return self.checkpoint_file.read_bytes() if self.checkpoint_file is not None else None

    def policy_bytes(self, policy: str) -> bytes | None:
        """A multi-agent run's ``policy``'s start checkpoint as written."""
        found = self.policy_checkpoints.get(policy)
        return found.path.read_bytes() if found is not None else None

    def policy_updates(self) -> dict[str, int]:
        """A resumed multi-agent run's update count of each policy."""
        return {p: checkpoint_updates(f.state) for p, f in self.policy_checkpoints.items()}

    def acting_policies(self, plan: MultiAgentPlan | None) -> dict[str, Policy]:
        """Test mode: what each policy acts with (a single-agent run's one policy)."""
        return self.acting if plan is not None else {DEFAULT_POLICY: self.policy}


def saved_buffer(start: Start) -> dict[str, Any] | None:
    """The replay buffer a run saved beside its checkpoints (``save_buffer``), if any."""
    if start.source is None:
        return None
    path = start.source / "models" / REPLAY_FILE
    if not path.is_file():
        return None
    with np.load(path) as data:
        return {key: data[key] for key in data.files}


def prepare(
    cfg: RunConfig,
    spaces: tuple[gym.Space, gym.Space] | None,
    plan: MultiAgentPlan | None = None,
) -> Start:
    """Check the mode's settings and load the start checkpoint (a multi-agent run's
    ``plan``: each learning policy's); raise before anything runs."""
    general = cfg.general
    notes: list[str] = []
    test = general.mode == "test"
    if test:
        episodes = general.max_episode
        if episodes == -1:
            episodes = TEST_DEFAULT_EPISODES
        elif episodes <= 0:
            raise ConfigError(
                f"general_cfg.max_episode={general.max_episode}: test mode runs max_episode "
                f"episodes and needs a number > 0 (-1, the default, runs {TEST_DEFAULT_EPISODES})"
            )
        env = cfg.env
        if env.render_mode == "human" and not display_available():
            env = dataclasses.replace(env, render_mode="rgb_array")
            notes.append(
                "env_cfg.render_mode=human but no display (DISPLAY / WAYLAND_DISPLAY unset): "
                "writing videos/video.gif instead (rgb_array)"
            )
        general = dataclasses.replace(general, max_episode=episodes, load_checkpoint=True)
        cfg = dataclasses.replace(cfg, general=general, env=env)
    elif cfg.env.render_mode is not None:
        notes.append(
            f"env_cfg.render_mode={cfg.env.render_mode} applies to test mode; training envs "
            "do not render"
        )
    if not general.load_checkpoint:
        return Start(cfg, notes=notes)

    source = resolve_task_dir(general.load_path, general.tasks_dir).resolve()
    step = str(general.load_model_step)
    if not test and step == "best":
        step = "last"
    if plan is not None:
        return _prepare_policies(cfg, plan, source, step, notes)
    assert spaces is not None
    found = find_checkpoint(source, step)
    notes.extend(found.notes)
    state = found.state
    if state.get("algo_name") != general.algo_name:
        raise CheckpointError(
            f"{found.path} was written by algo {state.get('algo_name')!r}, but "
            f"general_cfg.algo_name={general.algo_name!r} (set it to match, or pass the "
            f"training run's --yaml {source / 'config.yaml'})"
        )
    policy = _load_policy(cfg, state, found.path, source, spaces, learning=not test)
    if test:
        _check_normalization(cfg, state, found.path)
    if not test:
        _check_totals(cfg, state, found.path)
    return Start(cfg, state, source, found.path, policy, notes)


def _load_policy(
    cfg: RunConfig,
    state: dict[str, Any],
    path: Path,
    source: Path,
    spaces: tuple[gym.Space, gym.Space],
    *,
    learning: bool,
) -> Any:
    """The checkpoint loaded on CPU; a checkpoint that does not fit is one line.

    Test mode builds the acting policy and loads only what acting needs; a resume builds
    the learning algorithm and checks that all of it fits.
    """
    spec = get_algorithm(cfg.general.algo_name)
    cpu = torch.device("cpu")
    loaded: Algorithm | Policy
    if learning:
        algorithm = spec.algorithm_cls(cfg.algo, *spaces, cpu)
        load, loaded = algorithm.load_state_dict, algorithm
    else:
        policy = spec.policy_cls(cfg.algo, *spaces, cpu)
        load, loaded = policy.load_acting_state, policy
    try:
        load(state["policy"])
    except (RuntimeError, KeyError, ValueError, TypeError) as exc:
        # torch's first line only says where ("... for Sequential:"); the next says what
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        detail = " ".join(lines[:2])[:300] if lines else type(exc).__name__
        raise CheckpointError(
            f"{path} does not fit this env_cfg / algo_cfg ({detail}); run with the training "
            f"run's config: --yaml {source / 'config.yaml'}"
        ) from None
    return loaded


def _prepare_policies(
    cfg: RunConfig, plan: MultiAgentPlan, source: Path, step: str, notes: list[str]
) -> Start:
    """A multi-agent run's resume or test: each learning policy's checkpoint, from its own
    folder of the run's ``models/``; the run's counters are those of the newest of them."""
    test = cfg.general.mode == "test"
    found: dict[str, FoundCheckpoint] = {}
    acting: dict[str, Policy] = {}
    for policy in plan.trained:
        if not (source / "models" / policy).is_dir():
            raise CheckpointError(
                f"general_cfg.load_path={source.name}: models/{policy} does not exist; the run "
                f"there did not train a policy {policy!r} (multi_agent.policies)"
            )
        checkpoint = find_checkpoint(source, step, policy=policy)
        notes.extend(checkpoint.notes)
        found[policy] = checkpoint
        if test:
            player = acting_policy(plan.policies[policy])
            try:
                player.load_acting_state(checkpoint.state["policy"])
            except (RuntimeError, KeyError, ValueError, TypeError) as exc:
                detail = " ".join(str(exc).split())[:300]
                raise CheckpointError(
                    f"{checkpoint.path} does not fit policy {policy} ({detail}); run with the "
                    f"training run's config: --yaml {source / 'config.yaml'}"
                ) from None
            acting[policy] = player
    newest = max(found.values(), key=lambda f: (f.state.get("counters") or {}).get("env_steps", 0))
    if not test:
        _check_totals(cfg, newest.state, newest.path)
    return Start(
        cfg,
        newest.state,
        source,
        newest.path,
        None,
        notes,
        policy_checkpoints=found,
        acting=acting,
    )


def _check_normalization(cfg: RunConfig, state: dict[str, Any], path: Path) -> None:
    """Test mode acts on observations as the checkpoint's policy learnt them."""
    saved = state.get(CHECKPOINT_KEY) or {}
    trained = saved.get("obs") is not None
    if trained != cfg.env.normalize_obs:
        how = "with" if trained else "without"
        raise ConfigError(
            f"env_cfg.normalize_obs={str(cfg.env.normalize_obs).lower()}, but {path} was "
            f"trained {how} observation normalization; allowed: normalize_obs="
            f"{str(trained).lower()} (the training run's --yaml)"
        )


def _check_totals(cfg: RunConfig, state: dict[str, Any], path: Path) -> None:
    counters = state.get("counters") or {}
    general = cfg.general
    for key, counter, what in (
        ("max_env_steps", "env_steps", "env steps"),
        ("max_episode", "episodes", "episodes"),
        ("max_updates", "updates", "updates"),
    ):
        limit = getattr(general, key)
        done = int(counters.get(counter, 0))
        if 0 < limit <= done:
            raise ConfigError(
                f"general_cfg.{key}={limit} is the total for the resumed run, and {path} "
                f"already has {done} {what}; raise it to train further"
            )


def previous_history(source: Path | None, counters: dict[str, int] | None) -> dict[str, Any]:
    """Episode and eval rows of the run being resumed, up to its checkpoint."""
    if source is None or counters is None:
        return {}
    history: dict[str, Any] = {}
    for key, name in (("episodes", "episodes.csv"), ("evals", "evals.csv")):
        path = source / "results" / name
        if path.is_file():
            with path.open(newline="") as f:
                rows = list(csv.DictReader(f))
            history[key] = [{k: _number(v) for k, v in row.items()} for row in rows]
    episodes = history.get("episodes", [])
    if episodes and "policy" in episodes[0]:  # a multi-agent run's rows are its agents'
        steps = int(counters.get("env_steps", 0))
        history["episodes"] = [e for e in episodes if int(e.get("env_steps", 0)) <= steps]
        history["evals"] = [e for e in history.get("evals", []) if int(e["env_steps"]) <= steps]
        return history
    history["episodes"] = episodes[: int(counters.get("episodes", 0))]
    updates = int(counters.get("updates", 0))
    history["evals"] = [e for e in history.get("evals", []) if int(e.get("updates", 0)) <= updates]
    return history


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except (TypeError, ValueError):
            pass
    return text


def carry_over(start: Start, task: TaskDir) -> list[str]:
    """Copy what a resumed run continues into its new task directory; returns what was copied."""
    if start.resume is None or start.source is None:
        return []
    copied = []
    folders = {"": start.resume}  # a single-agent run's models/, or each policy's folder
    if start.policy_checkpoints:
        folders = {f"{p}/": found.state for p, found in start.policy_checkpoints.items()}
    for folder, resumed in folders.items():
        best = start.source / "models" / folder / "best.pt"
        if not best.is_file():
            continue
        try:
            from joyrl_ray.run.checkpoint import load_checkpoint

            best_updates = checkpoint_updates(load_checkpoint(best))
        except CheckpointError:
            best_updates = None
        if best_updates is not None and best_updates <= checkpoint_updates(resumed):
            (task.models / folder).mkdir(parents=True, exist_ok=True)
            shutil.copy2(best, task.models / folder / "best.pt")
            copied.append(f"models/{folder}best.pt")
    for events in sorted((start.source / "logs").glob("events.out.tfevents.*")):
        shutil.copy2(events, task.logs / events.name)
        copied.append(f"logs/{events.name}")
    return copied
