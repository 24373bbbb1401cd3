"""Online evaluations from the driver's side: the checkpoints waiting for the evaluator, in
order, the one it evaluates, and what each result does.

A result is recorded; ``best.pt`` is written from exactly the checkpoint that got the best
evaluation (each policy's, in a multi-agent run); one that reaches
``general_cfg.reward_threshold`` stops the run (a multi-agent run's: the evaluation that
``multi_agent.threshold`` names, by default its first policy's headline figure); skipped
and failed evaluations are counted (the first of each also shown on the console). Apart
from the driver loop, which only hands checkpoints in, pumps the evaluations between its
turns and, at the end, decides how long to wait for those still queued.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol

import numpy as np

from joyrl_ray.backends.runtime import Runtime
from joyrl_ray.config import RunConfig
from joyrl_ray.roles.evaluator.results import EvalResult
from joyrl_ray.run.checkpoint import CheckpointStore
from joyrl_ray.run.recorder import Recorder
from joyrl_ray.wire.handles import Call, RoleError
from joyrl_ray.wire.messages import CheckpointReport

# Checkpoints waiting for the evaluator. The driver takes each checkpoint when it comes (the
# runtime wakes it), but an evaluation may take longer than the learner needs for the next
# one; a short queue keeps each evaluated, in order, through such bursts, and drops the
# oldest only when evaluation falls further behind.
EVAL_QUEUE = 8
RESULT_TIMEOUT_S = 120.0  # the call is done: its result (or error) is in already


class EvalTally(Protocol):
    """The part of the run's outcome that evaluations keep (the driver's ``DriveOutcome``)."""

    stop_reason: str | None
    best_returns: dict[str, float]  # by policy
    evals_skipped: int
    evals_failed: int
    eval_env_errors: int


#: How the evaluations stop the run: the driver's stop (reason, error, exit code).
Stop = Callable[[str, str | None, int], None]


class CheckpointEvaluations:
    """Checkpoints queued for the evaluator and the one it evaluates, taken in order."""

    def __init__(
        self,
        cfg: RunConfig,
        runtime: Runtime,
        recorder: Recorder,
        stores: dict[str, CheckpointStore],
        tally: EvalTally,
        stop: Stop,
    ) -> None:
        self.cfg = cfg
        self.runtime = runtime
        self.recorder = recorder
        self.stores = stores  # each policy's
        self.tally = tally
        self.stop = stop
        self.in_flight: tuple[Call[EvalResult], CheckpointReport] | None = None
        self.started_at = 0.0  # when the evaluation in flight started
        self.queue: deque[CheckpointReport] = deque(maxlen=EVAL_QUEUE * len(stores))
        # A multi-agent run's other learning policies act with their newest weights.
        self.newest_weights: dict[str, dict[str, np.ndarray]] = {}
        self.threshold = threshold_of(cfg)

    def newest(self, checkpoint: CheckpointReport) -> None:
        """A checkpoint was written: its weights are its policy's newest."""
        self.newest_weights[checkpoint.policy] = checkpoint.weights

    @property
    def pending(self) -> bool:
        """Whether an evaluation is running or queued."""
        return bool(self.in_flight or self.queue)

    def add(self, checkpoint: CheckpointReport) -> None:
        """Queue ``checkpoint`` for evaluation; a full queue skips its oldest."""
        if len(self.queue) == self.queue.maxlen:
            self._skipped(self.queue[0].updates)
        if self.cfg.multi_agent is not None:
            # A policy's learner counts its own agents' transitions; the eval row is placed
            # by the run's env steps.
            counters = dataclasses.replace(
                checkpoint.counters, env_steps=self.recorder.counters["env_steps"]
            )
            checkpoint = dataclasses.replace(checkpoint, counters=counters)
        self.queue.append(checkpoint)
        self.pump()

    def pump(self) -> None:
        """Start the next queued evaluation when none runs; take the results that are in."""
        while True:
            if self.in_flight is None:
                if not self.queue:
                    return
                checkpoint = self.queue.popleft()
                call = self.runtime.evaluate(
                    checkpoint.weights,
                    checkpoint.updates,
                    checkpoint.counters.env_steps,
                    checkpoint.normalization,
                    checkpoint.policy,
                    dict(self.newest_weights),
                )
                self.in_flight = (call, checkpoint)
                self.started_at = time.monotonic()
            call, checkpoint = self.in_flight
            if not call.done():
                if self._stuck() and self.runtime.replace_evaluator():
                    self.in_flight = None
                    limit = self.cfg.general.eval_timeout_s
                    self._failed(
                        checkpoint.updates,
                        f"it ran past general_cfg.eval_timeout_s={limit:g} s (an env of the "
                        "evaluator that stopped answering?); a new evaluator takes the next",
                    )
                    continue
                return
            self.in_flight = None
            try:
                result = call.result(timeout_s=RESULT_TIMEOUT_S)
            except RoleError as exc:
                self._failed(checkpoint.updates, str(exc))
            else:
                self._take(result, checkpoint)

    def _stuck(self) -> bool:
        """Whether the evaluation running has run past ``eval_timeout_s``."""
        limit = self.cfg.general.eval_timeout_s
        return limit > 0 and time.monotonic() - self.started_at > limit

    def abandon(self) -> None:
        """Count the evaluations still running or queued as skipped, and forget them."""
        left = len(self.queue) + (self.in_flight is not None)
        if left:
            self.tally.evals_skipped += left
            self.recorder.log(f"{left} evaluation(s) still running or queued: not waited for")
        self.queue.clear()
        self.in_flight = None

    def _skipped(self, updates: int) -> None:
        """The oldest queued evaluation gives way to a newer checkpoint. The first time is
        shown on the console: a run whose evaluations fall behind learns on past the
        checkpoint that solved it, and its best model is one of fewer checkpoints."""
        self.tally.evals_skipped += 1
        line = (
            f"the evaluation of the checkpoint at {updates} updates was skipped: evaluating "
            f"{self.cfg.general.online_eval_episode} episodes takes longer than learning "
            f"from one checkpoint to the next (general_cfg.model_save_fre="
            f"{self.cfg.general.model_save_fre})"
        )
        self.recorder.log(line)
        if self.tally.evals_skipped == 1:
            self.recorder.note(
                f"warning: {line}; raise model_save_fre or lower online_eval_episode for an "
                "evaluation of every checkpoint (later skips: logs/log.txt)"
            )

    def _failed(self, updates: int, why: str) -> None:
        """One line in the log; the run goes on, and so do the next evaluations. The first
        failure is shown on the console too: a run whose evaluations all fail never stops at
        its reward_threshold nor keeps a best model, and its user must hear why."""
        self.tally.evals_failed += 1
        line = f"evaluation at {updates} updates failed: {why}"
        self.recorder.log(line)
        if self.tally.evals_failed == 1:
            self.recorder.note(f"warning: {line} (the run goes on; later failures: logs/log.txt)")

    def _take(self, result: EvalResult, checkpoint: CheckpointReport) -> None:
        self.tally.eval_env_errors += result.env_errors
        if result.error is not None:
            self._failed(checkpoint.updates, result.error)
            return
        self.recorder.record_eval(result)
        general = self.cfg.general
        policy = checkpoint.policy
        mean = result.returns["return_mean"]
        best = self.tally.best_returns.get(policy, -np.inf)
        if general.save_best_model is not False and mean > best:
            self.tally.best_returns[policy] = mean
            # Exactly the evaluated checkpoint, with the evaluation it got.
            self.stores[policy].save_best(checkpoint.state, result.returns)
        threshold = general.reward_threshold
        reached = self.threshold.reached(result)
        if threshold is not None and reached and self.tally.stop_reason is None:
            self.stop("reward_threshold", None, 0)


