"""One calling convention for both backends, under the typed clients (``RoleClient``).

A handle runs a role's method by name and returns a :class:`Call` whose ``result`` gives
the value or raises. With ``mp_backend: single`` the method runs at once in this process
(:class:`LocalHandle`); with ``ray`` it is an actor task (:class:`RayHandle`), or, for a
role that lives in the driver's process, a task on a thread of its own (:class:`ThreadHandle`).
Errors are the same on both: :class:`RoleFailed` when the method raised, :class:`RoleDied`
when the role's process is gone, :class:`CallTimeout` when no answer came within the deadline.

An :class:`ObjectStore` moves large payloads (weights) once: ``put`` returns a box that
travels by reference, ``get`` opens it where it is needed.
"""

from __future__ import annotations

import queue
import re
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class RoleError(RuntimeError):
    """A call to another role did not return a value."""


class RoleFailed(RoleError):
    """The called method raised; ``str()`` names the role, the method and the error."""


class RoleDied(RoleError):
    """The called role's process is gone (killed, crashed, or its node was lost)."""


class CallTimeout(RoleError):
    """No answer within the call's deadline."""


ANSI_ESCAPES = re.compile(r"\x1b\[[0-9;]*m")


def plain_line(text: str) -> str:
    """The first line of an error's text (Ray's, say), without its terminal colours."""
    lines = ANSI_ESCAPES.sub("", text).strip().splitlines()
    return lines[0] if lines else ""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class Call(Protocol[T_co]):
    def result(self, timeout_s: float | None = None) -> T_co: ...

    def done(self) -> bool: ...


class Handle(Protocol):
    """Runs a role's method by name (only ``clients.py`` names methods)."""

    role: str

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Call[Any]: ...


class DoneCall(Generic[T]):
    """A call that already ran (in this process)."""

    def __init__(self, value: Any = None, error: RoleError | None = None) -> None:
        self._value, self._error = value, error

    def result(self, timeout_s: float | None = None) -> T:
        if self._error is not None:
            raise self._error
        return self._value

    def done(self) -> bool:
        return True


class LocalHandle:
    """Calls a plain object's methods directly (``mp_backend: single``)."""

    def __init__(self, target: Any, role: str) -> None:
        self.target = target
        self.role = role

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Call[Any]:
        try:
            return DoneCall(getattr(self.target, method)(*args, **kwargs))
        except Exception as exc:  # surfaced at result(), as a remote error would be
            error = RoleFailed(f"{self.role}.{method} failed: {first_line(exc)}")
            error.__cause__ = exc
            return DoneCall(error=error)


class ThreadCall(Generic[T]):
    """A method running on a :class:`ThreadHandle`'s thread."""

    def __init__(self, future: Future[T], role: str, method: str) -> None:
        self.future, self.role, self.method = future, role, method

    def result(self, timeout_s: float | None = None) -> T:
        try:
            return self.future.result(timeout=timeout_s)
        except FutureTimeout:
            raise CallTimeout(
                f"{self.role}.{self.method} gave no answer within {timeout_s:g} s"
            ) from None
        except Exception as exc:
            raise RoleFailed(f"{self.role}.{self.method} failed: {first_line(exc)}") from exc

    def done(self) -> bool:
        return self.future.done()

    @property
    def completion(self) -> Future[T]:
        """Completes when the call does (to wait on beside Ray's calls)."""
        return self.future


class ThreadHandle:
    """Runs a plain object's methods one at a time on a daemon thread of their own.

    For a role that lives in the driver's process on the Ray backend (the online
    evaluator): the driver's loop goes on while it works, and no process has to start
    and import torch for it. The thread never blocks the process's exit.
    """

    def __init__(self, target: Any, role: str) -> None:
        self.target = target
        self.role = role
        self._tasks: queue.SimpleQueue[tuple[Future[Any], str, tuple, dict] | None] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._serve, name=role, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while (task := self._tasks.get()) is not None:
            future, method, args, kwargs = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(getattr(self.target, method)(*args, **kwargs))
            except Exception as exc:  # surfaced at result(), as a remote error would be
                future.set_exception(exc)

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Call[Any]:
        future: Future[Any] = Future()
        self._tasks.put((future, method, args, kwargs))
        return ThreadCall(future, self.role, method)

    def close(
        self, last: str | None = None, *, interrupt: str | None = None, join_s: float = 0.0
    ) -> None:
        """Drop the calls not yet started and let the thread end after the current one,
        and after the target's method ``last`` (e.g. one that closes what it holds).

        ``interrupt`` names a target method, called from this thread, that makes the
        current call end soon; ``join_s`` then waits that long for the thread to end: a
        daemon thread still running torch code while the interpreter exits aborts it.
        """
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task[0].cancel()
        if interrupt is not None:
            getattr(self.target, interrupt)()
        if last is not None:
            self.invoke(last)
        self._tasks.put(None)
        if join_s > 0:
            self._thread.join(timeout=join_s)


