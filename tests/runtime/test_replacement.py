"""The learner group re-placed when its node is lost and the rest of the cluster is full:
workers come last, so one is shed to make room, counted; a node that joins later takes
the shed worker back, counted; and the run still learns.

Two ``ray start`` nodes on this machine (tests/support/clusters.py): the head (2 CPUs, one
``learner_slot``) and node 2 (1 CPU, one ``learner_slot``). The run is DQN on CartPole with
2 workers of 1 CPU each and a learner of 1 CPU that needs a ``learner_slot``. While it
starts, a detached actor of the test's holds the head's slot, so the learner goes to
node 2 and the two workers fill the head. Once the run has a checkpoint the placeholder
goes and node 2 is killed (SIGKILL, as a lost machine): the head is the learner's only
home, and its CPUs are the workers'. The head's health checks give up on a node after 12
misses 3 s apart (Ray's default is 5), so Ray declares node 2 dead no sooner than ~36 s
after the kill: the learner must be running again before that, the run having taken the
broken connection for the node's loss itself (``learner_lost_after_s``). Once the learner
runs again, a third node (1 CPU) joins. Every env step also sleeps 4 ms, so that the
run, on one worker, is still going when the third node is up.

That run (to CartPole's threshold) and the growth run below are the release tier's. Each
commit runs one lighter run on the same layout, learning little, stopped by the test
(Ctrl-C) once the moves are made: the learner on node 2, node 2 killed, the learner placed
again on the full head by shedding a worker, then a node of 2 CPUs joins and takes the
shed worker back and one worker more (``max_workers: 3``). Its health checks are as slow,
so that the run, not Ray, is the one to take node 2 as lost however loaded the machine is.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli_runs import (
    LIGHT_LEARNING,
    TINY_DQN,
    assert_accounting,
    config_path,
    step_latency,
    summary_of,
)
from tests.support.cluster_runs import in_log, read_text, wait_for
from tests.support.clusters import RayNode, cluster_root, new_token, token_env
from tests.support.procs import TrackedRun, free_port, task_dirs
from tests.support.watch import interrupt

# One after the other on one xdist worker: each starts a cluster of 2-3 raylets, and the
# two side by side loaded the parallel part enough to upset timing-sensitive tests. The
# group is the module's name, the one tests/conftest.py gives the tests of its module fixture.
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.xdist_group(__name__),
]
HEAD_IP, NODE2_IP, NODE3_IP = (
    "127.0.0.1",
    "127.0.0.2",
    "127.0.0.3",
)  # the head's roles may report the machine's ip
PLACEHOLDER = "hold_the_heads_learner_slot"
SLOW_HEALTH_CHECKS = {"health_check_period_ms": 3000, "health_check_failure_threshold": 12}


class SlotCluster:
    def __init__(self, system_config: dict[str, int] | None = None, node2_cpus: int = 1) -> None:
        self.system_config = system_config or {}
        self.node2_cpus = node2_cpus
        self.root = cluster_root("jrr")
        self.env = token_env(new_token(self.root))
        self.port = free_port()
        self.nodes: list[RayNode] = []  # each killed at the end

    def start(self) -> None:
        self.head = RayNode.started(
            "head",
            self.root,
            [
                "--head",
                f"--node-ip-address={HEAD_IP}",
                f"--port={self.port}",
                f"--ray-client-server-port={free_port()}",
                "--num-cpus=2",
                '--resources={"head": 1, "learner_slot": 1}',
                "--include-dashboard=false",
                f"--system-config={json.dumps(self.system_config)}",
            ],
            self.env,
        )
        self.nodes.append(self.head)
        self.node2 = RayNode.started(
            "node2",
            self.root,
            [
                f"--address={self.address}",
                f"--node-ip-address={NODE2_IP}",
                f"--num-cpus={self.node2_cpus}",
                '--resources={"node2": 1, "learner_slot": 1}',
            ],
            self.env,
        )
        self.nodes.append(self.node2)

    @property
    def address(self) -> str:
        return f"{HEAD_IP}:{self.port}"

    def add_node3(self, cpus: int = 1) -> RayNode:
        node3 = RayNode.started(
            "node3",
            self.root,
            [f"--address={self.address}", f"--node-ip-address={NODE3_IP}", f"--num-cpus={cpus}"],
            self.env,
        )
        self.nodes.append(node3)
        return node3

    def track(self) -> None:
        for node in self.nodes:
            node.track()

    def driver(self, code: str) -> str:
        """Run ``code`` as a short Ray driver attached to the cluster; its output."""
        script = f"import ray\nray.init(address={self.address!r}, namespace='test')\n{code}"
        done = subprocess.run(
            [sys.executable, "-c", script],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def hold_the_heads_learner_slot(self) -> None:
        self.driver(
            "@ray.remote(num_cpus=0, resources={'head': 0.5, 'learner_slot': 1})\n"
            "class Hold:\n"
            "    def ready(self):\n"
            "        return True\n"
            f"hold = Hold.options(name={PLACEHOLDER!r}, lifetime='detached').remote()\n"
            "ray.get(hold.ready.remote())\n"
        )

    def alive_in_rays_view(self, ip: str) -> bool:
        """Whether Ray still counts the node at ``ip`` alive."""
        code = f"print(any(n['Alive'] for n in ray.nodes() if n['NodeManagerAddress'] == {ip!r}))"
        return self.driver(code).strip().splitlines()[-1] == "True"

    def release_the_heads_learner_slot(self) -> None:
        self.driver(f"ray.kill(ray.get_actor({PLACEHOLDER!r}))\n")

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.kill()
            node.log.close()


@contextlib.contextmanager
def slot_cluster(
    system_config: dict[str, int] | None = None, node2_cpus: int = 1
) -> Iterator[SlotCluster]:
    nodes = SlotCluster(system_config, node2_cpus)
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()
        shutil.rmtree(nodes.root, ignore_errors=True)


def _learner_on_node2(task: Path) -> bool | None:
    log = read_text(task / "logs" / "log.txt")
    match = re.search(rf"cluster: .*; {re.escape(NODE2_IP)}: ([^;\n]*)", log)
    if match is None:
        return None
    assert "learner 0" in match.group(1) and "worker" not in match.group(1), match.group(0)
    return True


def _a_checkpoint(task: Path) -> bool | None:
    return True if any((task / "models").glob("[0-9]*.pt")) else None


def _dqn_run(cluster: SlotCluster, tasks: Path, extra: tuple[str, ...]) -> TrackedRun:
    """DQN on CartPole attached to ``cluster``: 2 workers and a learner of 1 CPU each."""
    return TrackedRun(
        (
            "--yaml",
            config_path("cartpole_dqn"),
            f"general_cfg.ray_address={cluster.address}",
            f"general_cfg.tasks_dir={tasks}",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            "general_cfg.seed=1",
            "general_cfg.n_workers=2",
            "general_cfg.worker_num_cpus=1",
            "general_cfg.learner_num_cpus=1",
            *extra,
        ),
        env=cluster.env,
        log_dir=tasks,
    )


BUDGET = 120_000  # env steps; the config solves CartPole in ~30k


@pytest.mark.release
def test_a_lost_learner_node_sheds_a_worker_a_new_node_takes_it_back_and_the_run_solves(
    tmp_path: Path,
) -> None:
    with slot_cluster(SLOW_HEALTH_CHECKS) as cluster:
        _learner_node_lost(cluster, tmp_path)


def _run_with_the_learner_on_node2(
    cluster: SlotCluster, tasks: Path, extra: tuple[str, ...]
) -> TrackedRun:
    """A ``_dqn_run`` whose learner needs a ``learner_slot``, started while the head's is
    held, so that it goes to node 2: once its cluster line says so (the slot still held)."""
    cluster.hold_the_heads_learner_slot()
    run = _dqn_run(cluster, tasks, ("general_cfg.learner_resources={learner_slot: 1}", *extra))
    try:
        wait_for(run, cluster, tasks, _learner_on_node2, "cluster line", 300)
    except BaseException:
        run.kill()
        raise
    return run


def _learner_node_lost(cluster: SlotCluster, tmp_path: Path) -> None:
    run = _run_with_the_learner_on_node2(
        cluster,
        tmp_path,
        (
            "general_cfg.first_checkpoint_s=5",
            f"general_cfg.max_env_steps={BUDGET}",
            "general_cfg.reward_threshold=475",
            *step_latency(0.004),
        ),
    )
    try:
        wait_for(run, cluster, tmp_path, _a_checkpoint, "checkpoint", 300)
        cluster.release_the_heads_learner_slot()
        killed_at = time.time()
        cluster.node2.kill()
        shed = "worker 1 shed to make room for the learner group"
        wait_for(run, cluster, tmp_path, in_log(shed), "shed worker", 240)
        restarted = "restarting the learner group from its last checkpoint"
        wait_for(run, cluster, tmp_path, in_log(restarted), "learner restart", 60)
        wait_for(run, cluster, tmp_path, in_log("learner 0 is running again"), "learner", 60)
        back_at = time.time()
        # Ray has not declared node 2 dead yet: the run did not wait for its verdict.
        assert cluster.alive_in_rays_view(NODE2_IP)
        cluster.add_node3()
        back = f"worker 1 is back, on {NODE3_IP}"
        wait_for(run, cluster, tmp_path, in_log(back), "shed worker's return", 120)
        code = run.wait(timeout=600)
        assert code == 0, run.stderr[-3000:]
    finally:
        run.kill()
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert summary["stop_reason"] == "reward_threshold", summary["eval_history"]
    assert summary["learner_restarts"] == 1
    assert summary["nodes_lost"] == 1
    nodes = summary["placement"]["nodes"]
    (head,) = [n for n in nodes if n["head"]]
    assert summary["placement"]["roles"]["learner 0"]["node_id"] == head["node_id"]
    (shed_worker,) = summary["workers_shed"]
    assert shed_worker["worker"] == 1 and shed_worker["node"] == head["ip"]
    assert shed_worker["at_s"] >= killed_at - summary["started_at"]
    (returned,) = summary["workers_returned"]
    assert returned["worker"] == 1 and returned["node"] == NODE3_IP
    assert returned["at_s"] > shed_worker["at_s"]
    assert summary["placement"]["roles"]["worker 1"]["ip"] == NODE3_IP
    assert summary["workers_dropped"] == [] and summary["worker_restarts"] == 0
    assert_accounting(summary)
    lost = summary["transitions_dropped"].get("lost_with_worker", 0)
    assert lost >= shed_worker["env_steps_lost"]
    log = (task / "logs" / "log.txt").read_text()
    assert f"learner 0 is running again on {head['ip']}" in log
    assert "learner 0 cut off and not reported dead within 3 s: taken as lost" in log
    print(
        f"node 2 killed at {killed_at - summary['started_at']:.1f} s; worker 1 shed at "
        f"{shed_worker['at_s']} s, the learner running again by {back_at - killed_at:.1f} s "
        f"after the kill; worker 1 back at {returned['at_s']} s"
    )


#: The growth run goes on until the test stops it (Ctrl-C) once the fleet is back to 2;
#: every env step also sleeps 10 ms, so that its workers take little of the machine.
GROWTH_STEPS = 10_000_000


def _fleet_back_to_2_after_4(task: Path) -> bool | None:
    """Whether progress.csv's worker count reached 4 and has come back down to 2."""
    lines = read_text(task / "results" / "progress.csv").splitlines()
    try:  # the last line may be half written
        workers = [int(row["workers"]) for row in csv.DictReader(lines[:-1])]
    except (KeyError, ValueError):
        return None
    if 4 in workers and workers[-1] == 2 and workers.index(4) < len(workers) - 1:
        return True
    return None


