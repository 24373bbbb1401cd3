"""The run config: python defaults, then the yaml file, then ``section.key=value`` overrides.

``loading``
    Reads the yaml and the overrides, merges each section against its schema and builds
    the checked config (:func:`load_config`, :func:`build_config`) and :class:`RunConfig`,
    its plain-dataclass form.
``checks``
    What each section's keys and merged values must be; :class:`ConfigError`, the one line
    that bad input raises.
``general``
    The ``general_cfg`` schema (:class:`~joyrl_ray.config.general.GeneralConfig`), what
    runs, where, for how long and what it writes; ``algo_cfg`` and ``env_cfg`` have theirs
    in ``algos/`` and ``envs/``.
``joyrl_dialect``
    JoyRL's yaml keys read as this project's before the merge (its network spec:
    ``joyrl_networks``; its wrappers: ``joyrl_wrappers``; what each does: ``joyrl_docs``).
``docs``
    ``python -m joyrl_ray.config.docs > docs/config.md``: the reference of every key, from
    the schemas.
"""

from joyrl_ray.config.checks import ConfigError
from joyrl_ray.config.loading import (
    JOYRL_KEYS,
    SECTIONS,
    RunConfig,
    build_config,
    load_config,
    load_yaml_file,
    merged_overrides,
    parse_overrides,
    read_yaml,
)

__all__ = [
    "JOYRL_KEYS",
    "SECTIONS",
    "ConfigError",
    "RunConfig",
    "build_config",
    "load_config",
    "load_yaml_file",
    "merged_overrides",
    "parse_overrides",
    "read_yaml",
]
