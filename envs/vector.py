"""Vector envs for workers and the evaluator: ``env_cfg.vector_mode: sync | async``.

``sync`` (gymnasium's ``SyncVectorEnv``) steps the envs one after another in the calling
process: the cheapest for envs that step in microseconds (CartPole), where a process hop
costs more than the step. ``async`` (``AsyncVectorEnv``, observations in shared memory)
steps each env in a subprocess of its own, side by side: a vector step of a slow env
(a simulator taking milliseconds per step) then costs about one env's step, not
``n_envs`` of them, without more workers importing torch. Both reset an env in the same
step that ended its episode (``AutoresetMode.SAME_STEP``), so the worker's bookkeeping is
the same.

Subprocesses are forked: a child is ready in milliseconds (it inherits the imports), so
rebuilding a vector env after an env error stays cheap; it runs env code only.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
from gymnasium import logger as gym_logger
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorEnv

from envs.config import VECTOR_MODES
from envs.observations import packed_vector_env

ASYNC_START_METHOD = "fork"


#: How an env call that took too long is reported (see :func:`make_vector_env`).
TIMED_OUT = "timed out after"


def make_vector_env(
    env_fns: Sequence[Callable[[], gym.Env]],
    mode: str,
    *,
    step_timeout_s: float = -1.0,
    reset_timeout_s: float = -1.0,
) -> VectorEnv:
    """One vector env of ``len(env_fns)`` envs, stepped as ``mode`` says; nested (Dict,
    Tuple) observations come packed (see :mod:`envs.observations`). ``async``: a step or
    reset that takes longer than its timeout (when > 0) raises :class:`EnvCallTimeout`."""
    if mode == "sync":
        return packed_vector_env(SyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP))
    if mode == "async":
        parent = os.getpid()
        envs = _QuietAsyncVectorEnv(
            [_in_subprocess(fn, parent) for fn in env_fns],
            shared_memory=True,
            context=ASYNC_START_METHOD,
            autoreset_mode=AutoresetMode.SAME_STEP,
        )
        envs.timeouts = (step_timeout_s, reset_timeout_s)
        return packed_vector_env(envs)
    allowed = ", ".join(VECTOR_MODES)
    raise ValueError(f"env_cfg.vector_mode={mode!r} is not allowed; allowed: {allowed}")


class EnvCallTimeout(RuntimeError):
    """An async vector env's step or reset took longer than its timeout."""


class _QuietAsyncVectorEnv(AsyncVectorEnv):
    """An ``AsyncVectorEnv`` that raises a sub-env's error without printing its traceback
    first (see :func:`quiet_env_errors`), and waits for a step or reset at most its timeout
    (``timeouts``: step, reset; -1: no limit)."""

    timeouts: tuple[float, float] = (-1.0, -1.0)

    def reset_wait(self, timeout: float | None = None, **kwargs: Any) -> Any:
        limit = self.timeouts[1]
        with quiet_env_errors(), _timed("reset", limit):
            return super().reset_wait(timeout=timeout or (limit if limit > 0 else None), **kwargs)

    def step_wait(self, timeout: float | None = None) -> Any:
        limit = self.timeouts[0]
        with quiet_env_errors(), _timed("step", limit):
            return super().step_wait(timeout=timeout or (limit if limit > 0 else None))


@contextmanager
def _timed(call: str, limit: float) -> Iterator[None]:
    try:
        yield
    except multiprocessing.TimeoutError as exc:
        key = "step_timeout_s" if call == "step" else "reset_timeout_s"
        raise EnvCallTimeout(f"{call} {TIMED_OUT} {limit:g} s (env_cfg.{key})") from exc


def _in_subprocess(make: Callable[[], gym.Env], parent: int) -> Callable[[], gym.Env]:
    """``make``, which in an env subprocess first drops the signal handlers it inherited
    (a Ray worker's or the driver's): the parent alone decides when its envs end, by
    closing them or by SIGTERM, which must then end the child."""

    def make_here() -> gym.Env:
        if os.getpid() != parent:  # the vector env also builds one env in the parent
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return make()

    return make_here


@contextmanager
def quiet_env_errors() -> Iterator[None]:
    """Keep gymnasium from printing each async sub-env's traceback: the caller reports the
    error as one line (and a flaky env on Ray would fill the driver's console)."""
    level = gym_logger.min_level
    gym_logger.min_level = gym_logger.ERROR + 10
    try:
        yield
    finally:
        gym_logger.min_level = level


def close_vector_env(envs: VectorEnv, *, broken: bool = False) -> None:
    """Close ``envs``; ``broken`` (after an env error) ends async subprocesses at once:
    one of them may be dead or mid-call, and an orderly close would wait for it."""
    base = envs.unwrapped  # under the packing wrapper, if any
    with quiet_env_errors():
        if not (broken and isinstance(base, AsyncVectorEnv)):
            envs.close()
            return
        try:
            base.close(terminate=True)
        except (EOFError, OSError):
            # A sub-env died mid-step: gymnasium's close first waits for that step's answer
            # from the dead pipe. End the subprocesses without it.
            for process in base.processes:
                if process.is_alive():
                    process.terminate()
                process.join(timeout=1)
            base.closed = True
