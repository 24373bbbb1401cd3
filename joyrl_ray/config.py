"""Python defaults, then the yaml file, then ``section.key=value`` overrides.

Each section is merged with OmegaConf against a typed dataclass schema: ``general_cfg``
(:class:`GeneralConfig`), ``algo_cfg`` (the config class of the algorithm that the merged
``general_cfg.algo_name`` names) and ``env_cfg`` (:class:`envs.EnvConfig`). Anything
wrong raises :class:`ConfigError` with one line naming the key or value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from algos import canonical_name, get_algorithm
from algos.layers import LayerConfig, validate_layers
from envs import ENV_FAMILIES, EnvConfig, EnvSpecError, check_env_id
from envs.config import RENDER_MODES, VECTOR_MODES
from envs.registry import check_wrappers
from joyrl_ray.general_config import (
    BACKENDS,
    DEVICES,
    MODES,
    PLACEMENTS,
    TRACKERS,
    TRACKING_EXTRA,
    GeneralConfig,
)

SECTIONS = ("general_cfg", "algo_cfg", "env_cfg")


class ConfigError(ValueError):
    """Bad user input; ``str(error)`` is the one line shown to the user."""


def load_yaml_file(path: str | Path, option: str = "--yaml") -> Any:
    """The parsed yaml of the file given as ``option``; one line when it is missing or
    malformed (where, and what)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{option} {path}: no such file")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "'\\t'" in problem:
            problem += "; indent yaml with spaces, not tabs"
        raise ConfigError(f"{option} {path}: malformed yaml{where}: {problem}") from None


