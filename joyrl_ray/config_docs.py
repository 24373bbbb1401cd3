"""Prints the config reference (every key, default, meaning) as markdown tables.

``python -m joyrl_ray.config_docs > docs/config.md`` regenerates the reference from the
schema dataclasses, whose field comments (and comment lines right under a field) are the
documentation.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from algos import ALGORITHMS
from envs import EnvConfig
from joyrl_ray.general_config import GeneralConfig

FIELD_LINE = re.compile(r"^\s+(\w+): [^=]+= (.+?)(?:\s+# (.*))?$")
CONTINUATION = re.compile(r"^\s+# (.*)$")  # a comment line right under a field goes on


def _comments(cls: type) -> dict[str, str]:
    notes: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        last = None
        for line in inspect.getsource(klass).splitlines():
            match = FIELD_LINE.match(line)
            more = CONTINUATION.match(line)
            if match and match.group(3):
                last = match.group(1)
                notes[last] = match.group(3)
            elif more and last is not None:
                notes[last] += " " + more.group(1)
            else:
                last = None
    return notes


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return ""
    if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
        return (
            "[" + ", ".join(f"{v.layer_type} {v.layer_dim[0]} {v.activation}" for v in value) + "]"
        )
    return "null" if value is None else str(value)


def _rows(cls: type, prefix: str) -> list[str]:
    notes = {key: text.replace("|", "&#124;") for key, text in _comments(cls).items()}
    rows = []
    for f in dataclasses.fields(cls):
        factory = f.default_factory
        if factory is not dataclasses.MISSING and dataclasses.is_dataclass(factory):
            rows += _rows(factory, f"{prefix}.{f.name}")  # a nested section: one row per key
            continue
        rows.append(f"| `{prefix}.{f.name}` | `{_default(f)}` | {notes.get(f.name, '')} |")
    return rows


def _keys(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def table(cls: type, section: str) -> str:
    rows = _rows(cls, section)
    return "\n".join(["| key | default | meaning |", "| --- | --- | --- |", *rows])


def reference() -> str:
    parts = [
        "## general_cfg",
        table(GeneralConfig, "general_cfg"),
        "## env_cfg",
        table(EnvConfig, "env_cfg"),
    ]
    # Variants that only change defaults (DoubleDQN) share their base's table; a config that
    # adds keys (APPO over PPO) gets its own.
    families: dict[type, list[str]] = {}
    for name, spec in ALGORITHMS.items():
        if ":" in name:  # an algorithm named by import path is not one of the project's
            continue
        keys = _keys(spec.config_cls)
        same = (b for b in families if issubclass(spec.config_cls, b) and _keys(b) == keys)
        families.setdefault(next(same, spec.config_cls), []).append(name)
    for config_cls, names in families.items():
        parts += [f"## algo_cfg for {', '.join(names)}", table(config_cls, "algo_cfg")]
    return "\n\n".join(parts)


def page() -> str:
    """The whole of ``docs/config.md``."""
    intro = (
        "# Config reference\n\n"
        "Every key, its default and its meaning. Generated from the schema dataclasses by\n"
        "`python -m joyrl_ray.config_docs > docs/config.md`; do not edit by hand.\n\n"
        "Defaults come first, then the `--yaml` file, then `section.key=value` arguments.\n"
        "`-1` means no limit."
    )
    return f"{intro}\n\n{reference()}\n"


if __name__ == "__main__":
    print(page(), end="")
