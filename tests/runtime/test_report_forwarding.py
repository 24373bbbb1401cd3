"""A replay shard forwards its workers' reports to the coordinator in batches, at most one
call per forward interval, and passes the coordinator's answer on in its acks; the counts
stay exact (a flush at the end), and a report that arrives after its worker was restarted
counts what that worker held back as lost. What the data plane stored before it heard of
the stop counts as env steps. Real coordinator, shard and rollout-queue objects, with the
shard's forwarding thread, in one process."""

from __future__ import annotations

import time

import numpy as np

from joyrl_ray.control.client import CoordinatorClient
from joyrl_ray.control.coordinator import Coordinator, StopRule
from joyrl_ray.data.clients import DataServerClient, RolloutQueueClient
from joyrl_ray.data.replay_shard import DataServer
from joyrl_ray.data.rollout_queue import RolloutQueue
from joyrl_ray.data_needs import ReplayNeeds
from joyrl_ray.flows.rollouts import RolloutSender
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.worker.sender import Payload
from joyrl_ray.wire.handles import LocalHandle
from joyrl_ray.wire.messages import Placement, ReportTotals, TakenReport, WorkerReport

ROWS = 32
INTERVAL_S = 0.2


class CountingCoordinator(Coordinator):
    """Counts the calls it takes from shards."""

    forwards = 0

    def take_reports(self, shard, reports, known_version, policy=DEFAULT_POLICY):
        if reports:
            self.forwards += 1
        return super().take_reports(shard, reports, known_version, policy)


def rows(n: int) -> dict[str, np.ndarray]:
    obs = np.zeros((n, 4), np.float32)
    return {
        "obs": obs,
        "next_obs": obs,
        "actions": np.zeros(n, np.int64),
        "rewards": np.ones(n, np.float32),
        "discounts": np.ones(n, np.float32),
    }


def planes(max_env_steps: int = -1) -> tuple[CountingCoordinator, DataServer]:
    needs = ReplayNeeds(batch_size=8, buffer_size=10_000, learn_start=8, updates_per_step=0.25)
    coordinator = CountingCoordinator(
        stop_rule=StopRule(max_env_steps=max_env_steps), n_workers=2, learning=True
    )
    shard = DataServer(
        needs=needs,
        learner_lag_tolerance=-1,
        coordinator=CoordinatorClient(LocalHandle(coordinator, "Coordinator")),
        forward_every_s=INTERVAL_S,
    )
    coordinator.desks[DEFAULT_POLICY].data_plane.append(
        DataServerClient(LocalHandle(shard, "DataServer"))
    )
    return coordinator, shard


def test_reports_are_forwarded_in_batches_and_counted_exactly_after_a_flush() -> None:
    coordinator, shard = planes()
    pushes = 40
    for i in range(pushes):
        shard.insert(i % 2, rows(ROWS), None, WorkerReport(i % 2, ROWS), 0)
        time.sleep(0.01)  # 40 pushes over ~0.4 s: a few forwards, not 40
    assert shard.flush_reports(10.0)
    stats = coordinator.stats()
    assert stats.transitions_collected == pushes * ROWS == shard.stats().transitions_stored
    assert stats.rows_sent == {0: pushes * ROWS}
    assert coordinator.counters.env_steps == pushes * ROWS
    assert 2 <= coordinator.forwards <= 6, coordinator.forwards


