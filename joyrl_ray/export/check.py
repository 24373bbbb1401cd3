"""The check of an exported file: does it act as the torch policy does?

The torch policy acts greedily in the run's env for :data:`CHECK_STEPS` steps (as test mode
acts: ``act(explore=False)``, then ``env_action``); the observations and its actions are
recorded. The file then replays the observations: a feed-forward policy in one batch, a
recurrent one step by step with its own state (zeros where an episode starts). Integer
actions must be equal; float actions equal within :data:`RTOL` and :data:`ATOL` (what
float32 rounding of the same operations in another runtime leaves, with room to spare).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from algos.base import Policy
from algos.export import ActingGraph
from joyrl_ray.export.formats import Runner

CHECK_STEPS = 1000
CHECK_SEED = 0
RTOL, ATOL = 1e-5, 1e-5


@dataclass
class Recording:
    """``steps`` observations (as the graph takes them), the torch policy's env actions for
    them, and where an episode starts (``[steps]``, True at a step after a reset)."""

    obs: np.ndarray
    actions: np.ndarray
    starts: np.ndarray


@dataclass
class CheckResult:
    """How the file's actions compare with torch's."""

    steps: int
    max_diff: float
    exact: bool  # integer actions: compared for equality
    detail: str = ""  # the first mismatch, or a shape / dtype that differs

    @property
    def passed(self) -> bool:
        return not self.detail

    def describe(self) -> str:
        if self.exact:
            return f"{self.steps} observations, actions equal to torch's"
        return (
            f"{self.steps} observations, actions allclose to torch's (rtol {RTOL:g}, atol "
            f"{ATOL:g}; max |diff| {self.max_diff:.2g})"
        )

    def failure(self) -> str:
        return f"the exported actions differ from torch's on {self.detail}"


class RecordingFailed(RuntimeError):
    """The env raised too often to record the check's observations; the message says so."""


def record(
    policy: Policy,
    make_env: Callable[[], gym.Env],
    graph: ActingGraph,
    steps: int = CHECK_STEPS,
    policy_input: Callable[[np.ndarray], np.ndarray] | None = None,
) -> Recording:
    """Act greedily with the torch policy for ``steps`` env steps, resetting at episode ends.

    The env's observations are recorded (what the file takes); the policy acts on
    ``policy_input`` of them (the run's frozen normalization, which the file folds in).
    An env whose ``reset`` or ``step`` raises is rebuilt and a new episode starts, as the
    online evaluator does: the steps before the error stay recorded (the file is checked
    on observations, whole episodes or not). More than :data:`MAX_ENV_ERRORS` errors fail
    the recording."""
    dtype = graph.sample[0].numpy().dtype
    policy.seed(CHECK_SEED)
    episodes = _Episodes(make_env)
    observations, actions, starts = [], [], []
    try:
        obs = episodes.reset(seed=CHECK_SEED)
        policy.reset_memory(1)
        start = True
        for _ in range(steps):
            observations.append(np.asarray(obs).astype(dtype))
            starts.append(start)
            seen = np.asarray(obs)[None]
            if policy_input is not None:
                seen = policy_input(seen)
            action, _ = policy.act(seen, explore=False, env_steps=0)
            env_action = policy.env_action(action)[0]
            actions.append(env_action)
            stepped = episodes.step(env_action)
            start = stepped is None
            if stepped is None:
                obs = episodes.reset()
                policy.reset_memory(1)
            else:
                obs = stepped
    finally:
        episodes.close()
    return Recording(np.stack(observations), np.stack(actions), np.asarray(starts))


MAX_ENV_ERRORS = CHECK_STEPS // 10  # env errors a recording tolerates (rebuilt after each)


class _Episodes:
    """The check's env: rebuilt after an error, which ends the episode."""

    def __init__(self, make_env: Callable[[], gym.Env]) -> None:
        self.make_env = make_env
        self.env = make_env()
        self.errors = 0

    def reset(self, seed: int | None = None) -> np.ndarray:
        """The first observation of a new episode; after an error, from the next seed (a
        seed that fails to load would fail again)."""
        while True:
            try:
                return self.env.reset(seed=seed)[0]
            except Exception as exc:  # the user's env: any exception is its error
                self._failed(exc)
                seed = None if seed is None else seed + 1

    def step(self, action: np.ndarray) -> np.ndarray | None:
        """The next observation, or None where the episode ended (or the env raised)."""
        try:
            obs, _, terminated, truncated, _ = self.env.step(action)
        except Exception as exc:
            self._failed(exc)
            return None
        return None if terminated or truncated else obs

    def _failed(self, exc: Exception) -> None:
        self.errors += 1
        if self.errors > MAX_ENV_ERRORS:
            raise RecordingFailed(
                f"the env raised {self.errors} times while the check recorded observations "
                f"(more than {MAX_ENV_ERRORS}); the last: {type(exc).__name__}: {exc}"
            ) from None
        self.close()
        self.env = self.make_env()

    def close(self) -> None:
        try:
            self.env.close()
        except Exception:  # a broken env may fail to close too
            pass


def replay(run: Runner, graph: ActingGraph, recording: Recording) -> np.ndarray:
    """The file's actions for the recorded observations."""
    if not graph.states:
        return run([recording.obs])[0]
    actions = []
    initial = [s.numpy() for s in graph.initial_state(1)]
    state = initial
    for obs, start in zip(recording.obs, recording.starts, strict=True):
        if start:
            state = initial
        outputs = run([obs[None], *state])
        actions.append(outputs[0][0])
        state = outputs[len(outputs) - len(graph.states) :]
    return np.stack(actions)


def compare(got: np.ndarray, expected: np.ndarray) -> CheckResult:
    """The file's actions ``got`` against torch's ``expected``."""
    steps = len(expected)
    exact = bool(np.issubdtype(expected.dtype, np.integer))
    if got.shape != expected.shape or got.dtype.kind != expected.dtype.kind:
        detail = (
            f"every observation (actions {got.dtype}{list(got.shape)} where torch gives "
            f"{expected.dtype}{list(expected.shape)})"
        )
        return CheckResult(steps, float("nan"), exact, detail)
    rows = got.reshape(steps, -1)
    want = expected.reshape(steps, -1)
    if exact:
        bad = np.any(rows != want, axis=1)
        diff = float(np.abs(rows - want).max()) if rows.size else 0.0
    else:
        bad = ~np.all(np.isclose(rows, want, rtol=RTOL, atol=ATOL), axis=1)
        diff = float(np.abs(rows.astype(np.float64) - want).max()) if rows.size else 0.0
    detail = ""
    if bad.any():
        first = int(np.argmax(bad))
        tolerance = "" if exact else f", rtol {RTOL:g}, atol {ATOL:g}"
        detail = (
            f"{int(bad.sum())} of {steps} observations (the first at step {first}: "
            f"{rows[first].tolist()} where torch gives {want[first].tolist()}{tolerance})"
        )
    return CheckResult(steps, diff, exact, detail)
