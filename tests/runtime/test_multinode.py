"""A real two-node Ray cluster on this machine: placement, no shared filesystem, ray job
submit, and a node lost in the middle of a run.

Two ``ray start --block`` processes, each in its own process group (session), with its own
temp dir (Ray 2.50 ignores a worker node's: there node 2 uses the head's) and working
directory: the head (127.0.0.1, 2 CPUs, custom resource ``head``, dashboard on for the job
API) and a second node (127.0.0.2, 1 CPU, custom resource ``node2``). Token authentication
is on where the installed Ray has it (2.52 and later), with every shell set up as Ray's docs
say (RAY_AUTH_MODE=token, the token in a file). The driver (main.py) runs from this machine
with ``ray_address=127.0.0.1:<port>``, so it attaches to the head node; the second node
shares nothing with it but the network. ``ray job submit`` comes after node 2 is gone. The
tests marked ``ray_compat`` also run on the oldest supported Ray (.ci/run); ``ray job
submit`` runs only there on each commit, on both Rays in the release tier.

Every process of both nodes is recorded while they run (Ray's workers start in sessions of
their own, outside the node's process group) and killed at the end; the last test checks
that nothing of either node is left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from packaging.version import Version

from joyrl_ray.backends.ray_cluster import LOCAL_START_TIMED_OUT
from joyrl_ray.backends.ray_version import installed_ray
from tests.support.cli_runs import LIGHT_LEARNING, TINY_DQN, config_path, step_latency
from tests.support.cluster_runs import env_steps_past, in_log, read_text, wait_for
from tests.support.clusters import JOB_ACTORS, RayNode, cluster_root, new_token, token_env
from tests.support.procs import ROOT, TrackedRun, descendants, free_port, ray_procs, task_dirs
from tests.support.runs import needs_extra
from tests.support.sweeps import read_csv

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NODE2_IP = "127.0.0.2"  # all of 127/8 is loopback: the second node gets an address of its own
TASK_FILES = ("*.pt", "events.out.tfevents*", "summary.json", "progress.csv")


class TwoNodes:
    def __init__(self) -> None:
        self.root = cluster_root("jrm")
        self.token = new_token(self.root)
        self.port, self.dashboard_port = free_port(), free_port()
        env = token_env(
            self.token,
            # As from an activated venv: a job's `python` is this interpreter, with this Ray.
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            # The dashboard (for `ray job submit`) starts ~9 module processes, each given
            # 30 s to come up: too few on a loaded 2-core machine.
            RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT="180",
        )
        self.cli_env = env
        self.head = RayNode(
            "head",
            self.root,
            [
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={self.port}",
                f"--ray-client-server-port={free_port()}",
                "--include-dashboard=true",  # `ray job submit` talks to the dashboard's HTTP
                "--dashboard-host=127.0.0.1",
                f"--dashboard-port={self.dashboard_port}",
                "--num-cpus=2",
                '--resources={"head": 1}',
            ],
            env,
        )
        self.nodes = [self.head]

    def start_node2(self) -> None:
        self.node2 = RayNode.started(
            "node2",
            self.root,
            [
                f"--address=127.0.0.1:{self.port}",
                f"--node-ip-address={NODE2_IP}",
                "--num-cpus=1",
                '--resources={"node2": 1}',
            ],
            self.cli_env,
        )
        self.nodes.append(self.node2)

    def node2_shares_the_heads_temp_dir(self) -> bool:
        """Whether node 2 ignored its --temp-dir and runs in the head's (Ray 2.50 does: a
        worker node takes the head's temp dir), sharing its runtime_env copies."""
        return not any(self.node2.temp_dir.glob("session_*"))

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def driver_env(self) -> dict[str, str]:
        """A user's shell on a machine that may attach: the same as the nodes'."""
        return dict(self.cli_env)

    def track(self) -> None:
        for node in self.nodes:
            node.track()

    def revive(self) -> None:
        """Start both nodes again if the head exited while no run of a test was on it.

        Under the load of a CI run, a Ray subprocess of the oldest supported Ray's head has
        been seen to exit between two tests, and ``ray start --block`` then takes the whole
        node down: the next tests would all fail on a cluster that is gone, testing nothing of
        this project. The cluster is started again, said in a warning with why it went."""
        if self.head.proc.poll() is None:
            return
        note = self.exit_notes()
        self.stop()
        fresh = _start_head()
        fresh.start_node2()
        vars(self).update(vars(fresh))
        gone = f"the test cluster's head node had exited; started again.\n{note}"
        warnings.warn(gone, stacklevel=3)

    def exit_notes(self) -> str:
        """Why a node of this cluster exited, for a failure message ("" while both run)."""
        return "\n".join(note for node in self.nodes if (note := node.exit_note()))

    def stop(self) -> dict:
        left: dict = {}
        for node in reversed(self.nodes):
            left.update(node.kill())
            node.log.close()
        return left