@pytest.mark.release
def test_max_workers_grows_onto_a_node_that_joins_and_sheds_its_workers_when_it_goes(
    tmp_path: Path,
) -> None:
    """2 workers fill the cluster with the learner (head: learner and a worker; node 2: a
    worker); ``max_workers: 4``. Node 3 (2 CPUs) joins: workers 2 and 3 start on it. Node 3
    is killed: they are counted as shed, and the run goes on with 2 until stopped (Ctrl-C)."""
    with slot_cluster() as cluster:
        run = _dqn_run(
            cluster,
            tmp_path,
            (
                "general_cfg.max_workers=4",
                "general_cfg.learner_resources={head: 0.5}",
                f"general_cfg.max_env_steps={GROWTH_STEPS}",
                "general_cfg.reward_threshold=null",
                *LIGHT_LEARNING,
                *step_latency(0.01),
            ),
        )
        try:
            wait_for(run, cluster, tmp_path, in_log("cluster: "), "cluster line", 300)
            node3 = cluster.add_node3(cpus=2)
            for worker in (2, 3):
                joined = f"worker {worker} joins the run, on {NODE3_IP}"
                wait_for(run, cluster, tmp_path, in_log(joined), f"worker {worker}", 120)
            node3.kill()
            for worker in (2, 3):
                gone = f"worker {worker} (past n_workers=2) is gone"
                wait_for(run, cluster, tmp_path, in_log(gone), f"worker {worker} shed", 180)
            wait_for(run, cluster, tmp_path, _fleet_back_to_2_after_4, "2 workers again", 60)
            run.sigint()
            code = run.wait(timeout=120)
            assert code == 130, run.stderr[-3000:]
        finally:
            run.kill()
    (task,) = task_dirs(tmp_path)
    summary = summary_of(task)
    assert summary["stop_reason"] == "interrupted"
    added = {a["worker"]: a["node"] for a in summary["workers_added"]}
    shed = {s["worker"]: s["node"] for s in summary["workers_shed"]}
    assert added == {2: NODE3_IP, 3: NODE3_IP} and shed == {2: NODE3_IP, 3: NODE3_IP}
    assert summary["workers_dropped"] == [] and summary["worker_restarts"] == 0
    assert_accounting(summary)
    lost = summary["transitions_dropped"].get("lost_with_worker", 0)
    assert lost >= sum(s["env_steps_lost"] for s in summary["workers_shed"])
    log = (task / "logs" / "log.txt").read_text()
    assert len(re.findall(r"worker \d+ starts: the cluster has room", log)) == len(added)
    assert len(re.findall(r"worker \d+ \(past n_workers=2\) is gone", log)) == len(shed)
    with (task / "results" / "progress.csv").open(newline="") as f:
        workers = [int(row["workers"]) for row in csv.DictReader(f)]
    assert workers[0] == 2 and max(workers) == 4 and workers[-1] == 2, workers