def test_the_stop_and_new_weights_reach_the_workers_through_the_shard_acks() -> None:
    coordinator, shard = planes(max_env_steps=10 * ROWS)
    coordinator.publish_weights({"w": np.ones(3)}, 1)
    first = shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0)
    assert first.weights is None and not first.stop  # the shard has not heard back yet
    assert shard.flush_reports(10.0)
    ack = shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0)
    assert ack.weights is not None and ack.weights.version == 1
    assert shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 1).weights is None
    deadline = time.monotonic() + 10
    while not ack.stop and time.monotonic() < deadline:  # past max_env_steps: the stop
        ack = shard.insert(1, rows(ROWS), None, WorkerReport(1, ROWS), 1)
        time.sleep(0.02)
    assert ack.stop and coordinator.stop_reason == "max_env_steps"
    assert shard.flush_reports(10.0)
    stats, stored = coordinator.stats(), shard.stats()
    dropped = sum(stats.transitions_dropped.values()) + sum(stored.transitions_dropped.values())
    assert stats.transitions_collected == stored.transitions_stored + dropped


def test_chunks_the_shard_stored_before_it_heard_of_the_stop_count_as_env_steps() -> None:
    """The first chunk's report stops the run; the second chunk was stored before the shard
    heard of the stop (on Ray it hears a moment after the coordinator), so it is learned
    from and its env steps count: the run's env steps equal the rows stored."""
    coordinator, shard = planes(max_env_steps=ROWS)
    coordinator.desks[DEFAULT_POLICY].data_plane.clear()  # the shard is not told of the stop yet
    shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0)
    shard.insert(1, rows(ROWS), None, WorkerReport(1, ROWS), 0)
    assert shard.flush_reports(10.0)
    assert coordinator.stop_reason == "max_env_steps"
    assert shard.stats().transitions_stored == 2 * ROWS == coordinator.counters.env_steps
    shard.request_stop("max_env_steps")
    shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0)  # dropped: not counted
    assert shard.flush_reports(10.0)
    assert shard.stats().transitions_dropped == {"after_stop": ROWS}
    assert coordinator.counters.env_steps == 2 * ROWS
    assert coordinator.stats().transitions_collected == 3 * ROWS