def read_yaml(path: str | Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """The sections of a run yaml (and the ``extra`` sections it may hold: a sweep's)."""
    data = load_yaml_file(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--yaml {path}: expected a mapping with sections {', '.join(SECTIONS)}")
    for section, body in data.items():
        if section not in SECTIONS + extra:
            raise ConfigError(_unknown(str(section), "", SECTIONS + extra, what="section"))
        if body is not None and not isinstance(body, dict):
            raise ConfigError(f"--yaml {path}: section {section} must be a mapping")
    return {k: v or {} for k, v in data.items()}


def parse_overrides(overrides: list[str]) -> dict[str, dict[str, Any]]:
    """``["general_cfg.seed=1"]`` to ``{"general_cfg": {"seed": 1}}``; values are parsed as yaml."""
    parsed: dict[str, dict[str, Any]] = {}
    for item in overrides:
        key, sep, _ = item.partition("=")
        section = key.split(".", 1)[0]
        if not sep or "." not in key:
            raise ConfigError(
                f"override {item!r} is not section.key=value (sections: {', '.join(SECTIONS)})"
            )
        if section not in SECTIONS:
            raise ConfigError(_unknown(section, "", SECTIONS, what="section"))
        try:
            dotted = OmegaConf.to_container(OmegaConf.from_dotlist([item]))
        except (OmegaConfBaseException, yaml.YAMLError) as exc:  # e.g. "k={a: 1" (unclosed)
            raise ConfigError(f"override {item!r}: {exc}".splitlines()[0]) from None
        parsed.setdefault(section, {})
        _deep_update(parsed[section], dotted[section])
    return parsed


def merged_overrides(
    base: dict[str, dict[str, Any]], flat: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """``base`` overrides with ``flat`` dotted keys on top (values as they are, not yaml)."""
    merged = {k: dict(v) for k, v in base.items()}
    for key, value in flat.items():
        section, _, rest = key.partition(".")
        node = merged.setdefault(section, {})
        *parents, last = rest.split(".")
        for parent in parents:
            node = node.setdefault(parent, {})
        node[last] = value
    return merged


def _deep_update(into: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_update(into[key], value)
        else:
            into[key] = value


def _unknown(key: str, prefix: str, allowed: Any, what: str = "key") -> str:
    allowed = list(allowed)
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; did you mean {prefix}{close[0]}?" if close else ""
    return f"unknown {what} {prefix}{key}{hint} (allowed: {', '.join(allowed)})"


def _normalise_layers(section: dict[str, Any]) -> None:
    """Accept JoyRL's ``layer_size`` and a bare int for ``layer_dim``."""
    for key, value in section.items():
        if not (key.endswith("_layers") and isinstance(value, list)):
            continue
        for layer in value:
            if isinstance(layer, dict):
                if "layer_size" in layer and "layer_dim" not in layer:
                    layer["layer_dim"] = layer.pop("layer_size")
                if isinstance(layer.get("layer_dim"), int):
                    layer["layer_dim"] = [layer["layer_dim"]]


#: JoyRL's names for keys that are spelt otherwise here: section -> {JoyRL's key: key here}.
JOYRL_KEYS = {"env_cfg": {"env_id": "id"}}


def _normalise_joyrl(section: str, layer: dict[str, Any]) -> None:
    """Read a JoyRL yaml's spellings as this project's: ``env_cfg.env_id`` is ``env_cfg.id``
    and ``general_cfg.mp_backend: null`` (JoyRL's one process) is ``single``."""
    for joyrl_key, key in JOYRL_KEYS.get(section, {}).items():
        if joyrl_key not in layer:
            continue
        value = layer.pop(joyrl_key)
        if key in layer and layer[key] != value:
            raise ConfigError(
                f"{section}.{joyrl_key}={value!r} and {section}.{key}={layer[key]!r} disagree; "
                f"{joyrl_key} is JoyRL's name for {key}: set one of them"
            )
        layer[key] = value
    if section == "general_cfg" and "mp_backend" in layer and layer["mp_backend"] is None:
        layer["mp_backend"] = "single"


#: Switches that take only true or false (OmegaConf would read any number as a bool).
STRICT_BOOLS = ("normalize_obs", "normalize_reward")


def _check_keys(schema: type, data: dict[str, Any], prefix: str) -> None:
    fields = {f.name: f for f in dataclasses.fields(schema)}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(_unknown(str(key), prefix, fields))
        if key in STRICT_BOOLS and not isinstance(value, bool):  # OmegaConf reads 2 as true
            raise ConfigError(f"{prefix}{key}={value!r} is not allowed; allowed: true, false")
        if key.endswith("_layers") and isinstance(value, list):
            for i, layer in enumerate(value):
                if not isinstance(layer, dict):
                    raise ConfigError(f"{prefix}{key}[{i}] must be a mapping of layer settings")
                _check_keys(LayerConfig, layer, f"{prefix}{key}[{i}].")


def _merge(schema: type, layers: list[dict[str, Any]], section: str) -> DictConfig:
    merged = OmegaConf.structured(schema)
    for layer in layers:
        _normalise_joyrl(section, layer)
        _normalise_layers(layer)
        if section == "general_cfg" and isinstance(layer.get("tracking"), str):
            layer["tracking"] = [layer["tracking"]]  # tracking=mlflow: a list of one
        _check_keys(schema, layer, f"{section}.")
        try:
            merged = OmegaConf.merge(merged, layer)
        except OmegaConfBaseException as exc:
            key = getattr(exc, "full_key", None) or "?"
            msg = getattr(exc, "msg", str(exc)).splitlines()[0]
            raise ConfigError(f"{section}.{key}: {msg}") from None
    return merged


def _choice(value: Any, allowed: tuple[Any, ...], key: str) -> None:
    if value not in allowed:
        shown = ", ".join("null" if a is None else str(a) for a in allowed)
        raise ConfigError(f"{key}={value!r} is not allowed; allowed: {shown}")


def _check_general(general: DictConfig) -> None:
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
        if general[key] < 1:
            raise ConfigError(f"general_cfg.{key}={general[key]} must be >= 1")
    if general.reward_threshold is not None:
        general.online_eval = True  # the threshold is judged on online evaluations
    if general.n_learners > 1 and general.mp_backend != "ray":
        raise ConfigError(
            f"general_cfg.n_learners={general.n_learners} needs general_cfg.mp_backend=ray "
            "(data-parallel learners are separate processes); allowed with single: 1"
        )
    for key, low in (
        ("max_worker_restarts", -1),
        ("max_learner_restarts", 0),
    ):
        if general[key] < low:
            raise ConfigError(f"general_cfg.{key}={general[key]} must be >= {low}")
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


def _check_algo(algo: DictConfig, general: DictConfig) -> None:
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
    """1 <= min_workers <= n_workers <= max_workers, and growth only on Ray."""
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


def _check_env(env: DictConfig) -> None:
    _choice(env.render_mode, RENDER_MODES, "env_cfg.render_mode")
    _choice(env.vector_mode, VECTOR_MODES, "env_cfg.vector_mode")
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


def build_config(yaml_data: dict[str, Any], overrides: dict[str, dict[str, Any]]) -> DictConfig:
    """Merge defaults < yaml < overrides for each section, then validate the result."""
    sources = [yaml_data, overrides]
    general = _merge(GeneralConfig, [s.get("general_cfg", {}) for s in sources], "general_cfg")
    _check_general(general)
    spec = get_algorithm(general.algo_name)
    algo = _merge(spec.config_cls, [s.get("algo_cfg", {}) for s in sources], "algo_cfg")
    _check_algo(algo, general)
    env = _merge(EnvConfig, [s.get("env_cfg", {}) for s in sources], "env_cfg")
    _check_env(env)
    return OmegaConf.create({"general_cfg": general, "algo_cfg": algo, "env_cfg": env})


@dataclass
class RunConfig:
    """The merged config as plain dataclasses: picklable and cheap to read in hot loops."""

    general: GeneralConfig
    algo: Any
    env: EnvConfig

    @classmethod
    def from_omegaconf(cls, cfg: DictConfig) -> RunConfig:
        return cls(
            general=OmegaConf.to_object(cfg.general_cfg),
            algo=OmegaConf.to_object(cfg.algo_cfg),
            env=OmegaConf.to_object(cfg.env_cfg),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "general_cfg": dataclasses.asdict(self.general),
            "algo_cfg": dataclasses.asdict(self.algo),
            "env_cfg": dataclasses.asdict(self.env),
        }


def load_config(yaml_path: str | None, overrides: list[str]) -> DictConfig:
    """The merged run config from a yaml path (or none) and CLI ``key=value`` overrides."""
    yaml_data = read_yaml(yaml_path) if yaml_path else {}
    return build_config(yaml_data, parse_overrides(overrides))


__all__ = ["ConfigError", "RunConfig", "build_config", "load_config"]
