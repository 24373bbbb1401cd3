"""Which keys population-based training may change in a running trial.

PBT's exploit restarts a trial from another trial's checkpoint with a perturbed config, so
a mutated key must be one a resumed run takes: an ``algo_cfg`` key (the env, the layout
and the seed belong to the run, not to the checkpoint's training), and one whose every
value builds an algorithm that the checkpoint of any other value loads into (a layer
width or a network kind changes the checkpoint's shapes; a learning rate does not). The
check builds the algorithm for the ends of each mutation's range, on CPU, before Ray
starts, and loads one into the other, as a resume would.
"""

from __future__ import annotations

from typing import Any

import torch

from algos import get_algorithm
from envs.probe import probe_env
from joyrl_ray.config import (
    ConfigError,
    RunConfig,
    build_config,
    merged_overrides,
    parse_overrides,
)

MUTABLE_SECTION = "algo_cfg"


def check_restorable(
    key: str, values: list[Any], run_yaml: dict[str, Any], overrides: list[str]
) -> None:
    """One line (``ConfigError``) when a checkpoint made with one of ``values`` of ``key``
    (every choice, or a range's two ends) does not load into a run with another."""
    where = f"sweep pbt.mutations {key}"
    if key.split(".", 1)[0] != MUTABLE_SECTION:
        raise ConfigError(
            f"{where}: PBT changes a key mid-run by restoring a checkpoint, and only "
            f"{MUTABLE_SECTION} keys can change there (the env, layout and seed are the run's)"
        )
    base = parse_overrides(overrides)
    configs = [
        RunConfig.from_omegaconf(build_config(run_yaml, merged_overrides(base, {key: v})))
        for v in values
    ]
    first = configs[0]
    spaces = probe_env(first.env, max_episode_steps=first.general.max_step)
    spec = get_algorithm(first.general.algo_name)
    cpu = torch.device("cpu")
    algorithms = [spec.algorithm_cls(cfg.algo, *spaces, cpu) for cfg in configs]
    for i, source in enumerate(algorithms):
        state = source.state_dict()
        for j, target in enumerate(algorithms):
            if i == j:
                continue
            try:
                target.load_state_dict(state)
            except (RuntimeError, KeyError, ValueError, TypeError) as exc:
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                detail = " ".join(lines[:2])[:200] if lines else type(exc).__name__
                raise ConfigError(
                    f"{where}: a checkpoint made with {values[i]!r} does not load into a run "
                    f"with {values[j]!r} ({detail}); PBT can mutate only keys a restored run "
                    "can take (a learning rate, a coefficient, a schedule), not a shape"
                ) from None
