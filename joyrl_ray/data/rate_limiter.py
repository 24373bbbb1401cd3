"""One replay shard's update-to-data limiter and the learners' rounds it grants.

As Reverb's ``SampleToInsertRatio``, held per shard: a shard grants updates in proportion
to the rows inserted *into it* (``updates_per_step`` per row once ``warmup`` rows are in),
and throttles its own workers when the learners trail by more than ``lag_tolerance``
updates. No global lock is on the path of a transition: each shard decides alone.

Rounds keep data-parallel learners in step: the first learner that asks for round ``r``
decides how many updates it has; every rank then gets that many batches, so all of them
make the same number of gradient steps (and collective calls).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Stops after which learners may still catch up with the update-to-data ratio.
DRAINING_STOPS = ("max_env_steps", "max_episode")
UNLIMITED_ROUND = 1 << 30  # what an unlimited limiter grants a round: all it asks for


@dataclass
class Round:
    """One learner round: decided by the first learner that asks, served to every rank."""

    updates: int = 0
    stop: bool = False
    served: set[int] = field(default_factory=set)


class SampleToInsertRatio:
    """How many updates this shard's rows allow, and which rounds are decided."""

    def __init__(
        self,
        *,
        updates_per_step: float,
        warmup: int,
        min_rows: int,
        lag_tolerance: int,
        n_learners: int,
        unlimited: bool = False,
    ) -> None:
        self.updates_per_step = updates_per_step
        self.warmup = warmup
        self.min_rows = min_rows
        self.lag_tolerance = lag_tolerance  # < 0: never throttle
        self.n_learners = n_learners
        #: No ratio to keep (a run that learns from a dataset: every row is in from the
        #: start): a round gets the updates it asks for once ``min_rows`` are stored.
        self.unlimited = unlimited
        self.inserted = 0
        self.granted = 0
        self.generation = 0
        self.rounds: dict[int, Round] = {}

    def allowed(self, size: int) -> int:
        if self.unlimited and size >= self.min_rows:
            return self.granted + UNLIMITED_ROUND
        if self.inserted < self.warmup or size < self.min_rows:
            return 0
        return int((self.inserted - self.warmup + 1) * self.updates_per_step)

    def grantable(self, size: int) -> int:
        return self.allowed(size) - self.granted

    def throttled(self, size: int, stopped: bool) -> bool:
        if self.lag_tolerance < 0 or stopped or self.unlimited:
            return False
        return self.grantable(size) > self.lag_tolerance

    def new_generation(self, generation: int) -> None:
        """A learner group (re)started: the old group's rounds are void."""
        if generation > self.generation:
            self.generation = generation
            self.rounds.clear()

    def decide(self, round_id: int, wanted: int, size: int, over: bool) -> Round:
        decided = self.rounds.get(round_id)
        if decided is None:
            n = 0 if over else max(min(wanted, self.grantable(size)), 0)
            decided = Round(updates=n, stop=over and n == 0)
            self.rounds[round_id] = decided
            self.granted += n
        return decided

    def served(self, round_id: int, decided: Round, rank: int) -> None:
        decided.served.add(rank)
        if len(decided.served) >= self.n_learners:
            self.rounds.pop(round_id, None)
