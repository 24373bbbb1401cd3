"""What a sweep asks for (``--sweep sweep.yaml``, or a ``sweep_cfg`` section of the run's
yaml), read and checked before Ray starts: every bad input is one line.

    space:                       # dotted run-config keys, one dimension each
      algo_cfg.lr: {loguniform: [0.0001, 0.01]}
      algo_cfg.batch_size: {choice: [32, 64, 128]}
      algo_cfg.target_update: {grid: [100, 500]}
    seeds: [1, 2]                # a grid dimension over general_cfg.seed
    metric: eval_return_mean     # max of the online evaluations; or env_steps_to_threshold (min)
    searcher: random             # or optuna (TPE; pip install -r requirements-tune.txt)
    scheduler: asha              # fifo, asha (on env steps) or pbt
    asha: {grace_env_steps: 4000, reduction_factor: 2}
    pbt:                         # population-based training: restores and mutations
      perturbation_env_steps: 8192
      mutations: {algo_cfg.lr: {loguniform: [0.0001, 0.003]}}
      quantile_fraction: 0.25
      resample_probability: 0.25
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
    merged_overrides,
    parse_overrides,
    read_yaml,
)

KINDS = ("choice", "grid", "uniform", "loguniform", "randint")
METRICS = {"eval_return_mean": "max", "env_steps_to_threshold": "min"}
SEARCHERS = ("random", "optuna")
SCHEDULERS = ("fifo", "asha", "pbt")
KEYS = (
    "space",
    "seeds",
    "metric",
    "searcher",
    "scheduler",
    "asha",
    "pbt",
    "num_samples",
    "max_concurrent_trials",
    "time_budget_s",
)
ASHA_KEYS = ("grace_env_steps", "reduction_factor")
PBT_KEYS = ("perturbation_env_steps", "mutations", "quantile_fraction", "resample_probability")
MUTATION_KINDS = ("choice", "uniform", "loguniform", "randint")  # no grid: PBT draws


@dataclass(frozen=True)
class Dimension:
    """One key of the space: ``kind`` with its ``values`` (choice, grid) or bounds."""

    key: str
    kind: str
    values: tuple[Any, ...]

    def ends(self) -> list[Any]:
        """Every value of a choice, or the two ends of a range."""
        if self.kind in ("choice", "grid"):
            return list(self.values)
        cast = int if self.kind == "randint" else float
        return [cast(v) for v in self.values]

    def example(self) -> Any:
        """A value of the dimension, to check the key against the run config."""
        if self.kind in ("choice", "grid"):
            return self.values[0]
        if self.kind == "randint":
            return int(self.values[0])
        return float(self.values[0])


@dataclass(frozen=True)
class PBTSpec:
    """Population-based training: every ``perturbation_env_steps`` a trial in the bottom
    ``quantile_fraction`` restores a top trial's checkpoint and goes on with its config,
    each of ``mutations`` perturbed (x0.8 / x1.2, a neighbouring choice) or, with
    ``resample_probability``, drawn again."""

    perturbation_env_steps: int
    mutations: tuple[Dimension, ...]
    quantile_fraction: float = 0.25
    resample_probability: float = 0.25


@dataclass(frozen=True)
class SweepSpec:
    space: tuple[Dimension, ...]
    seeds: tuple[int, ...]
    metric: str = "eval_return_mean"
    searcher: str = "random"
    scheduler: str = "fifo"
    grace_env_steps: int | None = None  # ASHA: env steps every trial gets (None: 1/8 budget)
    reduction_factor: int = 2
    pbt: PBTSpec | None = None
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


def _positive_int(data: dict[str, Any], key: str, default: int, where: str = "") -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"sweep {where}{key}={value!r}: expected an integer >= 1")
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
    pbt_only = data.get("scheduler") == "pbt" and "space" not in data
    if not isinstance(raw_space, dict) or not (raw_space or pbt_only):
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
    asha = _subsection(data.get("asha") or {}, "asha", ASHA_KEYS)
    grace = asha.get("grace_env_steps")
    if grace is not None and (not isinstance(grace, int) or grace < 1):
        raise ConfigError(f"sweep asha.grace_env_steps={grace!r}: expected an integer >= 1")
    if searcher == "optuna":
        _check_optuna(space, seeds, scheduler)
    pbt = _pbt(data.get("pbt"), run_yaml, overrides) if scheduler == "pbt" else None
    if scheduler != "pbt" and "pbt" in data:
        raise ConfigError(f"sweep pbt: applies to scheduler pbt (scheduler is {scheduler})")
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
        pbt=pbt,
        num_samples=_positive_int(data, "num_samples", 1),
        max_concurrent_trials=_positive_int(data, "max_concurrent_trials", 2),
        time_budget_s=None if budget is None else float(budget),
    )


def _check_optuna(space: tuple[Dimension, ...], seeds: list[int], scheduler: str) -> None:
    """Optuna draws each trial's config from what earlier trials scored: no grid."""
    grids = [dim.key for dim in space if dim.kind == "grid"]
    if grids:
        raise ConfigError(
            f"sweep space {grids[0]}: grid with searcher optuna (Optuna draws values; use "
            "choice, or searcher random for a grid)"
        )
    if len(seeds) > 1:
        raise ConfigError(
            f"sweep seeds={seeds}: searcher optuna takes one seed (seeds are a grid; run "
            "the best config at other seeds after the sweep)"
        )
    if scheduler == "pbt":
        raise ConfigError(
            "sweep searcher optuna with scheduler pbt: PBT draws and mutates configs "
            "itself (allowed with pbt: random)"
        )