DASHBOARD_TRIES = 3


def _start_head() -> TwoNodes:
    """The head, started again when its dashboard did not come up in time (Ray 2.50 gives it
    about 20 s) or its raylet missed Ray's 30 s start-up deadline: a loaded 2-core machine
    can miss either (the machine, not the code at test)."""
    for attempt in range(1, DASHBOARD_TRIES + 1):
        nodes = TwoNodes()
        try:
            nodes.head.wait_started()
            return nodes
        except AssertionError:
            log = nodes.head.log_text()
            late = "Failed to start the dashboard" in log or LOCAL_START_TIMED_OUT in log
            nodes.stop()
            shutil.rmtree(nodes.root, ignore_errors=True)
            if not late or attempt == DASHBOARD_TRIES:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def cluster():
    nodes = _start_head()
    try:
        nodes.start_node2()
        yield nodes
    finally:
        nodes.stop()
        shutil.rmtree(nodes.root, ignore_errors=True)


def _args(cluster: TwoNodes, tasks: Path, *extra: str) -> list[str]:
    """A run's arguments on ``cluster`` (started again first if its head had exited)."""
    cluster.revive()
    return [
        f"general_cfg.ray_address={cluster.address}",
        "general_cfg.save_fig=false",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tasks}",
        *extra,
    ]


def _main(cluster: TwoNodes, *args: str, timeout: float = 400) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), *args],
        cwd=ROOT,
        env=cluster.driver_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        cluster.track()  # the run's actors, for the final check that none is left
        time.sleep(0.5)
    if proc.poll() is None:
        proc.kill()
    out, err = proc.communicate(timeout=30)
    if proc.returncode:
        err += cluster.exit_notes()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _summary(task: Path) -> dict:
    return json.loads((task / "results" / "summary.json").read_text())


def _node_ids(summary: dict) -> tuple[str, str]:
    """(head node id, second node id) from the summary's node list."""
    nodes = summary["placement"]["nodes"]
    (head,) = [n["node_id"] for n in nodes if n["head"]]
    (node2,) = [n["node_id"] for n in nodes if n["resources"].get("node2")]
    return head, node2


def _assert_on_the_drivers_node(summary: dict, node_id: str) -> None:
    """The control plane sits on the driver's node, the raylet the driver joined. Both nodes
    run on this machine: Ray 2.60 joins the head's raylet then, the oldest supported Ray
    either one (a real driver's machine has one raylet)."""
    head, node2 = _node_ids(summary)
    if Version(installed_ray() or "0") >= Version("2.60"):
        assert node_id == head
    else:
        assert node_id in (head, node2)


def _job_actors(cluster: TwoNodes) -> list[str]:
    return [
        c
        for n in cluster.nodes
        for c in descendants(n.proc.pid).values()
        if c.startswith(JOB_ACTORS)
    ]


# ----- placement checks that stop the run before anything starts -----


