"""One calling convention for both backends.

Runtime roles talk to each other through handles: ``handle.call("method", *args)`` returns
a :class:`Call` whose ``result()`` blocks for the value. With ``mp_backend: single`` the
call runs at once in this process; with ``ray`` it is an actor task. The same Worker,
Learner and DataServer code therefore runs unchanged in one process or as actors.
``share`` / ``resolve`` move large payloads (weights) through Ray's object store once.
"""

from __future__ import annotations

from typing import Any, Protocol


class Call(Protocol):
    def result(self) -> Any: ...

    def done(self) -> bool: ...


class Handle(Protocol):
    def call(self, method: str, *args: Any, **kwargs: Any) -> Call: ...

    def share(self, value: Any) -> list[Any]: ...

    def resolve(self, box: list[Any]) -> Any: ...


class _DoneCall:
    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def done(self) -> bool:
        return True


class LocalHandle:
    """Calls a plain object's methods directly (``mp_backend: single``)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def call(self, method: str, *args: Any, **kwargs: Any) -> Call:
        try:
            return _DoneCall(getattr(self.target, method)(*args, **kwargs))
        except Exception as exc:  # surfaced at result(), as a remote error would be
            return _DoneCall(error=exc)

    def share(self, value: Any) -> list[Any]:
        return [value]

    def resolve(self, box: list[Any]) -> Any:
        return box[0]


class _RayCall:
    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def result(self) -> Any:
        import ray

        return ray.get(self.ref)

    def done(self) -> bool:
        import ray

        ready, _ = ray.wait([self.ref], timeout=0)
        return bool(ready)


class RayHandle:
    """Calls a named Ray actor's methods as tasks (``mp_backend: ray``).

    It pickles as the actor's name and finds the actor again on first use, so actors
    that receive it hold no actor handle in their constructor arguments: Ray can restart
    them from their arguments alone, and they reconnect to the named actor.
    """

    def __init__(self, name: str, actor: Any = None) -> None:
        self.name = name
        self._actor = actor

    @property
    def actor(self) -> Any:
        if self._actor is None:
            import ray

            self._actor = ray.get_actor(self.name)
        return self._actor

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return RayHandle, (self.name,)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Call:
        return _RayCall(getattr(self.actor, method).remote(*args, **kwargs))

    def share(self, value: Any) -> list[Any]:
        import ray

        # Wrapped in a list so Ray passes the reference along instead of resolving it.
        return [ray.put(value)]

    def resolve(self, box: list[Any]) -> Any:
        import ray

        return ray.get(box[0])
