"""CartPole variants that fail on purpose, for the fault tests
(``env_cfg.id=tests.support.faulty_envs:X``).

They fail in the worker processes of a real run: the driver builds one env before anything
starts (to read its spaces) and does not step it, so each of them gets past those checks.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.classic_control import CartPoleEnv


class HangingEnv(CartPoleEnv):
    """CartPole whose ``step`` blocks after ``hang_after`` steps of this env: forever, or
    until the file ``release`` exists (when given).

    Before hanging it touches ``mark`` (when given), so a test knows when the run stalled.
    With ``claim`` (a file path) it hangs in one worker process only, the first to build it;
    every other process's envs step on. In a synchronous rollout flow the learner then waits
    on the rollout queue for that worker's rollout while the other worker, its rollout in,
    waits for the learner's next weights.
    """

    def __init__(
        self,
        hang_after: int = 1000,
        mark: str | None = None,
        claim: str = "",
        release: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.hang_after, self.mark, self.release = hang_after, mark, release
        self.hangs = not claim or (_in_ray_worker_actor() and claim_file(Path(claim)))
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.hangs and self.steps == self.hang_after + 1:
            if self.mark:
                Path(self.mark).write_text(f"{os.getpid()} {time.time()}\n")
            if not self.release:
                threading.Event().wait()  # a simulator that stopped answering
            while not Path(self.release).exists():
                time.sleep(0.05)
        return super().step(action)


def claim_file(path: Path) -> bool:
    """Whether this process owns ``path``: the first process to create it does (it holds
    that process's pid)."""
    try:
        with path.open("x") as f:
            f.write(str(os.getpid()))
        return True
    except FileExistsError:
        return path.read_text() == str(os.getpid())


class BrokenStepEnv(CartPoleEnv):
    """CartPole whose ``step`` always raises: an env that fails on every try."""

    def step(self, action: Any) -> Any:
        raise RuntimeError("simulator crashed: segment 7 out of bounds")


def _in_ray_worker_actor() -> bool:
    """Inside a Ray actor that was given CPUs: the run's Worker actors (the driver is no
    actor, and the online evaluator and the DataServer ask for no CPU)."""
    try:
        import ray
    except ImportError:
        return False
    if not ray.is_initialized():
        return False
    context = ray.get_runtime_context()
    if context.get_actor_id() is None:
        return False
    return context.get_assigned_resources().get("CPU", 0.0) > 0


class DriverOnlyEnv(CartPoleEnv):
    """CartPole that cannot be built in a worker process, as a simulator reachable from the
    driver's host only (a licence server, a local path): the Worker's constructor fails."""

    def __init__(self, **kwargs: Any) -> None:
        if _in_ray_worker_actor():
            raise gym.error.Error(
                "no simulator licence on this node (licence server 10.0.0.5:27000 unreachable)"
            )
        super().__init__(**kwargs)


class EvalBrokenEnv(CartPoleEnv):
    """CartPole whose ``step`` raises outside the run's Worker actors: on Ray, in the online
    evaluator's envs (the driver's process) only; training goes on undisturbed."""

    def step(self, action: Any) -> Any:
        if not _in_ray_worker_actor():
            raise RuntimeError("evaluation simulator crashed: segment 9 out of bounds")
        return super().step(action)


class EvalHangsOnceEnv(CartPoleEnv):
    """CartPole whose ``step`` blocks forever outside the run's Worker actors (on Ray: in
    the online evaluator's envs) after ``hang_after`` steps, in the first env to get there
    (the one that creates the file ``claim``); every other env steps on."""

    def __init__(self, hang_after: int = 100, claim: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hang_after, self.claim, self.steps = hang_after, Path(claim), 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps == self.hang_after + 1 and not _in_ray_worker_actor():
            try:
                self.claim.open("x").close()
            except FileExistsError:
                return super().step(action)
            threading.Event().wait()  # an evaluation's simulator that stopped answering
        return super().step(action)


class FlakyResetEnv(CartPoleEnv):
    """CartPole whose ``reset`` raises for one seed in ``every``: a simulator that fails to
    load some scenes (the same ones in any process, whatever the env's build)."""

    def __init__(self, every: int = 13, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None and seed % self.every == 0:
            raise RuntimeError(f"scene {seed} failed to load")
        return super().reset(seed=seed, options=options)


class FlakyEnv(FlakyResetEnv):
    """FlakyResetEnv whose ``step`` also raises on every ``step_every``-th step it takes: a
    simulator that sometimes fails mid-episode, the same way in every process."""

    def __init__(self, step_every: int = 97, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.step_every = step_every
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps % self.step_every == 0:
            raise RuntimeError(f"physics step {self.steps} diverged")
        return super().step(action)


class WorkerFlakyEnv(CartPoleEnv):
    """CartPole whose ``step`` raises on ``rate`` of its steps in the run's Worker actors (a
    simulator that now and then crashes mid-episode), drawn from a generator of its own; the
    online evaluator's envs (outside them) never fail."""

    def __init__(self, rate: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = rate
        self.failing = _in_ray_worker_actor()
        self.draws = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        if seed is not None:
            self.draws = np.random.default_rng(seed + 7919)
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        if self.failing and self.draws.random() < self.rate:
            raise RuntimeError("simulator crashed: contact solver did not converge")
        return super().step(action)