def test_a_rollout_the_queue_stored_before_it_heard_of_the_stop_counts_as_env_steps() -> None:
    """Worker 0's report stops the run; worker 1's rollout was already in the queue (on Ray
    the queue hears of the stop a moment after the coordinator), so the learner takes it
    and its env steps count."""
    coordinator = Coordinator(stop_rule=StopRule(max_env_steps=ROWS), n_workers=2, learning=True)
    client = CoordinatorClient(LocalHandle(coordinator, "Coordinator"))
    queue = RolloutQueue(n_workers=2, coordinator=client)  # not told of the stop yet
    sender = RolloutSender(
        client, RolloutQueueClient(LocalHandle(queue, "RolloutQueue")), rollout_len=ROWS // 2
    )
    rollout = {"rewards": np.ones((ROWS // 2, 2), np.float32)}  # [time, env]

    def send(worker: int) -> None:
        sender.send(worker, Payload(rollout, -1, 1), WorkerReport(worker, ROWS), 0).result(5)

    send(0)
    assert coordinator.stop_reason == "max_env_steps"
    send(1)
    assert coordinator.counters.env_steps == 2 * ROWS
    queue.request_stop("max_env_steps")
    send(0)  # dropped by the queue: not counted
    assert coordinator.counters.env_steps == 2 * ROWS
    assert coordinator.stats().transitions_collected == 3 * ROWS
    # Rank 0 makes the round of both rollouts after the stop: they were made before it.
    grant = queue.take_rollouts(0, 1, 1, timeout_s=0)
    assert grant.env_steps == 2 * ROWS and not grant.stop
    stats = queue.stats()
    assert stats.transitions_stored == 2 * ROWS and stats.transitions_dropped == {
        "after_stop": ROWS
    }


def test_a_report_that_arrives_after_its_worker_restarted_counts_what_it_held_as_lost() -> None:
    coordinator, shard = planes()
    where = Placement("worker 0", "node", "127.0.0.1", 1)
    assert coordinator.register_worker(0, where).incarnation == 0
    # 3 steps held back by the n-step fold: 35 steps, 32 rows; it waits in the shard...
    shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS + 3), 0)
    # ...while Ray restarts the worker, which registers again.
    assert coordinator.register_worker(0, where).incarnation == 1
    assert shard.flush_reports(10.0)
    stats = coordinator.stats()
    assert stats.transitions_dropped == {"lost_with_worker": 3}
    assert stats.transitions_collected == shard.stats().transitions_stored + 3


def test_reports_lost_with_a_shard_are_counted_from_the_totals_of_a_later_one() -> None:
    coordinator = Coordinator(stop_rule=StopRule(), n_workers=1, learning=True)
    totals = ReportTotals()
    reports = []
    # The n-step fold holds 3 steps back in the first chunk and lets 2 out in the third.
    for steps, rows, dropped in [(35, 32, {}), (32, 32, {}), (32, 34, {}), (0, 0, {"x": 1})]:
        totals = totals.add(steps, rows, dropped)
        report = WorkerReport(0, steps, dropped=dropped, totals=totals)
        reports.append(TakenReport(report, rows, stored=True))
    coordinator.take_reports(0, [reports[0]], 0)
    # The second report died with shard 0 before it was forwarded; the restarted shard
    # takes the third and the last.
    coordinator.take_reports(0, reports[2:], 0)
    stats = coordinator.stats()
    assert stats.transitions_collected == 35 + 32 + 32
    assert stats.rows_sent == {0: 32 + 32 + 34}
    assert stats.transitions_dropped == {"x": 1}
    # The restarted shard stores the third report's rows: the rest was lost with the shard
    # (the summary's lost_with_shard), and the accounting holds.
    lost_with_shard = stats.rows_sent[0] - 34
    assert stats.transitions_collected == 34 + lost_with_shard + 1


class GoneCoordinator:
    def take_reports(self, shard, reports, known_version):
        raise RuntimeError("the coordinator's process is gone")


def test_once_the_coordinator_stops_answering_the_shard_acks_say_stop() -> None:
    needs = ReplayNeeds(batch_size=8, buffer_size=1000, learn_start=8, updates_per_step=0.25)
    shard = DataServer(
        needs=needs,
        learner_lag_tolerance=-1,
        coordinator=CoordinatorClient(LocalHandle(GoneCoordinator(), "Coordinator")),
        forward_every_s=INTERVAL_S,
    )
    assert not shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0).stop
    shard.flush_reports(10.0)
    # Without the coordinator no stop would ever reach the workers: they stop here.
    assert shard.insert(0, rows(ROWS), None, WorkerReport(0, ROWS), 0).stop


def test_a_shed_worker_that_comes_back_is_no_restart_and_its_late_reports_count_as_lost() -> None:
    coordinator, shard = planes()
    where = Placement("worker 1", "node", "127.0.0.2", 1)
    assert coordinator.register_worker(1, where).incarnation == 0
    # 35 steps, 32 rows (3 held back by the n-step fold); the report waits in the shard...
    shard.insert(1, rows(ROWS), None, WorkerReport(1, ROWS + 3), 0)
    # ...while the worker is shed to make room, then brought back as a new process.
    assert coordinator.shed_worker(1) == (0, "127.0.0.2")
    coordinator.admit_worker(1)
    again = Placement("worker 1", "node3", "127.0.0.3", 2)
    assert coordinator.register_worker(1, again).incarnation == 1
    assert shard.flush_reports(10.0)
    shard.insert(1, rows(ROWS), None, WorkerReport(1, ROWS, incarnation=1), 0)
    assert shard.flush_reports(10.0)
    stats = coordinator.stats()
    assert coordinator.mail.worker_restarts[1] == 0  # shed and back is not a restart
    assert "worker 1 is back, on 127.0.0.3" in coordinator.mail.events
    assert stats.transitions_dropped == {"lost_with_worker": 3}
    assert stats.transitions_collected == shard.stats().transitions_stored + 3 == 2 * ROWS + 3
    assert coordinator.counters.env_steps == 2 * ROWS + 3