class RayCall(Generic[T]):
    """An actor task's result; Ray's errors become :class:`RoleError` subclasses."""

    def __init__(self, ref: Any, role: str, method: str) -> None:
        self.ref, self.role, self.method = ref, role, method
        self._completion: Future[T] | None = None

    @property
    def completion(self) -> Future[T]:
        """Completes when the task does; with :attr:`ThreadCall.completion`, one
        ``concurrent.futures.wait`` covers calls into actors and into this process's threads."""
        if self._completion is None:
            self._completion = self.ref.future()
        return self._completion

    def result(self, timeout_s: float | None = None) -> T:
        import ray

        try:
            return ray.get(self.ref, timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise CallTimeout(
                f"{self.role}.{self.method} gave no answer within {timeout_s:g} s"
            ) from None
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if exc.cause is not None else exc
            error = RoleFailed(f"{self.role}.{self.method} failed: {first_line(cause)}")
            raise error from cause
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise RoleDied(f"{self.role} died during {self.method} ({detail})") from exc

    def done(self) -> bool:
        import ray

        ready, _ = ray.wait([self.ref], timeout=0)
        return bool(ready)


class RayHandle:
    """Calls a Ray actor's methods as tasks (``mp_backend: ray``).

    Given a name, it pickles as that name and finds the actor again on first use, so an
    actor that receives it holds no actor handle in its constructor arguments: Ray can
    restart it from its arguments alone, and it reconnects to the named actor.

    A ``lockstep`` handle returns a call only once the actor has run it (``general_cfg.
    lockstep``): a caller's calls then happen in the order it makes them, also at a
    threaded actor, as in one process.
    """

    def __init__(
        self, role: str, *, name: str | None = None, actor: Any = None, lockstep: bool = False
    ) -> None:
        self.role = role
        self.name = name
        self._actor = actor
        self.lockstep = lockstep

    @property
    def actor(self) -> Any:
        if self._actor is None:
            import ray

            self._actor = ray.get_actor(self.name)
        return self._actor

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
        if self.name is None:
            raise TypeError(f"the handle of {self.role} is not named and cannot travel")
        return _named_ray_handle, (self.role, self.name, self.lockstep), {}

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Call[Any]:
        ref = getattr(self.actor, method).remote(*args, **kwargs)
        if self.lockstep:
            import ray

            ray.wait([ref], num_returns=1, fetch_local=False)  # run, or failed: not raised here
        return RayCall(ref, self.role, method)


def _named_ray_handle(role: str, name: str, lockstep: bool = False) -> RayHandle:
    return RayHandle(role, name=name, lockstep=lockstep)


# ----- object stores -----
class ObjectStore(Protocol):
    """Puts a payload once and hands out a box that travels by reference."""

    def put(self, value: Any) -> list[Any]: ...

    def get(self, box: list[Any], timeout_s: float | None = None) -> Any: ...

    def ready(self, box: list[Any]) -> bool: ...


class LocalStore:
    """``mp_backend: single``: the box holds the value itself."""

    def put(self, value: Any) -> list[Any]:
        return [value]

    def get(self, box: list[Any], timeout_s: float | None = None) -> Any:
        return box[0]

    def ready(self, box: list[Any]) -> bool:
        return True


class RayStore:
    """Ray's object store; the box is a list so Ray passes the reference along unresolved.

    The process that puts owns the object: weights are put by the DataServer, so they
    outlive a learner that dies.
    """

    def put(self, value: Any) -> list[Any]:
        import ray

        return [ray.put(value)]

    def get(self, box: list[Any], timeout_s: float | None = None) -> Any:
        import ray

        try:
            return ray.get(box[0], timeout=timeout_s)
        except ray.exceptions.GetTimeoutError:
            raise CallTimeout(f"fetching an object gave nothing within {timeout_s:g} s") from None
        except ray.exceptions.ObjectLostError as exc:
            raise RoleDied(f"an object was lost with its owner ({first_line(exc)})") from exc

    def ready(self, box: list[Any]) -> bool:
        """Whether the object is local now; starts fetching it if not."""
        import ray

        ready, _ = ray.wait([box[0]], timeout=0, fetch_local=True)
        return bool(ready)
