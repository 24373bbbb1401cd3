"""Algorithm registry: a name maps to its config dataclass and its Algorithm class.

The runtime builds an algorithm's two halves from its spec: ``spec.policy_cls(cfg, obs_space,
action_space, device)`` acts (workers, evaluators, test mode) and ``spec.algorithm_cls(cfg,
obs_space, action_space, device)`` learns (learners, resume).

Built-in algorithms register on import of :mod:`algos`, each naming its Algorithm class by
import path (``"algos.dqn.policy:DQN"``): the class, and torch with it, is imported
when first used, so that checking a config (and failing on bad input) never waits for torch.
An algorithm of your own needs no change here: name it by import path,
``general_cfg.algo_name: my_pkg.my_module:MY_SPEC``, where ``MY_SPEC`` is an
:class:`AlgoSpec`; every process of the run imports it the same way.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from algos.base import Algorithm, Policy


def _import_object(path: str) -> Any:
    """What ``"pkg.module:name"`` names (None if the module has no such name); raises
    ImportError when the module cannot be imported."""
    module_name, _, attr = path.partition(":")
    return getattr(importlib.import_module(module_name), attr, None)


@cache
def _import_class(path: str) -> type[Algorithm]:
    algorithm = _import_object(path)
    if algorithm is None:
        raise ImportError(f"{path}: the module has no {path.partition(':')[2]!r}")
    return algorithm


@dataclass(frozen=True)
class AlgoSpec:
    """An algorithm: its name, config dataclass and Algorithm class (or that class's import
    path ``"pkg.module:Class"``, imported on first use)."""

    name: str
    config_cls: type[Any]
    algorithm: type[Algorithm] | str

    @property
    def algorithm_cls(self) -> type[Algorithm]:
        """The learning half (learners build it)."""
        if isinstance(self.algorithm, str):
            return _import_class(self.algorithm)
        return self.algorithm

    @property
    def policy_cls(self) -> type[Policy]:
        """The acting half (workers build it alone); it also answers ``check_spaces`` and
        ``data_needs``."""
        return self.algorithm_cls.policy_cls


ALGORITHMS: dict[str, AlgoSpec] = {}


def register_algorithm(name: str, config_cls: type[Any], algorithm: type[Algorithm] | str) -> None:
    """Make ``general_cfg.algo_name: <name>`` run ``algorithm`` with ``config_cls`` defaults."""
    if name in ALGORITHMS:
        raise ValueError(f"algorithm {name!r} is already registered")
    ALGORITHMS[name] = AlgoSpec(name, config_cls, algorithm)


def _import_spec(path: str) -> AlgoSpec:
    module_name, _, attr = path.partition(":")
    try:
        spec = _import_object(path)
    except ImportError as exc:
        raise KeyError(
            f"general_cfg.algo_name={path!r}: cannot import module {module_name!r} ({exc})"
        ) from None
    if not isinstance(spec, AlgoSpec):
        raise KeyError(
            f"general_cfg.algo_name={path!r}: {module_name}.{attr} is not an AlgoSpec "
            "(expected AlgoSpec(name, config_cls, algorithm))"
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
