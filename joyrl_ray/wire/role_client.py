"""The base of every typed client: a role's methods called through a handle, on both backends.

Each client method names the role method it runs (so "go to definition" lands on it and a
type checker checks the arguments against it) and returns a ``Call[T]`` of that method's
return type. Only clients name role methods; everything else calls a client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from joyrl_ray.wire.handles import Call, Handle

P = ParamSpec("P")
R = TypeVar("R")


class RoleClient:
    """Calls a role's methods through a handle (either backend)."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    @property
    def role(self) -> str:
        return self.handle.role

    def _call(
        self, method: Callable[Concatenate[Any, P], R], *args: P.args, **kwargs: P.kwargs
    ) -> Call[R]:
        return self.handle.invoke(method.__name__, *args, **kwargs)
