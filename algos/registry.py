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

An alias (:func:`register_alias`) is another name for a registered algorithm, one that
another framework's yaml files use (JoyRL's ``DQN_new``). The config check replaces it by
the registered name, so the task directory, the checkpoints and a later test or resume
see only that name.
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


@dataclass(frozen=True)
class AlgoAlias:
    """Another name for a registered algorithm (a name other frameworks' yaml files use)."""

    name: str
    target: str  # the registered name it runs as
    note: str  # where the name comes from, for the config reference


#: ``general_cfg.algo_name`` values that run a registered algorithm under its own name.
ALIASES: dict[str, AlgoAlias] = {}


def register_algorithm(name: str, config_cls: type[Any], algorithm: type[Algorithm] | str) -> None:
    """Make ``general_cfg.algo_name: <name>`` run ``algorithm`` with ``config_cls`` defaults."""
    if name in ALGORITHMS or name in ALIASES:
        raise ValueError(f"algorithm {name!r} is already registered")
    ALGORITHMS[name] = AlgoSpec(name, config_cls, algorithm)


def register_alias(name: str, target: str, note: str) -> None:
    """Make ``general_cfg.algo_name: <name>`` run ``target``, recorded as ``target``."""
    if name in ALGORITHMS or name in ALIASES:
        raise ValueError(f"algorithm {name!r} is already registered")
    if target not in ALGORITHMS:
        raise ValueError(f"alias {name!r}: no registered algorithm {target!r}")
    ALIASES[name] = AlgoAlias(name, target, note)


def canonical_name(name: str) -> str:
    """The registered name that ``name`` runs as: an alias's target, else ``name`` itself."""
    alias = ALIASES.get(name)
    return alias.target if alias is not None else name


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
    name = canonical_name(name)
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
