"""What an evaluation comes to: its episodes as they finish or fail, and the result.

:class:`EvalEpisodes` counts an evaluation's episodes and env errors while it runs and says
when it has ended or failed; :class:`EvalResult` is what an online evaluation hands back
to the driver. Apart from the evaluator because the driver, the recorder and the summary
read these results without playing an episode (and :func:`summarize_returns` is how the
summary describes test mode's episodes too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.wire.handles import first_line


@dataclass
class EvalEpisodes:
    """What an evaluation's episodes came to: the finished ones, those its env errors dropped.

    Each env error drops the episodes running in the env that raised (one env, or every
    sub-env of an async vector env) and fresh episodes run in their place: an evaluation
    tolerates as many env errors as it has episodes (``wanted``), so the one that succeeds
    has all its episodes. Past that it has failed (:attr:`error`): when most episodes fail,
    those that finish are the short ones, and their mean says little.
    """

    wanted: int
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    failed: int = 0  # episodes dropped by env errors
    env_errors: int = 0
    last_error: str = ""

    @property
    def ended(self) -> bool:
        return len(self.returns) >= self.wanted or self.env_errors > self.wanted

    def to_start(self, running: int) -> int:
        """Episodes still to start, besides ``running`` ones."""
        return self.wanted - len(self.returns) - running

    def finish(self, ret: float, length: int) -> None:
        self.returns.append(ret)
        self.lengths.append(length)

    def env_failed(self, exc: Exception, where: str, dropped: int) -> None:
        self.env_errors += 1
        self.failed += dropped
        self.last_error = f"evaluator: env {where} raised {first_line(exc)}"

    @property
    def error(self) -> str | None:
        """Why the evaluation failed; None when it did not."""
        if self.env_errors <= self.wanted:
            return None
        return (
            f"{self.env_errors} env errors, more than the {self.wanted} an evaluation of "
            f"{self.wanted} episodes tolerates ({len(self.returns)} episodes finished, "
            f"{self.failed} dropped); the last: {self.last_error}"
        )

    def summary(self) -> dict[str, Any]:
        return summarize_returns(self.returns, self.lengths)


@dataclass
class EvalResult:
    """One online evaluation of the checkpoint written at ``updates``."""

    updates: int
    env_steps: int
    returns: dict[str, Any]  # summarize_returns of its finished episodes
    episodes_failed: int = 0  # dropped by env errors (replaced, while the evaluation lasted)
    env_errors: int = 0
    last_env_error: str = ""
    error: str | None = None  # why it failed (then it is no evaluation of the checkpoint)
    policy: str = DEFAULT_POLICY  # the policy evaluated
    opponents: dict[str, dict[str, Any]] = field(default_factory=dict)  # a game's, by opponent

    @classmethod
    def of(cls, updates: int, env_steps: int, episodes: EvalEpisodes) -> EvalResult:
        return cls(
            updates,
            env_steps,
            episodes.summary(),
            episodes.failed,
            episodes.env_errors,
            episodes.last_error,
            episodes.error,
        )


def summarize_returns(returns: list[float], lengths: list[int]) -> dict[str, Any]:
    r = np.asarray(returns, dtype=np.float64)
    if r.size == 0:
        return {"episodes": 0}
    return {
        "episodes": int(r.size),
        "return_mean": float(r.mean()),
        "return_std": float(r.std()),
        "return_min": float(r.min()),
        "return_max": float(r.max()),
        "length_mean": float(np.mean(lengths)),
        "length_min": int(np.min(lengths)),
        "length_max": int(np.max(lengths)),
    }
