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


def make_vector_env(env_fns: Sequence[Callable[[], gym.Env]], mode: str) -> VectorEnv:
    """One vector env of ``len(env_fns)`` envs, stepped as ``mode`` says; nested (Dict,
    Tuple) observations come packed (see :mod:`envs.observations`)."""
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
        return packed_vector_env(envs)
    allowed = ", ".join(VECTOR_MODES)
    raise ValueError(f"env_cfg.vector_mode={mode!r} is not allowed; allowed: {allowed}")


class _QuietAsyncVectorEnv(AsyncVectorEnv):
    """An ``AsyncVectorEnv`` that raises a sub-env's error without printing its traceback
    first (see :func:`quiet_env_errors`)."""

    def reset_wait(self, *args: Any, **kwargs: Any) -> Any:
        with quiet_env_errors():
            return super().reset_wait(*args, **kwargs)

    def step_wait(self, *args: Any, **kwargs: Any) -> Any:
        with quiet_env_errors():
            return super().step_wait(*args, **kwargs)


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
