"""Algorithm registry: a name maps to its config dataclass and its Policy class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from algos.base import Policy


@dataclass(frozen=True)
class AlgoSpec:
    name: str
    config_cls: type[Any]
    policy_cls: type[Policy]


ALGORITHMS: dict[str, AlgoSpec] = {}


def register_algorithm(name: str, config_cls: type[Any], policy_cls: type[Policy]) -> None:
    """Make ``general_cfg.algo_name: <name>`` run ``policy_cls`` with ``config_cls`` defaults."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is already registered")
    ALGORITHMS[name] = AlgoSpec(name, config_cls, policy_cls)


def get_algorithm(name: str) -> AlgoSpec:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise KeyError(
            f"general_cfg.algo_name={name!r} is not registered; "
            f"allowed: {', '.join(sorted(ALGORITHMS))}"
        ) from None
