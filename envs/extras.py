"""Optional dependencies of the env families, and the one line that says how to get them.

Each family's packages are declared in ``requirements-<family>.txt`` at the project root
(the same way the core is installed). A missing one surfaces in many shapes: an
``ImportError`` naming a module, gymnasium's ``DependencyNotInstalled`` whose text names
a package, or an env id from a family's namespace. :func:`find_extra` maps any of them
to the family, so the error can name the exact pip command.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Extra:
    """One optional family: its packages and the modules / words that betray their absence."""

    family: str
    packages: str  # as listed in requirements-<family>.txt, for the message
    modules: tuple[str, ...]  # top-level import names, matched against ImportError.name
    keywords: tuple[str, ...]  # lower-case words matched against an error's text
    gymnasium_extra: str | None = None  # gymnasium's own extra with the same packages

    @property
    def pip(self) -> str:
        command = f"pip install -r requirements-{self.family}.txt"
        if self.gymnasium_extra:
            command += f' (or pip install "gymnasium[{self.gymnasium_extra}]")'
        return command


EXTRAS: tuple[Extra, ...] = (
    Extra(
        "atari",
        "ale-py, opencv-python-headless",
        ("ale_py", "cv2"),
        ("ale-py", "ale_py", "opencv", "cv2"),
    ),
    Extra("box2d", "Box2D, pygame-ce", ("Box2D",), ("box2d",), "box2d"),
    Extra("mujoco", "mujoco", ("mujoco",), ("mujoco",), "mujoco"),
    Extra("minari", "minari, h5py", ("minari", "h5py"), ("minari", "h5py")),
    Extra("multiagent", "pettingzoo, mpe2", ("pettingzoo", "mpe2"), ("pettingzoo", "mpe2")),
)
# Gymnasium namespaces whose ids register only once a package is imported.
NAMESPACE_MODULES = {"ALE": "ale_py"}
# Entry-point prefixes of gymnasium's own optional families.
ENTRY_POINT_FAMILIES = {
    "gymnasium.envs.box2d": "box2d",
    "gymnasium.envs.mujoco": "mujoco",
    "ale_py": "atari",
}


def extra_by_family(family: str) -> Extra:
    return next(e for e in EXTRAS if e.family == family)


def find_extra(
    *, module: str | None = None, text: str = "", family: str | None = None
) -> Extra | None:
    """The family that a missing ``module``, an error ``text`` or a known ``family`` points to."""
    if module:
        top = module.split(".")[0]
        for extra in EXTRAS:
            if top in extra.modules:
                return extra
    lowered = text.lower()
    for extra in EXTRAS:
        if any(word in lowered for word in extra.keywords):
            return extra
    return extra_by_family(family) if family else None


def missing_line(subject: str, extra: Extra) -> str:
    """``<subject> needs the <family> extra (<packages>), which is not installed: <pip>``."""
    return (
        f"{subject} needs the {extra.family} extra ({extra.packages}), "
        f"which is not installed: {extra.pip}"
    )