# ----- each commit's run: the same moves in one run, stopped once they are made -----


@pytest.fixture(scope="module")
def learner_node_lost_then_a_node_joins(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The task directory of one run that goes until the test stops it (Ctrl-C): the
    learner on node 2, node 2 killed, the learner running again (on the head), then node 3
    (2 CPUs) joins, and the shed worker and a third one start there. The cluster is gone
    by the time the tests read the run."""
    tasks = tmp_path_factory.mktemp("replaced")
    with slot_cluster(SLOW_HEALTH_CHECKS) as cluster:
        run = _run_with_the_learner_on_node2(
            cluster,
            tasks,
            (
                "general_cfg.max_workers=3",
                f"general_cfg.max_env_steps={GROWTH_STEPS}",
                "general_cfg.reward_threshold=null",
                *LIGHT_LEARNING,
                *TINY_DQN,
                *step_latency(0.01),
            ),
        )
        try:
            cluster.release_the_heads_learner_slot()
            cluster.node2.kill()
            again = in_log("learner 0 is running again")
            wait_for(run, cluster, tasks, again, "learner running again", 120)
            cluster.add_node3(cpus=2)
            for line in ("worker 1 is back, on", "worker 2 joins the run, on"):
                joined = f"{line} {NODE3_IP}"
                wait_for(run, cluster, tasks, in_log(joined), repr(joined), 120)
            assert interrupt(run, 120) == 130, run.stderr[-3000:]
        finally:
            run.kill()
    (task,) = task_dirs(tasks)
    return task


def test_a_learner_whose_node_is_lost_is_placed_again_on_the_full_head_by_shedding_a_worker(
    learner_node_lost_then_a_node_joins: Path,
) -> None:
    task = learner_node_lost_then_a_node_joins
    summary = summary_of(task)
    assert summary["stop_reason"] == "interrupted"
    assert summary["learner_restarts"] == 1
    (head,) = [n for n in summary["placement"]["nodes"] if n["head"]]
    assert summary["placement"]["roles"]["learner 0"]["node_id"] == head["node_id"]
    # The head's CPUs were its two workers': the higher-numbered one made room, counted.
    (shed,) = summary["workers_shed"]
    assert shed["worker"] == 1 and shed["node"] == head["ip"], shed
    assert summary["transitions_dropped"].get("lost_with_worker", 0) >= shed["env_steps_lost"]
    assert_accounting(summary)
    log = (task / "logs" / "log.txt").read_text()
    assert "learner 0 cut off and not reported dead within 3 s: taken as lost" in log
    assert "worker 1 shed to make room for the learner group" in log
    assert f"learner 0 is running again on {head['ip']}" in log


def test_a_node_that_joins_takes_the_shed_worker_back_and_a_worker_more_up_to_max_workers(
    learner_node_lost_then_a_node_joins: Path,
) -> None:
    task = learner_node_lost_then_a_node_joins
    summary = summary_of(task)
    (returned,) = summary["workers_returned"]
    assert returned["worker"] == 1 and returned["node"] == NODE3_IP, returned
    (added,) = summary["workers_added"]
    assert added["worker"] == 2 and added["node"] == NODE3_IP, added
    (shed,) = summary["workers_shed"]
    assert shed["at_s"] < returned["at_s"]
    assert summary["workers_dropped"] == [] and summary["worker_restarts"] == 0
    log = (task / "logs" / "log.txt").read_text()
    assert "worker 2 starts: the cluster has room for it (general_cfg.max_workers=3)" in log
