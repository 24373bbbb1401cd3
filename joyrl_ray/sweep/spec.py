"""What a sweep asks for (``--sweep sweep.yaml``, or a ``sweep_cfg`` section of the run's
yaml), read and checked before Ray starts: every bad input is one line.

    space:                       # dotted run-config keys, one dimension each
      algo_cfg.lr: {loguniform: [0.0001, 0.01]}
      algo_cfg.batch_size: {choice: [32, 64, 128]}
      algo_cfg.target_update: {grid: [100, 500]}
    seeds: [1, 2]                # a grid dimension over general_cfg.seed
    metric: eval_return_mean     # max of the online evaluations; or env_steps_to_threshold (min)
    searcher: random
    scheduler: asha              # fifo or asha (on env steps)
    asha: {grace_env_steps: 4000, reduction_factor: 2}
    num_samples: 4               # draws of the space (each grid point and seed that many times)
    max_concurrent_trials: 2
    time_budget_s: null          # the whole sweep's wall clock, or null
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from joyrl_ray.config import (
    SECTIONS,
    ConfigError,
    build_config,
    load_yaml_file,
    parse_overrides,
    read_yaml,
)

KINDS = ("choice", "grid", "uniform", "loguniform", "randint")
METRICS = {"eval_return_mean": "max", "env_steps_to_threshold": "min"}
SEARCHERS = ("random",)
SCHEDULERS = ("fifo", "asha")
KEYS = (
    "space",
    "seeds",
    "metric",
    "searcher",
    "scheduler",
    "asha",
    "num_samples",
    "max_concurrent_trials",
    "time_budget_s",
)
ASHA_KEYS = ("grace_env_steps", "reduction_factor")


@dataclass(frozen=True)
class Dimension:
    """One key of the space: ``kind`` with its ``values`` (choice, grid) or bounds."""

    key: str
    kind: str
    values: tuple[Any, ...]

    def example(self) -> Any:
        """A value of the dimension, to check the key against the run config."""
        if self.kind in ("choice", "grid"):
            return self.values[0]
        if self.kind == "randint":
            return int(self.values[0])
        return float(self.values[0])


@dataclass(frozen=True)
class SweepSpec:
    space: tuple[Dimension, ...]
    seeds: tuple[int, ...]
    metric: str = "eval_return_mean"
    searcher: str = "random"
    scheduler: str = "fifo"
    grace_env_steps: int | None = None  # ASHA: env steps every trial gets (None: 1/8 budget)
    reduction_factor: int = 2
    num_samples: int = 1
    max_concurrent_trials: int = 2
    time_budget_s: float | None = None

    @property
    def mode(self) -> str:
        return METRICS[self.metric]


def _dimension(key: str, body: Any) -> Dimension:
    where = f"sweep space {key}"
    if not isinstance(body, dict) or len(body) != 1:
        raise ConfigError(
            f"{where}: expected one of {{{': ..., '.join(KINDS)}: ...}}, got {body!r}"
        )
    ((kind, values),) = body.items()
    if kind not in KINDS:
        raise ConfigError(f"{where}: unknown kind {kind!r} (allowed: {', '.join(KINDS)})")
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{where}: {kind} takes a non-empty list, got {values!r}")
    if kind in ("uniform", "loguniform", "randint"):
        if len(values) != 2 or not all(isinstance(v, (int, float)) for v in values):
            raise ConfigError(f"{where}: {kind} takes [low, high], got {values!r}")
        low, high = values
        if not low < high:
            raise ConfigError(f"{where}: {kind} needs low < high, got {values!r}")
        if kind == "loguniform" and low <= 0:
            raise ConfigError(f"{where}: loguniform needs low > 0, got {values!r}")
    return Dimension(key, kind, tuple(values))


def _check_against_run(
    space: tuple[Dimension, ...], run_yaml: dict[str, Any], overrides: list[str]
) -> None:
    """Each key must be a key of the run config, and each value one it accepts."""
    base = parse_overrides(overrides)
    for dim in space:
        section = dim.key.split(".", 1)[0]
        if section not in SECTIONS or "." not in dim.key:
            raise ConfigError(
                f"sweep space {dim.key}: not a section.key of the run config "
                f"(sections: {', '.join(SECTIONS)})"
            )
        values = dim.values if dim.kind in ("choice", "grid") else (dim.example(),)
        for value in values:
            try:
                build_config(run_yaml, merged_overrides(base, {dim.key: value}))
            except ConfigError as exc:
                raise ConfigError(f"sweep space {dim.key}={value!r}: {exc}") from None


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


def _positive_int(data: dict[str, Any], key: str, default: int) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"sweep {key}={value!r}: expected an integer >= 1")
    return value


def parse_sweep(
    data: Any, run_yaml: dict[str, Any], overrides: list[str], default_seed: int
) -> SweepSpec:
    """The checked sweep of ``data`` (a sweep file's mapping) for the run ``run_yaml`` +
    ``overrides``."""
    if not isinstance(data, dict):
        raise ConfigError(f"sweep: expected a mapping with keys {', '.join(KEYS)}")
    for key in data:
        if key not in KEYS:
            raise ConfigError(f"unknown sweep key {key} (allowed: {', '.join(KEYS)})")
    raw_space = data.get("space") or {}
    if not isinstance(raw_space, dict) or not raw_space:
        raise ConfigError("sweep space: expected a mapping of section.key to a dimension")
    space = tuple(_dimension(str(k), v) for k, v in raw_space.items())
    _check_against_run(space, run_yaml, overrides)
    seeds = data.get("seeds", [default_seed])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ConfigError(f"sweep seeds={seeds!r}: expected a list of integers")
    if any(dim.key == "general_cfg.seed" for dim in space):
        raise ConfigError("sweep space general_cfg.seed: give seeds as `seeds: [1, 2, ...]`")
    metric = data.get("metric", "eval_return_mean")
    if metric not in METRICS:
        raise ConfigError(f"sweep metric={metric!r}: allowed: {', '.join(METRICS)}")
    searcher = data.get("searcher", "random")
    if searcher not in SEARCHERS:
        raise ConfigError(f"sweep searcher={searcher!r}: allowed: {', '.join(SEARCHERS)}")
    scheduler = data.get("scheduler", "fifo")
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"sweep scheduler={scheduler!r}: allowed: {', '.join(SCHEDULERS)}")
    asha = data.get("asha") or {}
    if not isinstance(asha, dict):
        raise ConfigError(f"sweep asha={asha!r}: expected a mapping ({', '.join(ASHA_KEYS)})")
    for key in asha:
        if key not in ASHA_KEYS:
            raise ConfigError(f"unknown sweep key asha.{key} (allowed: {', '.join(ASHA_KEYS)})")
    grace = asha.get("grace_env_steps")
    if grace is not None and (not isinstance(grace, int) or grace < 1):
        raise ConfigError(f"sweep asha.grace_env_steps={grace!r}: expected an integer >= 1")
    budget = data.get("time_budget_s")
    if budget is not None and (
        not isinstance(budget, (int, float)) or budget <= 0 or math.isnan(budget)
    ):
        raise ConfigError(f"sweep time_budget_s={budget!r}: expected seconds > 0, or null")
    return SweepSpec(
        space=space,
        seeds=tuple(seeds),
        metric=metric,
        searcher=searcher,
        scheduler=scheduler,
        grace_env_steps=grace,
        reduction_factor=_positive_int(asha, "reduction_factor", 2),
        num_samples=_positive_int(data, "num_samples", 1),
        max_concurrent_trials=_positive_int(data, "max_concurrent_trials", 2),
        time_budget_s=None if budget is None else float(budget),
    )


def read_sweep_file(path: str) -> Any:
    """The mapping of a sweep file (its top level, or its ``sweep_cfg`` section)."""
    data = load_yaml_file(path, "--sweep")
    if isinstance(data, dict) and set(data) == {"sweep_cfg"}:
        return data["sweep_cfg"]
    return data


def split_run_yaml(path: str | None) -> tuple[dict[str, Any], Any]:
    """A run yaml's sections, and its ``sweep_cfg`` section (None when it has none)."""
    if path is None:
        return {}, None
    data = read_yaml(path, extra=("sweep_cfg",))
    sweep = data.pop("sweep_cfg", None)
    return data, sweep
