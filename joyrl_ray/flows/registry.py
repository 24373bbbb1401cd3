"""Which flow an algorithm's :data:`~joyrl_ray.data_needs.DataNeeds` asks for.

The one place that maps a kind of needs to its flow. A new flow is a module beside this
one, its ``DataNeeds`` class in :mod:`joyrl_ray.data_needs`, and one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joyrl_ray.data_needs import (
    AsyncRolloutNeeds,
    DataNeeds,
    ReplayNeeds,
    RolloutNeeds,
    SequenceReplayNeeds,
)
from joyrl_ray.flows.async_rollouts import AsyncRolloutFlow
from joyrl_ray.flows.base import DataFlow
from joyrl_ray.flows.replay import ReplayFlow
from joyrl_ray.flows.report_only import ReportOnlyFlow
from joyrl_ray.flows.rollouts import RolloutFlow
from joyrl_ray.flows.sequence_replay import SequenceReplayFlow

FLOWS: dict[type, Callable[[Any], DataFlow]] = {
    ReplayNeeds: ReplayFlow,
    SequenceReplayNeeds: SequenceReplayFlow,
    RolloutNeeds: RolloutFlow,
    AsyncRolloutNeeds: AsyncRolloutFlow,
}


def flow_for(needs: DataNeeds | None) -> DataFlow:
    """The flow for ``needs``; None (test mode: nothing is stored) is the report-only flow."""
    if needs is None:
        return ReportOnlyFlow()
    try:
        make = FLOWS[type(needs)]
    except KeyError:
        raise TypeError(f"no data flow for {type(needs).__name__}") from None
    return make(needs)
