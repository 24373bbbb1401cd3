"""Python defaults, then the yaml file, then ``section.key=value`` overrides.

Each section is merged with OmegaConf against a typed dataclass schema: ``general_cfg``
(:class:`GeneralConfig`), ``algo_cfg`` (the config class of the algorithm that the merged
``general_cfg.algo_name`` names), ``env_cfg`` (:class:`envs.EnvConfig`) and, for a
multi-agent env, ``multi_agent`` (:class:`~joyrl_ray.config.multi_agent.MultiAgentConfig`;
each of its policies' ``algo_cfg`` merged against its own algorithm's config class) and its
``league`` (:class:`~joyrl_ray.config.league.LeagueConfig`). Anything
wrong raises :class:`ConfigError` with one line naming the key or value and what is allowed
(the checks: :mod:`joyrl_ray.config.checks`).
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from algos import canonical_name, get_algorithm
from envs import EnvConfig
from joyrl_ray.config.checks import (
    ConfigError,
    check_algo,
    check_env,
    check_general,
    check_keys,
    settle_reward_threshold,
    unknown_message,
)
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.config.joyrl_dialect import RENAMES, no_effect_line, translate
from joyrl_ray.config.league import LeagueConfig
from joyrl_ray.config.multi_agent import MultiAgentConfig, PolicyConfig

SECTIONS = ("general_cfg", "algo_cfg", "env_cfg", "multi_agent", "league")
#: The keys of the config that ``build_config`` makes besides the sections: each policy's
#: merged algo_cfg, by policy (a multi-agent run's).
POLICY_ALGOS = "policy_algo_cfg"
#: JoyRL's names for keys that are spelt otherwise here: section -> {JoyRL's key: key here}.
JOYRL_KEYS = RENAMES


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
            raise ConfigError(unknown_message(str(section), "", SECTIONS + extra, what="section"))
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
            raise ConfigError(unknown_message(section, "", SECTIONS, what="section"))
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


def _merge(schema: type, layers: list[dict[str, Any]], section: str) -> DictConfig:
    merged = OmegaConf.structured(schema)
    for layer in layers:
        _normalise_layers(layer)
        if section == "general_cfg" and isinstance(layer.get("tracking"), str):
            layer["tracking"] = [layer["tracking"]]  # tracking=mlflow: a list of one
        check_keys(schema, layer, f"{section}.")
        try:
            merged = OmegaConf.merge(merged, layer)
        except OmegaConfBaseException as exc:
            key = getattr(exc, "full_key", None) or "?"
            msg = getattr(exc, "msg", str(exc)).splitlines()[0]
            raise ConfigError(f"{section}.{key}: {msg}") from None
    return merged


def build_config(
    yaml_data: dict[str, Any],
    overrides: dict[str, dict[str, Any]],
    notes: list[str] | None = None,
) -> DictConfig:
    """Merge defaults < yaml < overrides for each section, then validate the result.
    JoyRL's keys are read as this project's first; ``notes`` gets the warning line naming
    those with no effect here, if any."""
    sources = copy.deepcopy([yaml_data, overrides])
    ignored = translate(sources)
    if ignored and notes is not None:
        notes.append(no_effect_line(ignored))
    general = _merge(GeneralConfig, [s.get("general_cfg", {}) for s in sources], "general_cfg")
    check_general(general)
    spec = get_algorithm(general.algo_name)
    algo_layers = [s.get("algo_cfg", {}) for s in sources]
    algo = _merge(spec.config_cls, algo_layers, "algo_cfg")
    check_algo(algo, general)
    env = _merge(EnvConfig, [s.get("env_cfg", {}) for s in sources], "env_cfg")
    check_env(env)
    settle_reward_threshold(general, env)
    sections = {"general_cfg": general, "algo_cfg": algo, "env_cfg": env}
    agent_layers: list[dict[str, Any]] = [s["multi_agent"] for s in sources if s.get("multi_agent")]
    if agent_layers:
        agents = _merge_multi_agent(agent_layers)
        sections["multi_agent"] = agents
        sections[POLICY_ALGOS] = _policy_algos(agents, general, algo_layers)
    league_layers: list[dict[str, Any]] = [s["league"] for s in sources if s.get("league")]
    if league_layers:
        sections["league"] = _merge(LeagueConfig, league_layers, "league")
    return OmegaConf.create(sections)


def _merge_multi_agent(layers: list[dict[str, Any]]) -> DictConfig:
    """The ``multi_agent`` section, each policy's keys checked by name."""
    for layer in layers:
        for name, policy in (layer.get("policies") or {}).items():
            if not isinstance(policy, dict):
                raise ConfigError(
                    f"multi_agent.policies.{name} must be a mapping (algo_name, algo_cfg, "
                    "fixed, load_path, load_policy); {} learns with general_cfg.algo_name"
                )
            check_keys(PolicyConfig, policy, f"multi_agent.policies.{name}.")
    agents = _merge(MultiAgentConfig, _replacing_mapping(layers), "multi_agent")
    if not agents.policies:
        raise ConfigError(
            "multi_agent.policies is empty; name at least one, e.g. "
            "multi_agent.policies={shared: {}} multi_agent.policy_mapping={'*': shared}"
        )
    return agents


