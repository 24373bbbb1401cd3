"""Online evaluations from the driver's side: the checkpoints waiting for the evaluator, in
order, the one it evaluates, and what each result does.

A result is recorded; ``best.pt`` is written from exactly the checkpoint that got the best
evaluation; one that reaches ``general_cfg.reward_threshold`` stops the run; skipped and
failed evaluations are counted (the first of each also shown on the console). Apart from
the driver loop, which only hands checkpoints in, pumps the evaluations between its turns
and, at the end, decides how long to wait for those still queued.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

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
EVAL_QUEUE = 4
RESULT_TIMEOUT_S = 120.0  # the call is done: its result (or error) is in already


class EvalTally(Protocol):
    """The part of the run's outcome that evaluations keep (the driver's ``DriveOutcome``)."""

    stop_reason: str | None
    best_return: float
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
        store: CheckpointStore,
        tally: EvalTally,
        stop: Stop,
    ) -> None:
        self.cfg = cfg
        self.runtime = runtime
        self.recorder = recorder
        self.store = store
        self.tally = tally
        self.stop = stop
        self.in_flight: tuple[Call[EvalResult], CheckpointReport] | None = None
        self.queue: deque[CheckpointReport] = deque(maxlen=EVAL_QUEUE)

    @property
    def pending(self) -> bool:
        """Whether an evaluation is running or queued."""
        return bool(self.in_flight or self.queue)

    def add(self, checkpoint: CheckpointReport) -> None:
        """Queue ``checkpoint`` for evaluation; a full queue skips its oldest."""
        if len(self.queue) == self.queue.maxlen:
            self._skipped(self.queue[0].updates)
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
                )
                self.in_flight = (call, checkpoint)
            call, checkpoint = self.in_flight
            if not call.done():
                return
            self.in_flight = None
            try:
                result = call.result(timeout_s=RESULT_TIMEOUT_S)
            except RoleError as exc:
                self._failed(checkpoint.updates, str(exc))
            else:
                self._take(result, checkpoint)

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
        mean = result.returns["return_mean"]
        if general.save_best_model is not False and mean > self.tally.best_return:
            self.tally.best_return = mean
            # Exactly the evaluated checkpoint, with the evaluation it got.
            self.store.save_best(checkpoint.state, result.returns)
        threshold = general.reward_threshold
        if threshold is not None and mean >= threshold and self.tally.stop_reason is None:
            self.stop("reward_threshold", None, 0)
