"""A node cut off without dying: its processes alive, every connection to it silent. Ray
takes such a node as dead only once its health checks give up on it; the run takes the
roles there as lost from its own view of them, sooner, and goes on.

Two ``ray start`` nodes on this machine (tests/support/clusters.py): the head (2 CPUs, one
``learner_slot``) and node 2 (2 CPUs, one ``learner_slot``). The run is DQN on CartPole
with a learner of 1 CPU that needs a ``learner_slot`` and 2 workers of half a CPU each,
spread over the nodes. While it starts, a detached actor of the test's holds the head's
slot, so the learner goes to node 2, and one worker goes there too. Then the slot is
freed and node 2 is frozen: every process of it SIGSTOPped, the raylet included. The
learner reports nothing and the worker pushes nothing: each is taken as lost once silent
for 15 s (``learner_silent_after_s``, ``worker_silent_after_s``), its node's raylet not
answering a call, and is placed again on the head. The head's health checks give up on a
node after 12 misses, each waiting up to 10 s for a frozen raylet, so that Ray still counts
node 2 alive when both roles run again. The run goes on learning, then is stopped (Ctrl-C).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.runtime.test_replacement import (
    NODE2_IP,
    SLOW_HEALTH_CHECKS,
    _dqn_run,
    slot_cluster,
)
from tests.support.cli_runs import (
    LIGHT_LEARNING,
    TINY_DQN,
    assert_accounting,
    step_latency,
    summary_of,
)
from tests.support.cluster_runs import env_steps_past, in_log, read_text, wait_for
from tests.support.procs import task_dirs
from tests.support.watch import interrupt

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(900)]

SILENT_S = 15  # both roles' silence deadline here (300 s by default)


def _roles_on_node2(task: Path) -> list[str] | None:
    """The roles the cluster line places on node 2, once it is written."""
    log = read_text(task / "logs" / "log.txt")
    match = re.search(rf"cluster: .*; {re.escape(NODE2_IP)}: ([^;\n]*)", log)
    return match.group(1).split(", ") if match else None


def _progress(task: Path) -> tuple[int, int]:
    """(env steps, updates) of progress.csv's last whole row."""
    rows = read_text(task / "results" / "progress.csv").splitlines()
    header, last = rows[0].split(","), rows[-2].split(",")
    return int(last[header.index("env_steps")]), int(last[header.index("updates")])


def test_a_learner_and_a_worker_on_a_frozen_node_are_placed_again_before_ray_declares_it_dead(
    tmp_path: Path,
) -> None:
    with slot_cluster(SLOW_HEALTH_CHECKS, node2_cpus=2) as cluster:
        cluster.hold_the_heads_learner_slot()
        run = _dqn_run(
            cluster,
            tmp_path,
            (
                "general_cfg.learner_resources={learner_slot: 1}",
                "general_cfg.worker_num_cpus=0.5",
                f"general_cfg.worker_silent_after_s={SILENT_S}",
                f"general_cfg.learner_silent_after_s={SILENT_S}",
                "general_cfg.max_env_steps=10000000",
                "general_cfg.reward_threshold=null",
                *LIGHT_LEARNING,
                *TINY_DQN,
                *step_latency(0.01),
            ),
        )
        try:
            on_node2 = wait_for(run, cluster, tmp_path, _roles_on_node2, "cluster line", 300)
            workers = [r for r in on_node2 if r.startswith("worker")]
            assert "learner 0" in on_node2 and len(workers) == 1, on_node2
            worker = workers[0]
            wait_for(run, cluster, tmp_path, env_steps_past(1000), "1000 env steps", 120)
            cluster.release_the_heads_learner_slot()
            cluster.node2.freeze()
            frozen_at = time.time()
            for line in ("learner 0 is running again on", f"{worker} was restarted on"):
                wait_for(run, cluster, tmp_path, in_log(line), repr(line), 180)
            back_s = time.time() - frozen_at
            # Ray has not declared node 2 dead: the run did not wait for its verdict.
            assert cluster.alive_in_rays_view(NODE2_IP)
            (task,) = task_dirs(tmp_path)
            steps, updates = _progress(task)
            wait_for(run, cluster, tmp_path, env_steps_past(steps + 1000), "more steps", 120)
            assert interrupt(run, 120) == 130, run.stderr[-3000:]
        finally:
            run.kill()
    summary = summary_of(task)
    assert summary["stop_reason"] == "interrupted"
    assert summary["learner_restarts"] == 1
    assert summary["updates"] > updates  # the learner learns again, on the head
    index = int(worker.split()[1])
    assert summary["workers_hung"] == [index] and summary["worker_restarts"] == 1
    (head,) = [n for n in summary["placement"]["nodes"] if n["head"]]
    roles = summary["placement"]["roles"]
    assert roles["learner 0"]["node_id"] == head["node_id"]
    assert roles[worker]["node_id"] == head["node_id"]
    assert summary["workers_dropped"] == []
    assert_accounting(summary)
    log = (task / "logs" / "log.txt").read_text()
    assert "learner 0 reported nothing for" in log
    assert "learner 0 cut off and not reported dead within 3 s: taken as lost" in log
    assert re.search(
        rf"{worker} pushed nothing for [\d.]+ s and waits on no call, and its node", log
    )
    print(f"node 2 frozen; both roles running again on the head {back_s:.1f} s later")
