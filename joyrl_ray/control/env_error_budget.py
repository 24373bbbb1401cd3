"""How many env errors a run tolerates: a rate over the recent env steps, not a total.

A simulator that fails now and then (one step in a hundred, or one in 100k on a 10M-step
run) is rebuilt and the run goes on; a total cap would end any long run of it sooner or
later. :class:`EnvErrorBudget` counts errors over the last ``window_steps`` env steps and
stops a run once they exceed ``errors_per_1000`` per 1,000 steps of that window, i.e.
``errors_per_1000 * window_steps / 1000`` errors within any ``window_steps`` steps. The
allowance is that count from the first step on: the first errors of a run are judged
against the whole window, not against the few steps taken so far.

An env that fails on every step never gets that far: the worker stops the run when a
rebuilt env fails again before it steps (see ``Worker._recover_from_env_error``).
"""

from __future__ import annotations

from collections import deque


class EnvErrorBudget:
    """Errors per 1,000 env steps over a sliding window of env steps."""

    def __init__(self, errors_per_1000: float, window_steps: int) -> None:
        if errors_per_1000 < 0:
            raise ValueError(f"errors_per_1000={errors_per_1000} must be >= 0")
        if window_steps < 1:
            raise ValueError(f"window_steps={window_steps} must be >= 1")
        self.errors_per_1000 = errors_per_1000
        self.window_steps = window_steps
        self.allowed = errors_per_1000 * window_steps / 1000  # errors within one window
        self.env_steps = 0  # all env steps counted so far
        self.errors = 0  # all errors counted so far
        self._recent: deque[tuple[int, int]] = deque()  # (env_steps when seen, errors)
        self._in_window = 0  # errors in _recent

    def record(self, env_steps: int, n_errors: int, last_error: str = "") -> str | None:
        """Count ``env_steps`` more steps and ``n_errors`` errors among them; the one-line
        reason to stop when the window now holds more errors than allowed, else None."""
        self.env_steps += env_steps
        if n_errors:
            self.errors += n_errors
            self._recent.append((self.env_steps, n_errors))
            self._in_window += n_errors
        oldest = self.env_steps - self.window_steps
        while self._recent and self._recent[0][0] <= oldest:
            self._in_window -= self._recent.popleft()[1]
        if self._in_window <= self.allowed:
            return None
        seen = min(self.env_steps, self.window_steps)
        line = (
            f"{self._in_window} env errors in the last {seen} env steps, more than "
            f"general_cfg.max_env_errors_per_1000={self.errors_per_1000:g} per 1,000 over "
            f"{self.window_steps} steps allows ({self.allowed:g})"
        )
        return f"{line}; the last: {last_error}" if last_error else line

    @property
    def in_window(self) -> int:
        """Errors counted within the last ``window_steps`` env steps."""
        return self._in_window
