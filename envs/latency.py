"""An env that takes a fixed wall time per step, for measuring what limits a run.

Real envs (a simulator, a robot, a game server) often cost milliseconds per step, while
CartPole costs microseconds; with the fast env alone a benchmark would measure the
runtime's overheads, not whether more workers help. :class:`StepLatency` sleeps
``step_latency_s`` in every ``step`` (and ``reset``), so the step time dominates as in a
slow simulator, while the process stays idle and many such workers share few cores.
It wraps any gymnasium env: ``env_cfg.wrappers: [step_latency]``. A straggler (one
worker slower than the others) takes ``env_cfg.step_latency_worker_s``: per worker
index, the latency of that worker's envs instead of ``step_latency_s``.
"""

from __future__ import annotations

import time
from typing import Any, SupportsFloat

import gymnasium as gym


def step_latency_of(env_cfg: Any, worker_id: int | None) -> float:
    """The latency of an env of worker ``worker_id`` (None: not a worker's, e.g. an
    evaluator's): its entry of ``step_latency_worker_s`` if it has one, else
    ``step_latency_s``."""
    per_worker = list(getattr(env_cfg, "step_latency_worker_s", None) or [])
    if worker_id is not None and worker_id < len(per_worker):
        return float(per_worker[worker_id])
    return float(env_cfg.step_latency_s)


def step_latency_overrides(seconds: float) -> tuple[str, ...]:
    """The command-line overrides that make every env step and reset also sleep ``seconds``
    (none at 0): an idle wait, so a run's pace holds however fast the machine."""
    if seconds <= 0:
        return ()
    return ("env_cfg.wrappers=[step_latency]", f"env_cfg.step_latency_s={seconds:g}")


class StepLatency(gym.Wrapper):
    """Sleeps ``step_latency_s`` seconds per ``step`` and ``reset``; otherwise transparent."""

    def __init__(self, env: gym.Env, step_latency_s: float) -> None:
        if step_latency_s < 0:
            raise ValueError(f"step_latency_s={step_latency_s} is out of range; allowed: >= 0")
        super().__init__(env)
        self.step_latency_s = float(step_latency_s)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.step_latency_s:
            time.sleep(self.step_latency_s)
        return self.env.step(action)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        if self.step_latency_s:
            time.sleep(self.step_latency_s)
        return self.env.reset(**kwargs)