def _subsection(data: Any, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """A section of the sweep (``asha``, ``pbt``): a mapping of known keys."""
    if not isinstance(data, dict):
        raise ConfigError(f"sweep {name}={data!r}: expected a mapping ({', '.join(keys)})")
    for key in data:
        if key not in keys:
            raise ConfigError(f"unknown sweep key {name}.{key} (allowed: {', '.join(keys)})")
    return data


def _pbt(data: Any, run_yaml: dict[str, Any], overrides: list[str]) -> PBTSpec:
    """The checked ``pbt`` section: each mutation a key a restored run can take."""
    from joyrl_ray.sweep.mutations import check_restorable  # torch: for a pbt sweep only

    data = _subsection(data, "pbt", PBT_KEYS)
    raw = data.get("mutations")
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(
            "sweep pbt.mutations: expected a mapping of algo_cfg.key to a dimension "
            f"({', '.join(MUTATION_KINDS)})"
        )
    mutations = tuple(_dimension(str(k), v) for k, v in raw.items())
    for dim in mutations:
        if dim.kind not in MUTATION_KINDS:
            raise ConfigError(
                f"sweep pbt.mutations {dim.key}: {dim.kind} does not mutate "
                f"(allowed: {', '.join(MUTATION_KINDS)})"
            )
    _check_against_run(mutations, run_yaml, overrides)
    for dim in mutations:
        check_restorable(dim.key, dim.ends(), run_yaml, overrides)
    quantile = data.get("quantile_fraction", 0.25)
    if not isinstance(quantile, (int, float)) or not 0 < quantile <= 0.5:
        raise ConfigError(f"sweep pbt.quantile_fraction={quantile!r}: expected 0 < q <= 0.5")
    resample = data.get("resample_probability", 0.25)
    if not isinstance(resample, (int, float)) or not 0 <= resample <= 1:
        raise ConfigError(f"sweep pbt.resample_probability={resample!r}: expected 0 <= p <= 1")
    if "perturbation_env_steps" not in data:
        raise ConfigError(
            "sweep pbt.perturbation_env_steps: required (env steps between a trial's "
            "perturbations; a few online evaluations apart)"
        )
    return PBTSpec(
        perturbation_env_steps=_positive_int(data, "perturbation_env_steps", 0, where="pbt."),
        mutations=mutations,
        quantile_fraction=float(quantile),
        resample_probability=float(resample),
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
