"""Algorithm registry: a name maps to its config dataclass and its Policy class.

Built-in algorithms register on import of :mod:`algos`. An algorithm of your own needs no
change here: name it by import path, ``general_cfg.algo_name: my_pkg.my_module:MY_SPEC``,
where ``MY_SPEC`` is an :class:`AlgoSpec`; every process of the run imports it the same way.
"""

from __future__ import annotations

import importlib
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


def _import_spec(path: str) -> AlgoSpec:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise KeyError(
            f"general_cfg.algo_name={path!r}: cannot import module {module_name!r} ({exc})"
        ) from None
    spec = getattr(module, attr, None)
    if not isinstance(spec, AlgoSpec):
        raise KeyError(
            f"general_cfg.algo_name={path!r}: {module_name}.{attr} is not an AlgoSpec "
            "(expected AlgoSpec(name, config_cls, policy_cls))"
        )
    return spec


def get_algorithm(name: str) -> AlgoSpec:
    if name in ALGORITHMS:
        return ALGORITHMS[name]
    if ":" in name:
        ALGORITHMS[name] = _import_spec(name)
        return ALGORITHMS[name]
    raise KeyError(
        f"general_cfg.algo_name={name!r} is not registered; "
        f"allowed: {', '.join(sorted(n for n in ALGORITHMS if ':' not in n))}, "
        "or an import path 'pkg.module:SPEC'"
    )