def _replacing_mapping(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The layers as merged: the last ``policy_mapping`` given replaces the ones below it
    (an ordered first-match list does not merge), and a policy only a layer below it names,
    which that mapping leaves without an agent, goes with them (a yaml's ``shared`` when
    the command line maps each agent to a policy of its own)."""
    given = [i for i, layer in enumerate(layers) if layer.get("policy_mapping")]
    if not given:
        return layers
    top = given[-1]
    mapping = layers[top]["policy_mapping"]
    used = {str(policy) for policy in mapping.values()}
    named_above = {str(n) for layer in layers[top:] for n in (layer.get("policies") or {})}
    merged = []
    for i, layer in enumerate(layers):
        layer = dict(layer)
        if i < top:
            layer.pop("policy_mapping", None)
            policies = layer.get("policies") or {}
            layer["policies"] = {
                n: p for n, p in policies.items() if str(n) in used or str(n) in named_above
            }
        merged.append(layer)
    return merged


def _policy_algos(
    agents: DictConfig, general: DictConfig, algo_layers: list[dict[str, Any]]
) -> dict[str, DictConfig]:
    """Each learning (or checkpoint-playing) policy's algo_cfg: its algorithm's defaults <
    the run's ``algo_cfg`` (when it runs ``general_cfg.algo_name``) < its own ``algo_cfg``."""
    configs: dict[str, DictConfig] = {}
    for name, policy in agents.policies.items():
        if policy.fixed not in (None, "checkpoint"):
            continue
        algo_name = canonical_name(policy.algo_name or general.algo_name)
        try:
            spec = get_algorithm(algo_name)
        except KeyError as exc:
            why = str(exc.args[0]).replace("general_cfg.algo_name=", "", 1)
            raise ConfigError(f"multi_agent.policies.{name}.algo_name={why}") from None
        policy.algo_name = algo_name
        shared = algo_layers if algo_name == general.algo_name else []
        own = OmegaConf.to_container(policy.algo_cfg)
        prefix = f"multi_agent.policies.{name}.algo_cfg"
        merged = _merge(spec.config_cls, [*(dict(x) for x in shared), own], prefix)
        check_algo(merged, general)
        configs[str(name)] = merged
    return configs


@dataclass
class RunConfig:
    """The merged config as plain dataclasses: picklable and cheap to read in hot loops."""

    general: GeneralConfig
    algo: Any
    env: EnvConfig
    multi_agent: MultiAgentConfig | None = None  # a multi-agent env's section
    policy_algos: dict[str, Any] = dataclasses.field(default_factory=dict)  # its policies'
    league: LeagueConfig | None = None  # self-play with snapshots (a multi-agent game's)

    @classmethod
    def from_omegaconf(cls, cfg: DictConfig) -> RunConfig:
        agents = cfg.get("multi_agent")
        algos = cfg.get(POLICY_ALGOS) or {}
        league = cfg.get("league")
        return cls(
            general=OmegaConf.to_object(cfg.general_cfg),
            algo=OmegaConf.to_object(cfg.algo_cfg),
            env=OmegaConf.to_object(cfg.env_cfg),
            multi_agent=OmegaConf.to_object(agents) if agents is not None else None,
            policy_algos={str(p): OmegaConf.to_object(a) for p, a in algos.items()},
            league=OmegaConf.to_object(league) if league is not None else None,
        )

    def to_dict(self) -> dict[str, Any]:
        sections = {
            "general_cfg": dataclasses.asdict(self.general),
            "algo_cfg": dataclasses.asdict(self.algo),
            "env_cfg": dataclasses.asdict(self.env),
        }
        if self.multi_agent is not None:
            sections["multi_agent"] = dataclasses.asdict(self.multi_agent)
        if self.league is not None:
            sections["league"] = dataclasses.asdict(self.league)
        return sections


def load_config(yaml_path: str | None, overrides: list[str]) -> DictConfig:
    """The merged run config from a yaml path (or none) and CLI ``key=value`` overrides."""
    yaml_data = read_yaml(yaml_path) if yaml_path else {}
    notes: list[str] = []
    cfg = build_config(yaml_data, parse_overrides(overrides), notes)
    for line in notes:
        print(f"warning: {line}", file=sys.stderr, flush=True)
    return cfg