@pytest.mark.ray_compat
@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("general_cfg.learner_resources={nowhere: 1}", "no node has 'nowhere'"),
        ("general_cfg.learner_num_cpus=3", "the largest node"),
    ],
)
def test_a_request_no_node_can_hold_is_one_line_before_anything_starts(
    cluster, tmp_path, override, says
):
    proc = _main(cluster, *_args(cluster, tmp_path, override), timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: each learner asks for"), proc.stderr
    assert says in lines[0], lines[0]
    assert task_dirs(tmp_path) == []
    assert _job_actors(cluster) == []


# ----- the learner on the second node: models/ still on the driver -----


#: The pinned run's length and its resume's total: runs that show placement and the task
#: directory, not learning (a tiny network, a few hundred env steps; TINY_DQN).
PINNED_STEPS, RESUMED_STEPS = 400, 600


@pytest.fixture(scope="module")
def learner_on_node2(cluster, tmp_path_factory):
    """A short run with the learner pinned to the second node, one worker on the head: a
    checkpoint (and an online evaluation, for best.pt) every 50 updates."""
    tasks = tmp_path_factory.mktemp("tasks")
    proc = _main(
        cluster,
        *_args(
            cluster,
            tasks,
            "general_cfg.learner_resources={node2: 1}",
            "general_cfg.n_workers=1",
            f"general_cfg.max_env_steps={PINNED_STEPS}",
            "general_cfg.model_save_fre=50",
            "general_cfg.online_eval_episode=2",
            *TINY_DQN,
        ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (task,) = task_dirs(tasks)
    assert proc.stdout.strip().splitlines()[-1] == str(task)
    return task


@pytest.mark.ray_compat
def test_learner_pinned_to_the_second_node_still_writes_models_on_the_driver(
    cluster, learner_on_node2
):
    task = learner_on_node2
    summary = _summary(task)
    head, node2 = _node_ids(summary)
    roles = summary["placement"]["roles"]
    assert roles["learner 0"]["node_id"] == node2 and roles["learner 0"]["ip"] == NODE2_IP
    # The coordinator and the DataServer sit on the driver's node.
    assert roles["data server"]["node_id"] == roles["coordinator"]["node_id"]
    _assert_on_the_drivers_node(summary, roles["coordinator"]["node_id"])
    assert roles["worker 0"]["node_id"] == head  # the learner holds node 2's only CPU
    joined = f"2 nodes, 3 CPUs, 0 GPUs, joined {cluster.address}"
    assert summary["placement"]["cluster"] == joined
    assert summary["nodes_lost"] == 0
    # The same task directory as a local run, all of it written by the driver.
    assert (task / "models" / "last.pt").is_file() and (task / "models" / "best.pt").is_file()
    assert list((task / "logs").glob("events.out.tfevents*"))
    for name in ("episodes.csv", "evals.csv", "progress.csv"):
        assert (task / "results" / name).is_file(), name
    assert (task / "config.yaml").is_file()
    log = (task / "logs" / "log.txt").read_text()
    (line,) = [x for x in log.splitlines() if " cluster: " in x]
    assert f"cluster: {joined};" in line, line
    assert re.search(rf"{re.escape(NODE2_IP)}: [^;]*\blearner 0\b", line), line
    assert "data server" in line and "worker 0" in line


def test_test_mode_runs_from_that_task_directory(cluster, learner_on_node2, tmp_path):
    proc = _main(
        cluster,
        *_args(
            cluster,
            tmp_path,
            "general_cfg.mode=test",
            f"general_cfg.load_path={learner_on_node2}",
            "general_cfg.max_episode=2",
            TINY_DQN[0],  # the trained run's network
        ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (task,) = task_dirs(tmp_path)
    summary = _summary(task)
    assert summary["mode"] == "test" and summary["episodes"] == 2
    assert summary["loaded_checkpoint"] == str(learner_on_node2 / "models" / "best.pt")


@pytest.mark.release
def test_resume_from_that_task_directory_on_the_second_node(cluster, learner_on_node2, tmp_path):
    before = _summary(learner_on_node2)
    proc = _main(
        cluster,
        "--yaml",
        str(learner_on_node2 / "config.yaml"),
        *_args(
            cluster,
            tmp_path,
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={learner_on_node2}",
            f"general_cfg.max_env_steps={RESUMED_STEPS}",
        ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (task,) = task_dirs(tmp_path)
    summary = _summary(task)
    assert summary["resumed_from"] == str(learner_on_node2)
    assert summary["env_steps"] >= RESUMED_STEPS > before["env_steps"]
    assert summary["updates"] > before["updates"]
    _, node2 = _node_ids(summary)
    assert summary["placement"]["roles"]["learner 0"]["node_id"] == node2
    assert (task / "models" / "last.pt").is_file()


def _task_files(folder: Path, names: list[str]) -> list[Path]:
    found = [p for pattern in TASK_FILES for p in folder.rglob(pattern)]
    found += [p for p in folder.rglob("*") if any(name in p.name for name in names)]
    return found


def test_no_actor_wrote_task_files_on_either_node(cluster, learner_on_node2):
    """Only the driver writes the task directory: not the learner on node 2, whose working
    directory is the runtime_env copy in node 2's temp dir, and not the head's actors."""
    names = [learner_on_node2.name]
    for node in cluster.nodes:
        for folder in (node.cwd, node.temp_dir):
            assert _task_files(folder, names) == [], (node.name, folder)
    copies = list((cluster.node2.temp_dir).rglob("working_dir_files/*/main.py"))
    assert copies, "node 2 ran the project from its runtime_env copy"


# ----- a sweep attached to the cluster -----


@pytest.mark.release
def test_a_sweep_attached_to_the_cluster_runs_its_trials_on_both_nodes(cluster, tmp_path):
    """Three one-process trials at once, each a placement group of 1 CPU: the head holds
    two, so Tune places the third on node 2; each row names its node, and every trial's
    task directory is under the sweep's, as on one machine."""
    needs_extra("ray.tune", "requirements-tune.txt")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "space:\n  algo_cfg.lr: {grid: [0.001, 0.0005, 0.0003]}\nmax_concurrent_trials: 3\n"
    )
    proc = _main(
        cluster,
        "--yaml",
        config_path("cartpole_dqn"),
        "--sweep",
        str(sweep),
        *_args(
            cluster,
            tmp_path / "tasks",
            "general_cfg.mp_backend=single",
            "general_cfg.max_env_steps=400",
            "general_cfg.online_eval_episode=2",
            "general_cfg.model_save_fre=100",
            *TINY_DQN,
        ),
        timeout=500,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (sweep_dir,) = (tmp_path / "tasks").glob("Sweep_*")
    rows = read_csv(sweep_dir / "sweep_results.csv")
    assert [r["status"] for r in rows] == ["finished"] * 3, rows
    nodes = [r["node"] for r in rows]  # "<ip> <node id's start>"
    assert len(set(nodes)) == 2, nodes
    assert [n.split()[0] for n in nodes].count(NODE2_IP) == 1, nodes
    for row in rows:
        assert Path(row["task_dir"]).parent.parent == sweep_dir / "trials", row
        assert (Path(row["task_dir"]) / "results" / "summary.json").is_file(), row


# ----- losing the second node in the middle of a run (last: node 2 is gone after it) -----


def _worker_on_node2(task: Path) -> int | None:
    log = read_text(task / "logs" / "log.txt")
    match = re.search(rf"cluster: .*; {re.escape(NODE2_IP)}: ([^;]*)", log)
    if match is None:
        return None
    workers = re.findall(r"worker (\d+)", match.group(1))
    assert workers, f"no worker spread to node 2: {match.group(0)}"
    return int(workers[0])


#: The node-loss run's fixed length, and the env steps before node 2 is killed. It learns
#: lightly and every env step also sleeps 10 ms (the step_latency wrapper, an idle wait): a
#: worker takes at most ~100 steps a second, so the ~4.4k steps left after the kill last at
#: least ~22 s with both workers stepping, ~44 s with one, well past the node's death
#: (~15 s) and the worker's restart on the head, however fast the workers could go; and the
#: run spends little CPU on its steps and updates.
NODE_LOSS_STEPS, KILL_AFTER_STEPS = 5_000, 600


def test_losing_the_second_node_mid_run_restarts_its_worker_on_the_head_counted(cluster, tmp_path):
    """A fixed-length run that goes on to its end: the worker that was on node 2 restarted
    on the head, the lost node and what died with the worker counted (the fault's outcome
    and the accounting, not learning)."""
    run = TrackedRun(
        (
            "--yaml",
            str(ROOT / "configs" / "cartpole_dqn.yaml"),
            *_args(
                cluster,
                tmp_path,
                "general_cfg.n_workers=2",
                "general_cfg.worker_num_cpus=0.5",  # room on the head for a restarted worker
                "general_cfg.learner_resources={head: 1}",
                "general_cfg.seed=1",
                "general_cfg.reward_threshold=null",
                f"general_cfg.max_env_steps={NODE_LOSS_STEPS}",
                *LIGHT_LEARNING,
                *TINY_DQN,
                *step_latency(0.01),
            ),
        ),
        env=cluster.driver_env(),
        log_dir=tmp_path,
    )
    try:
        # Workers spread over the nodes by default: one of the two lands on node 2.
        lost = wait_for(run, cluster, tmp_path, _worker_on_node2, "cluster line", 240)
        past = env_steps_past(KILL_AFTER_STEPS)
        wait_for(run, cluster, tmp_path, past, f"{KILL_AFTER_STEPS} env steps", 240)
        assert cluster.node2.kill() == {}
        restart = f"worker {lost} was restarted on "
        wait_for(run, cluster, tmp_path, in_log(restart), "worker restart", 240)
        code = run.wait(timeout=600)
        assert code == 0, run.stderr[-3000:]
    finally:
        run.kill()
    (task,) = task_dirs(tmp_path)
    summary = _summary(task)
    assert summary["stop_reason"] == "max_env_steps"
    assert summary["env_steps"] >= NODE_LOSS_STEPS
    # The worker that was on node 2 was restarted on the head, and the summary counts it.
    head, node2 = _node_ids(summary)
    assert summary["worker_restarts_by_worker"].get(str(lost), 0) >= 1
    assert summary["worker_restarts"] >= 1 and summary["workers_dropped"] == []
    assert summary["placement"]["roles"][f"worker {lost}"]["node_id"] == head
    assert summary["nodes_lost"] == 1 and summary["placement"]["nodes_lost"] == [NODE2_IP]
    assert summary["learner_restarts"] == 0
    dropped = summary["transitions_dropped"]
    assert summary["transitions_collected"] == summary["transitions_stored"] + sum(dropped.values())
    log = (task / "logs" / "log.txt").read_text()
    restarted = re.findall(
        rf"worker {lost} was restarted on \S+ \(restart \d+\); (\d+) env steps", log
    )
    assert restarted, log
    # Steps the worker had counted but not yet delivered (n-step folding) died with it.
    assert sum(map(int, restarted)) == dropped.get("lost_with_worker", 0)
    assert f"nodes lost during the run: {NODE2_IP}" in log


# ----- ray job submit (node 2 gone: one node per machine, as in a real cluster) -----

JOB_STEPS = 300  # the job shows where its driver runs and writes, not learning


@pytest.mark.ray_compat
@pytest.mark.oldest_leg_per_commit
def test_ray_job_submit_runs_and_writes_the_task_directory_where_its_driver_runs(cluster):
    cluster.revive()
    if cluster.node2.proc.poll() is None and cluster.node2_shares_the_heads_temp_dir():
        # Ray 2.50 ignores a worker node's --temp-dir: node 2 unpacks the job's working_dir
        # into the head's copy, over the job's running driver (docs/cluster-versions.md).
        assert cluster.node2.stop() == {}
    address = f"http://127.0.0.1:{cluster.dashboard_port}"
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts", "job"]
    submit = subprocess.run(
        [
            *ray_cli,
            "submit",
            f"--address={address}",
            f"--working-dir={ROOT}",
            "--",
            "python",
            "main.py",
            "general_cfg.ray_address=auto",
            "general_cfg.n_workers=1",
            f"general_cfg.max_env_steps={JOB_STEPS}",
            "general_cfg.online_eval=false",
            "general_cfg.save_fig=false",
            "general_cfg.progress=false",
            *TINY_DQN,
        ],
        cwd=cluster.root,
        env=cluster.cli_env,  # RAY_AUTH_MODE=token and the token, as the README says
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert submit.returncode == 0, (
        submit.stdout[-3000:] + submit.stderr[-3000:] + cluster.exit_notes()
    )
    (job_id,) = set(re.findall(r"raysubmit_\w+", submit.stdout + submit.stderr))
    logs = subprocess.run(
        [*ray_cli, "logs", f"--address={address}", job_id],
        env=cluster.cli_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert logs.returncode == 0, logs.stderr
    # The task directory is the run's last line, inside the job's working_dir copy on the head.
    (path,) = re.findall(r"^(/\S+/tasks/Train_CartPole-v1_DQN_[\d-]+)$", logs.stdout, re.M)
    task = Path(path)
    assert task.is_relative_to(cluster.head.temp_dir) and "working_dir_files" in task.parts
    assert "this run is a Ray job" in logs.stdout  # the warning to set tasks_dir
    summary = _summary(task)
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= JOB_STEPS
    assert (task / "models" / "last.pt").is_file()
    # The head is the only node left: the driver and its control plane run there.
    (head,) = [n["node_id"] for n in summary["placement"]["nodes"] if n["head"]]
    assert summary["placement"]["roles"]["data server"]["node_id"] == head


@pytest.mark.ray_compat
def test_stopping_both_nodes_leaves_no_ray_process(cluster):
    cluster.track()
    assert any("gcs_server" in c for c in cluster.head.seen.values())
    assert any("raylet" in c for n in cluster.nodes for c in n.seen.values())
    left = cluster.stop()
    assert left == {}, left
    ours = [c for c in ray_procs().values() if str(cluster.root) in c]
    assert ours == [], ours
