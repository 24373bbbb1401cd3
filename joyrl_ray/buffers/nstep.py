"""N-step folding of vector-env steps into ``rewards + discounts * V(next_obs)`` transitions."""

from __future__ import annotations

from collections import deque

import numpy as np

Batch = dict[str, np.ndarray]

#: Step columns consumed by the fold; every other column is an extra copied from the first step.
STEP_KEYS = ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")


class NStepFolder:
    """Per-env queues of the last ``n_step`` steps of a vector of ``n_envs`` envs.

    A transition starting at step ``t`` and spanning ``k`` steps has ``rewards`` =
    ``sum_{i<k} gamma^i r_{t+i}``, ``next_obs`` = the next_obs of step ``t+k-1`` and
    ``discounts`` = ``gamma^k``, or 0 if that step terminated. ``k = n_step`` unless the
    episode ends first; a truncated episode still bootstraps from its final observation.
    """

    def __init__(self, n_envs: int, n_step: int, gamma: float) -> None:
        if n_envs <= 0 or n_step <= 0:
            raise ValueError(f"need n_envs > 0 and n_step > 0, got {n_envs}, {n_step}")
        self.n_envs = int(n_envs)
        self.n_step = int(n_step)
        self.gamma = float(gamma)
        self._powers = self.gamma ** np.arange(self.n_step + 1, dtype=np.float64)
        self._queues: list[deque[dict[str, np.ndarray]]] = [deque() for _ in range(n_envs)]
        self._template: dict[str, tuple[tuple[int, ...], np.dtype]] | None = None

    def _fold(self, queue: deque[dict[str, np.ndarray]], start: int) -> dict[str, np.ndarray]:
        """The transition from ``queue[start]`` to the newest step in the queue."""
        steps = list(queue)[start:]
        k = len(steps)
        rewards = np.array([s["rewards"] for s in steps], dtype=np.float64)
        first, last = steps[0], steps[-1]
        out = {key: value for key, value in first.items() if key not in STEP_KEYS}
        out["obs"] = first["obs"]
        out["actions"] = first["actions"]
        out["rewards"] = np.float32(self._powers[:k] @ rewards)
        out["next_obs"] = last["next_obs"]
        out["discounts"] = np.float32(0.0 if last["terminated"] else self._powers[k])
        return out

    def add(self, step: Batch) -> Batch:
        """Queue one vector step; return the transitions it completes (maybe 0 rows)."""
        # Copy once: vector envs may reuse their arrays, and queued rows are views into these.
        step = {key: np.array(value, copy=True) for key, value in step.items()}
        missing = set(STEP_KEYS) - step.keys()
        if missing:
            raise KeyError(f"step lacks columns {sorted(missing)}")
        if len(step["rewards"]) != self.n_envs:
            raise ValueError(f"expected {self.n_envs} envs, got {len(step['rewards'])}")
        done = np.logical_or(step["terminated"], step["truncated"])
        emitted: list[dict[str, np.ndarray]] = []
        for env, queue in enumerate(self._queues):
            queue.append({key: value[env] for key, value in step.items()})
            if done[env]:  # the episode is over: every queued step ends here
                emitted.extend(self._fold(queue, start) for start in range(len(queue)))
                queue.clear()
            elif len(queue) == self.n_step:
                emitted.append(self._fold(queue, 0))
                queue.popleft()
        if self._template is None:
            self._template = self._make_template(step)
        if not emitted:
            return {
                key: np.zeros((0, *shape), dtype=dtype)
                for key, (shape, dtype) in self._template.items()
            }
        return {
            key: np.stack([t[key] for t in emitted]).astype(dtype, copy=False)
            for key, (_, dtype) in self._template.items()
        }

    @staticmethod
    def _make_template(step: Batch) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        """Per-row shape and dtype of every output column."""
        template = {
            key: (value.shape[1:], value.dtype)
            for key, value in step.items()
            if key not in STEP_KEYS
        }
        for key in ("obs", "actions", "next_obs"):
            template[key] = (step[key].shape[1:], step[key].dtype)
        template["rewards"] = ((), np.dtype(np.float32))
        template["discounts"] = ((), np.dtype(np.float32))
        return template