class Threshold:
    """Which evaluation figure ``general_cfg.reward_threshold`` is for, and whether a result
    reaches it: the mean return of a single-agent run's evaluations; a multi-agent run's
    ``multi_agent.threshold`` (a policy's mean return or win rate against an opponent)."""

    def __init__(
        self, value: float | None, policy: str | None, opponent: str | None, metric: str
    ) -> None:
        self.value, self.policy, self.opponent, self.metric = value, policy, opponent, metric

    def figure(self, result: EvalResult) -> float | None:
        """The figure ``result`` has for the threshold; None for another policy's."""
        if self.policy is not None and result.policy != self.policy:
            return None
        figures = result.returns
        if self.opponent is not None and self.opponent in result.opponents:
            figures = result.opponents[self.opponent]
        value = figures.get(self.metric)
        return None if value is None else float(value)

    def reached(self, result: EvalResult) -> bool:
        figure = self.figure(result)
        return self.value is not None and figure is not None and figure >= self.value


def threshold_of(cfg: RunConfig) -> Threshold:
    value = cfg.general.reward_threshold
    agents = cfg.multi_agent
    if agents is None:
        return Threshold(value, None, None, "return_mean")
    trained = [p for p, c in agents.policies.items() if c.fixed is None]
    policy = agents.threshold_policy or (trained[0] if trained else None)
    return Threshold(value, policy, agents.threshold_opponent, agents.threshold_metric)
