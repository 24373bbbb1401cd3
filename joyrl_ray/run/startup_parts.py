"""Where a run's time went before its first env step and after its stop: summary.json's
``time_s.startup_parts`` and ``time_s.teardown_parts``.

The start-up parts are moments, in seconds since the process started (``started_at``), each
the latest of its kind: Ray up, the roles asked for, their processes started, their modules
imported (a worker's or learner's constructor began), every role up, the first weights
published, the first env step seen by the driver. The gap between two moments is what the
later one waited on. Roles in the driver's own process (the one-process backend, the
evaluator) have no process start of their own. The roles' moments come from their own
clocks: on a cluster of several nodes they are as close as the nodes' clocks are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from joyrl_ray.wire.messages import Placement


def _latest(moments: Iterable[float | None], since: float) -> float | None:
    known = [moment for moment in moments if moment is not None]
    return round(max(known) - since, 3) if known else None


def startup_parts(
    started_at: float,
    placements: Iterable[Placement],
    *,
    ray_ready_at: float | None,
    roles_requested_at: float | None,
    first_weights_at: float | None,
    first_env_step_s: float | None,
) -> dict[str, float | None]:
    """The start-up moments (epoch seconds in, seconds since ``started_at`` out), from each
    role's first placement (a role started again later is not the run's start)."""
    first = list(placements)
    own_processes = [place for place in first if place.pid != os.getpid()]
    return {
        "ray_ready": _latest([ray_ready_at], started_at),
        "roles_requested": _latest([roles_requested_at], started_at),
        "processes_started": _latest((p.process_started_at for p in own_processes), started_at),
        "roles_imported": _latest((p.loaded_at for p in first), started_at),
        "roles_ready": _latest((p.ready_at for p in first), started_at),
        "first_weights": _latest([first_weights_at], started_at),
        "first_env_step": round(first_env_step_s, 3) if first_env_step_s is not None else None,
    }


def teardown_parts(
    stopped_at: float | None, roles_ended_at: float | None, ray_stopped_at: float | None
) -> dict[str, float | None]:
    """Seconds from the stop (monotonic clock in) until every role ended, and until Ray was
    stopped or left (None on the one-process backend)."""

    def since_stop(moment: float | None) -> float | None:
        if stopped_at is None or moment is None:
            return None
        return round(moment - stopped_at, 3)

    return {"roles_ended": since_stop(roles_ended_at), "ray_stopped": since_stop(ray_stopped_at)}
