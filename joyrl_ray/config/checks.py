"""The checks of a run config: each section's keys as it is merged, each merged section's values.

Anything wrong raises :class:`ConfigError` with one line naming the key or value and what is
allowed. Apart from the loading (:mod:`joyrl_ray.config.loading`), which reads and merges
the sections and calls these checks: the rules are most of the code, and each reads on its
own. :class:`ConfigError` is defined here, below the loading, as both raise it.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
from typing import Any

from omegaconf import DictConfig, OmegaConf

from algos import canonical_name, get_algorithm
from algos.layers import LayerConfig, validate_layers
from envs import ENV_FAMILIES, EnvSpecError, check_env_id
from envs.config import RENDER_MODES, VECTOR_MODES
from envs.registry import check_wrappers, registered_reward_threshold
from joyrl_ray.config.general import (
    BACKENDS,
    DEVICES,
    ENV_THRESHOLD,
    MODES,
    PLACEMENTS,
    TRACKERS,
    TRACKING_EXTRA,
)


class ConfigError(ValueError):
    """Bad user input; ``str(error)`` is the one line shown to the user."""


def unknown_message(key: str, prefix: str, allowed: Any, what: str = "key") -> str:
    """One line for an unknown ``key`` (or section): the closest allowed one, and all of them."""
    allowed = list(allowed)
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; did you mean {prefix}{close[0]}?" if close else ""
    return f"unknown {what} {prefix}{key}{hint} (allowed: {', '.join(allowed)})"


#: Switches that take only true or false (OmegaConf would read any number as a bool).
STRICT_BOOLS = ("normalize_obs", "normalize_reward")


def check_keys(schema: type, data: dict[str, Any], prefix: str) -> None:
    """Every key of ``data`` (one yaml or override layer of a section) is a field of
    ``schema``; a ``*_layers`` list holds mappings of layer settings."""
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(unknown_message(str(key), prefix, fields))
        if key in STRICT_BOOLS and not isinstance(value, bool):  # OmegaConf reads 2 as true
            raise ConfigError(f"{prefix}{key}={value!r} is not allowed; allowed: true, false")
        if key.endswith("_layers") and isinstance(value, list):
            for i, layer in enumerate(value):
                if not isinstance(layer, dict):
                    raise ConfigError(f"{prefix}{key}[{i}] must be a mapping of layer settings")
                check_keys(LayerConfig, layer, f"{prefix}{key}[{i}].")


def _choice(value: Any, allowed: tuple[Any, ...], key: str) -> None:
    if value not in allowed:
        shown = ", ".join("null" if a is None else str(a) for a in allowed)
        raise ConfigError(f"{key}={value!r} is not allowed; allowed: {shown}")


def check_general(general: DictConfig) -> None:
    """The merged ``general_cfg``'s values (an algorithm's alias becomes its target's name,
    and a reward threshold turns online evaluation on)."""
    general.algo_name = canonical_name(general.algo_name)  # an alias runs as its target
    if general.env_name not in ENV_FAMILIES:
        raise ConfigError(
            f"general_cfg.env_name={general.env_name!r} is not allowed; allowed: "
            f"{', '.join(ENV_FAMILIES)} (the env family, as in JoyRL; env_cfg.id names the "
            "env, a custom one too)"
        )
    _choice(general.mode, MODES, "general_cfg.mode")
    _choice(general.mp_backend, BACKENDS, "general_cfg.mp_backend")
    _choice(general.device, DEVICES, "general_cfg.device")
    _choice(general.worker_placement, PLACEMENTS, "general_cfg.worker_placement")
    _choice(general.learner_placement, PLACEMENTS, "general_cfg.learner_placement")
    try:
        get_algorithm(general.algo_name)
    except KeyError as exc:
        raise ConfigError(str(exc.args[0])) from None
    for key in (
        "n_workers",
        "n_envs_per_worker",
        "n_learners",
        "online_eval_episode",
        "model_save_fre",
        "weights_publish_every",
        "max_pushes_in_flight",
        "worker_chunk_steps",
        "n_replay_shards",
        "keep_checkpoints",
    ):
        if general[key] < 1 and not (key == "n_workers" and general.dataset is not None):
            raise ConfigError(f"general_cfg.{key}={general[key]} must be >= 1")
    threshold = general.reward_threshold
    if isinstance(threshold, bool) or not (
        threshold is None or threshold == ENV_THRESHOLD or isinstance(threshold, int | float)
    ):
        raise ConfigError(
            f"general_cfg.reward_threshold={threshold!r} is not allowed; allowed: a number, "
            f"{ENV_THRESHOLD} (the env's registered threshold) or null (never: the whole budget)"
        )
    if general.n_learners > 1 and general.mp_backend != "ray":
        raise ConfigError(
            f"general_cfg.n_learners={general.n_learners} needs general_cfg.mp_backend=ray "
            "(data-parallel learners are separate processes); allowed with single: 1"
        )
    _check_lockstep(general)
    for key, low in (
        ("max_worker_restarts", -1),
        ("max_learner_restarts", 0),
    ):
        if general[key] < low:
            raise ConfigError(f"general_cfg.{key}={general[key]} must be >= {low}")
    if general.max_updates < 1 and general.max_updates != -1:
        raise ConfigError(
            f"general_cfg.max_updates={general.max_updates} is out of range; allowed: >= 1, "
            "or -1 (no limit)"
        )
    errors = general.max_env_errors_per_1000
    if errors < 0 and errors != -1:
        raise ConfigError(
            f"general_cfg.max_env_errors_per_1000={errors} is out of range; allowed: >= 0, "
            "or -1 (no limit)"
        )
    if general.env_error_window_steps < 1:
        window = general.env_error_window_steps
        raise ConfigError(f"general_cfg.env_error_window_steps={window} must be >= 1")
    _check_fleet_bounds(general)
    _check_dataset(general)
    rate = general.random_action_rate
    if not 0 <= rate <= 1:
        raise ConfigError(
            f"general_cfg.random_action_rate={rate} is out of range; allowed: 0 <= rate <= 1"
        )
    if rate > 0 and general.mode != "test":
        raise ConfigError(
            f"general_cfg.random_action_rate={rate} is for test mode (training explores by "
            f"the algorithm's own schedule); allowed in mode={general.mode}: 0"
        )
    if not general.learner_lost_after_s > 0:
        raise ConfigError(
            f"general_cfg.learner_lost_after_s={general.learner_lost_after_s} must be > 0 seconds"
        )
    first = general.first_checkpoint_s
    if first is not None and not first > 0:
        raise ConfigError(
            f"general_cfg.first_checkpoint_s={first} must be > 0 seconds, or null (off)"
        )
    if general.stall_timeout_s <= 0:
        raise ConfigError(f"general_cfg.stall_timeout_s={general.stall_timeout_s} must be > 0")
    if general.eval_timeout_s <= 0 and general.eval_timeout_s != -1:
        raise ConfigError(
            f"general_cfg.eval_timeout_s={general.eval_timeout_s} is not allowed; allowed: "
            "seconds > 0, or -1 (an online evaluation may run forever)"
        )
    for role in ("worker", "learner"):
        silent = getattr(general, f"{role}_silent_after_s")
        if silent <= 0 and silent != -1:
            raise ConfigError(
                f"general_cfg.{role}_silent_after_s={silent} is not allowed; allowed: seconds "
                f"> 0, or -1 (never take a silent {role} as lost)"
            )
    kills = list(general.fault_injection.kill_at_env_steps)
    if kills and general.mp_backend != "ray":
        # A worker kills its own process: with single, that process is the driver's.
        raise ConfigError(
            f"general_cfg.fault_injection.kill_at_env_steps={kills} needs "
            f"general_cfg.mp_backend=ray (a worker SIGKILLs its own process, which with "
            f"mp_backend={general.mp_backend} is the whole run); allowed with "
            f"{general.mp_backend}: []"
        )
    for key in ("env_error_rate", "eval_env_error_rate"):
        rate = general.fault_injection[key]
        if not 0 <= rate < 1:
            raise ConfigError(
                f"general_cfg.fault_injection.{key}={rate} is out of range; allowed: 0 <= {key} < 1"
            )
    for key in ("learner_num_cpus", "learner_num_gpus"):
        if general[key] < 0:
            raise ConfigError(f"general_cfg.{key}={general[key]} must be >= 0")
    if general.worker_num_cpus is not None and general.worker_num_cpus < 0:
        raise ConfigError(f"general_cfg.worker_num_cpus={general.worker_num_cpus} must be >= 0")
    if general.mode == "test" and not general.load_path:
        raise ConfigError("general_cfg.mode=test needs general_cfg.load_path (a task directory)")
    if general.load_checkpoint and not general.load_path:
        raise ConfigError("general_cfg.load_checkpoint=true needs general_cfg.load_path")
    step = str(general.load_model_step)
    if step not in ("best", "last") and not step.isdigit():
        raise ConfigError(
            f"general_cfg.load_model_step={step!r} is not allowed; "
            "allowed: best, last, or an update number"
        )
    _check_tracking(general)


def _check_tracking(general: DictConfig) -> None:
    """Known tracker names, each once, whose library is installed (found, not imported:
    the checks stay quick)."""
    names = [str(name) for name in general.tracking]
    shown = f"general_cfg.tracking=[{', '.join(names)}]"
    for name in names:
        if name not in TRACKERS:
            close = difflib.get_close_matches(name, TRACKERS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(
                f"{shown}: unknown tracker {name!r}{hint}; allowed: {', '.join(TRACKERS)}"
            )
        if names.count(name) > 1:
            raise ConfigError(f"{shown} names {name} twice; allowed: each tracker once")
    missing = [name for name in names if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"{shown}: {', '.join(missing)} is not installed; install the tracking extra: "
            f"pip install -r {TRACKING_EXTRA}"
        )


def check_algo(algo: DictConfig, general: DictConfig) -> None:
    """The merged ``algo_cfg``: its layers, its own ``check``, and its split across the
    learners."""
    for key in algo:
        if str(key).endswith("_layers"):
            try:
                validate_layers(algo[key], f"algo_cfg.{key}")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
    if "buffer_type" in algo:
        algo.buffer_type = str(algo.buffer_type).upper()
    try:
        OmegaConf.to_object(algo).check()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    _check_learner_split(algo, general)


def _check_fleet_bounds(general: DictConfig) -> None:
    """1 <= min_workers <= n_workers <= max_workers, and growth only on Ray (a run that
    learns from a dataset has no workers)."""
    if general.dataset is not None:
        return
    n = general.n_workers
    low = 1 if general.min_workers is None else general.min_workers
    high = n if general.max_workers is None else general.max_workers
    if not 1 <= low <= n:
        raise ConfigError(
            f"general_cfg.min_workers={low} is out of range; allowed: 1 <= min_workers <= "
            f"n_workers ({n}), or null (1)"
        )
    if high < n:
        raise ConfigError(
            f"general_cfg.max_workers={high} is below general_cfg.n_workers={n}; allowed: "
            f">= n_workers, or null (n_workers)"
        )
    if high > n and general.mp_backend != "ray":
        raise ConfigError(
            f"general_cfg.max_workers={high} needs general_cfg.mp_backend=ray (the fleet grows "
            f"onto Ray nodes); allowed with {general.mp_backend}: null or n_workers ({n})"
        )


def _check_dataset(general: DictConfig) -> None:
    """A run that learns from a dataset trains, has a stop in updates, and no workers (its
    replay is the dataset: ``n_workers`` becomes 0)."""
    if general.dataset is None:
        return
    shown = f"general_cfg.dataset={general.dataset}"
    if general.mode != "train":
        raise ConfigError(f"{shown} is for training; allowed in mode={general.mode}: null")
    if general.max_updates == -1:
        raise ConfigError(
            f"{shown} needs general_cfg.max_updates (a run with no workers takes no env steps, "
            "so it stops at a number of updates); allowed: max_updates >= 1"
        )
    for key, allowed in (("save_buffer", False), ("lockstep", False), ("collect_traj", False)):
        if general[key] != allowed:
            raise ConfigError(
                f"{shown} with general_cfg.{key}=true: a run with no workers "
                f"{'keeps no replay of its own' if key == 'save_buffer' else 'steps no env'}; "
                f"allowed: {key}=false"
            )
    general.n_workers = 0
    general.min_workers = general.max_workers = None


def _check_lockstep(general: DictConfig) -> None:
    """Lockstep takes turns among one learner and a fixed fleet."""
    if not general.lockstep:
        return
    if general.n_learners > 1:
        raise ConfigError(
            f"general_cfg.lockstep=true takes one learner, not general_cfg.n_learners="
            f"{general.n_learners}; allowed: n_learners=1, or lockstep=false"
        )
    if general.max_workers is not None and general.max_workers > general.n_workers:
        raise ConfigError(
            f"general_cfg.lockstep=true keeps the fleet as it starts, not growing to "
            f"general_cfg.max_workers={general.max_workers}; allowed: max_workers null or "
            f"n_workers ({general.n_workers}), or lockstep=false"
        )


def _check_learner_split(algo: DictConfig, general: DictConfig) -> None:
    """Each data-parallel learner takes an equal share of every batch or rollout."""
    n = general.n_learners
    if n == 1:
        return
    if "batch_size" in algo and algo.batch_size % n:
        raise ConfigError(
            f"algo_cfg.batch_size={algo.batch_size} does not split across general_cfg.n_learners"
            f"={n}; allowed: a batch_size divisible by n_learners"
        )
    grows = general.max_workers is not None and general.max_workers > general.n_workers
    if "rollout_len" in algo and grows:
        raise ConfigError(
            f"general_cfg.max_workers={general.max_workers} with general_cfg.n_learners={n}: "
            "a growing fleet changes the rollout, which the learners split evenly; allowed "
            "with several learners: max_workers null or n_workers"
        )
    envs = general.n_workers * general.n_envs_per_worker
    if "rollout_len" in algo and envs % n:
        raise ConfigError(
            f"a rollout of n_workers x n_envs_per_worker = {envs} envs does not split across "
            f"general_cfg.n_learners={n}; allowed: a number of envs divisible by n_learners"
        )


def check_env(env: DictConfig) -> None:
    """The merged ``env_cfg``'s values, its env id and its wrappers."""
    _choice(env.render_mode, RENDER_MODES, "env_cfg.render_mode")
    _choice(env.vector_mode, VECTOR_MODES, "env_cfg.vector_mode")
    for key in ("step_timeout_s", "reset_timeout_s"):
        if env[key] <= 0 and env[key] != -1:
            raise ConfigError(
                f"env_cfg.{key}={env[key]} is not allowed; allowed: seconds > 0, or -1 (no limit)"
            )
        if env[key] > 0 and env.vector_mode != "async":
            raise ConfigError(
                f"env_cfg.{key}={env[key]} needs env_cfg.vector_mode=async: a sync env's call "
                "cannot be cut short (general_cfg.worker_silent_after_s restarts a worker whose "
                "env stopped answering)"
            )
    for key in ("clip_obs", "clip_reward"):
        if env[key] <= 0:
            raise ConfigError(
                f"env_cfg.{key}={env[key]} must be > 0 (normalized values are clipped to "
                f"[-{key}, {key}])"
            )
    if env.norm_epsilon <= 0:
        raise ConfigError(
            f"env_cfg.norm_epsilon={env.norm_epsilon} must be > 0 (it keeps the std above 0)"
        )
    try:
        check_env_id(env.id)
        check_wrappers(list(env.wrappers))
    except EnvSpecError as exc:
        raise ConfigError(str(exc)) from None


def settle_reward_threshold(general: DictConfig, env: DictConfig) -> None:
    """``general_cfg.reward_threshold`` as a number or None (``env``: the env's registered
    one, when online evaluations run to reach it); a threshold turns online evaluation on."""
    if general.reward_threshold == ENV_THRESHOLD:
        registered = registered_reward_threshold(env.id) if general.online_eval else None
        general.reward_threshold = registered
    elif general.reward_threshold is not None:
        general.reward_threshold = float(general.reward_threshold)
    if general.reward_threshold is not None:
        general.online_eval = True  # the threshold is judged on online evaluations
