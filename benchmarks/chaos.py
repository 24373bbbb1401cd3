"""A chaos soak: training runs on a three-node Ray cluster while roles are killed and a node
goes and comes back.

    python benchmarks/chaos.py                         # DQN and PPO, 10 minutes each
    python benchmarks/chaos.py --cases dqn --minutes 2 --kill-every 15
    python benchmarks/chaos.py --cases dqn --minutes 2 --step-latency-ms 4   # paced envs
    python benchmarks/chaos.py --cases dqn --minutes 2 --light-learning      # a light learner

The cluster is three raylets on this machine (``ray.cluster_utils.Cluster``): the head
(2 CPUs) and two more nodes (2 CPUs each), each with a temp dir of its own, as on separate
machines (nodes sharing one would share the job's working_dir copy, which a node that joins
unpacks again, deleting it under the other nodes' workers). Each case is ``python main.py``
attached to it (``general_cfg.ray_address``), with 3 workers and unlimited restart budgets,
run for ``--minutes`` with no reward threshold to stop it early, then stopped with Ctrl-C
(SIGINT). With ``--step-latency-ms`` every env step also sleeps that long (the
``step_latency`` wrapper): the run's pace is capped, so the soak takes less of a machine it
shares (its tests run beside others) while the kills and their recoveries are the same.
With ``--light-learning`` the learner does a fraction of its config's work (DQN: one
update per 10 env steps instead of 2; PPO: 2 epochs per rollout instead of 10) and nothing
is evaluated (``best_eval`` is null): the same roles, restarts and accounting, for a
fraction of the learner's CPU.

After a quiet stretch (``--quiet-s``, the run's pace before the chaos), a seeded schedule
SIGKILLs one role about every ``--kill-every`` seconds, drawn among the live processes of
the killable roles (workers, the learner, and for the replay flow a replay shard); a third
of the way through the chaos the non-head node with the most roles is removed (its raylet
and everything on it killed at once, as when a machine is lost), and two thirds of the way
through a fresh node is added. The coordinator is not killed: losing it stops a run by
design (docs/faults.md), and the evaluator is a thread of the driver's process.

An event counts as recovered once every role has as many live processes as before it
(and, for a kill, a new process of the killed role exists); the time to recover is from
the event to then, polled every half second. Past the set time the run goes on while an
event is still pending (90 s at most), so a kill just before the end is judged too.

Per case, one line of figures; the last line is one JSON object:
``{"<case>": {"kills": {role: n}, "nodes_removed": n, "nodes_added": n, "recovered": n,
"unrecovered": n, "recover_s": {"median": x, "max": x}, "exit_code": c, "stop_reason": s,
"hung": bool, "env_steps_per_s": {"before": x, "during": x, "ratio": x},
"accounting_holds": bool, "best_eval": x, "threshold": x, "reached_threshold": bool,
"worker_restarts": n, "learner_restarts": n, "workers_dropped": n, "drops": [line],
"task_dir": path}}``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envs.latency import step_latency_overrides  # noqa: E402

POLL_S = 0.5
END_WAIT_S = 180.0  # after the SIGINT, how long the run gets to exit before it counts as hung
START_WAIT_S = 300.0  # how long the first env step may take (actors start on a busy machine)
RECOVERY_GRACE_S = 90.0  # past the set time, how long a pending recovery is waited for


@dataclass(frozen=True)
class Case:
    """A training run of the soak: its config, the roles killed and the threshold it should
    still reach."""

    yaml: str
    threshold: float
    roles: tuple[str, ...]  # Ray actor class names whose processes may be killed
    overrides: tuple[str, ...] = ()
    light: tuple[str, ...] = ()  # --light-learning: a fraction of the learner's work


NO_EVAL = "general_cfg.online_eval=false"


CASES = {
    "dqn": Case(
        "configs/cartpole_dqn.yaml",
        475.0,
        ("Worker", "Learner", "DataServer"),
        # Two shards: a shard killed is restarted empty while the other keeps its data.
        ("general_cfg.n_replay_shards=2",),
        ("algo_cfg.updates_per_step=0.1", NO_EVAL),
    ),
    # The rollout queue is not restartable (losing it stops the run, by design): not killed.
    "ppo": Case(
        "configs/cartpole_ppo.yaml",
        475.0,
        ("Worker", "Learner"),
        light=("algo_cfg.n_epochs=2", NO_EVAL),
    ),
}

#: Every case: 3 workers of half a CPU and a learner of one fit on any two of the nodes, so
#: a removed node's roles have room elsewhere; budgets that never run out; no early stop.
COMMON = (
    "general_cfg.n_workers=3",
    "general_cfg.worker_num_cpus=0.5",
    "general_cfg.learner_num_cpus=1",
    "general_cfg.max_worker_restarts=-1",
    "general_cfg.max_learner_restarts=1000",
    "general_cfg.max_env_steps=100000000",
    "general_cfg.reward_threshold=null",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
    "general_cfg.stall_timeout_s=300",
    "general_cfg.first_checkpoint_s=20",
)


# ----- processes, from /proc -----
def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            text = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def role_pids(roles: tuple[str, ...]) -> dict[str, set[int]]:
    """The live processes of each role below this process (the cluster's raylets are its
    children, their workers theirs), by the title Ray gives an actor (``ray::Worker``,
    ``ray::Worker.run``)."""
    children = _children()
    found: dict[str, set[int]] = {role: set() for role in roles}
    stack = [os.getpid()]
    while stack:
        for pid in children.get(stack.pop(), []):
            stack.append(pid)
            title = _cmdline(pid).split(" ", 1)[0]
            for role in roles:
                if title == f"ray::{role}" or title.startswith(f"ray::{role}."):
                    found[role].add(pid)
    return found


# ----- the schedule -----
@dataclass
class Event:
    """A kill or a node change, and when the roles were whole again after it."""

    kind: str  # "kill <role>", "remove node", "add node"
    at: float  # seconds since the chaos began
    before: dict[str, int] = field(default_factory=dict)  # live processes per role before
    killed: tuple[str, int] | None = None  # (role, pid)
    recovered_after_s: float | None = None


def recovered(event: Event, live: dict[str, set[int]]) -> bool:
    if any(len(live[role]) < n for role, n in event.before.items()):
        return False
    if event.killed is not None:
        role, pid = event.killed
        return any(p != pid for p in live[role])
    return True


def schedule(seed: int, chaos_s: float, kill_every: float) -> list[tuple[float, str]]:
    """(seconds into the chaos, "kill" / "remove node" / "add node"), seeded."""
    rng = random.Random(seed)
    times: list[tuple[float, str]] = [(chaos_s / 3, "remove node"), (2 * chaos_s / 3, "add node")]
    t = kill_every * rng.uniform(0.5, 1.0)
    while t < chaos_s - kill_every / 2:
        times.append((t, "kill"))
        t += kill_every * rng.uniform(0.75, 1.25)
    return sorted(times)


# ----- the run's files -----
def _task_dir(tasks: Path) -> Path | None:
    dirs = sorted(p for p in tasks.iterdir() if p.is_dir()) if tasks.is_dir() else []
    return dirs[-1] if dirs else None


def _env_steps(tasks: Path) -> int:
    task = _task_dir(tasks)
    path = task / "results" / "progress.csv" if task else None
    if path is None or not path.is_file():
        return 0
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return int(rows[-1]["env_steps"]) if rows else 0


def _rate(rows: list[dict[str, str]], start: float, end: float) -> float | None:
    """Env steps per second between two of the run's wall times (progress.csv rows)."""
    inside = [r for r in rows if start <= float(r["wall_time_s"]) <= end]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    seconds = float(last["wall_time_s"]) - float(first["wall_time_s"])
    return (int(last["env_steps"]) - int(first["env_steps"])) / seconds if seconds > 0 else None


# ----- one case -----
class Soak:
    def __init__(self, cluster: Any, nodes: list[Any], rng: random.Random) -> None:
        self.cluster, self.nodes, self.rng = cluster, nodes, rng
        self.events: list[Event] = []

    def _live(self, roles: tuple[str, ...]) -> dict[str, set[int]]:
        return role_pids(roles)

    def kill(self, roles: tuple[str, ...], at: float) -> Event | None:
        live = self._live(roles)
        targets = [(role, pid) for role in roles for pid in sorted(live[role])]
        if not targets:
            return None
        role, pid = self.rng.choice(targets)
        event = Event(f"kill {role}", at, {r: len(p) for r, p in live.items()}, (role, pid))
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return event

    def remove_node(self, roles: tuple[str, ...], at: float) -> Event | None:
        """Remove the non-head node holding the most roles (its raylet killed at once)."""
        removable = [n for n in self.nodes if n is not self.cluster.head_node]
        if not removable:
            return None
        live = self._live(roles)
        node_pids = {id(n): _node_pids(n) for n in removable}
        victim = max(removable, key=lambda n: sum(len(p & node_pids[id(n)]) for p in live.values()))
        event = Event("remove node", at, {r: len(p) for r, p in live.items()})
        self.cluster.remove_node(victim, allow_graceful=False)
        self.nodes.remove(victim)
        return event

    def add_node(self, roles: tuple[str, ...], at: float) -> Event:
        live = self._live(roles)
        self.nodes.append(self.cluster.add_node(**node_args()))
        return Event("add node", at, {r: len(p) for r, p in live.items()})


def node_args() -> dict[str, Any]:
    """A node of 2 CPUs with its own temp dir (short: Ray's socket paths must fit)."""
    return {"num_cpus": 2, "temp_dir": tempfile.mkdtemp(prefix="chaos-node-", dir="/tmp")}


def _node_pids(node: Any) -> set[int]:
    """Every process below a node's raylet."""
    raylet = node.all_processes.get("raylet")
    if not raylet:
        return set()
    root = raylet[0].process.pid
    children, found, stack = _children(), set(), [root]
    while stack:
        for pid in children.get(stack.pop(), []):
            found.add(pid)
            stack.append(pid)
    return found


def run_case(name: str, args: argparse.Namespace, cluster: Any, nodes: list[Any]) -> dict:
    case = CASES[name]
    tasks = Path(tempfile.mkdtemp(prefix=f"chaos-{name}-"))
    cmd = [
        sys.executable,
        "main.py",
        "--yaml",
        case.yaml,
        f"general_cfg.ray_address={cluster.address}",
        f"general_cfg.tasks_dir={tasks}",
        f"general_cfg.seed={args.seed}",
        *COMMON,
        *case.overrides,
        *step_latency_overrides(args.step_latency_ms / 1000),
        *(case.light if args.light_learning else ()),
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    log = (tasks / "main.log").open("w")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    soak = Soak(cluster, nodes, random.Random(args.seed))
    started = time.monotonic()
    while _env_steps(tasks) == 0 and proc.poll() is None:
        if time.monotonic() - started > START_WAIT_S:
            break
        time.sleep(POLL_S)
    stepping_at = time.monotonic()
    chaos_at = stepping_at + args.quiet_s
    end_at = stepping_at + args.minutes * 60
    plan = schedule(args.seed, end_at - chaos_at, args.kill_every)
    pending: list[Event] = []
    # Past the set time, the run goes on while an event is still being recovered from, up
    # to RECOVERY_GRACE_S: a kill just before the end is judged on its recovery too.
    while proc.poll() is None and (
        time.monotonic() < end_at or (pending and time.monotonic() < end_at + RECOVERY_GRACE_S)
    ):
        now = time.monotonic()
        while plan and now >= chaos_at + plan[0][0]:
            at, what = plan.pop(0)
            if what == "kill":
                event = soak.kill(case.roles, at)
            elif what == "remove node":
                event = soak.remove_node(case.roles, at)
            else:
                event = soak.add_node(case.roles, at)
            if event is not None:
                soak.events.append(event)
                pending.append(event)
                print(f"  {name} +{at:5.1f}s {event.kind}", flush=True)
        live = role_pids(case.roles)
        for event in list(pending):
            if recovered(event, live):
                event.recovered_after_s = time.monotonic() - (chaos_at + event.at)
                pending.remove(event)
        time.sleep(POLL_S)
    exited_early = proc.poll() is not None
    hung = False
    if not exited_early:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(END_WAIT_S)
        except subprocess.TimeoutExpired:
            hung = True
            proc.kill()
            proc.wait()
    log.close()
    # The node removed stays removed until one is added: put the cluster back as it was.
    while len(nodes) < 3:
        nodes.append(cluster.add_node(**node_args()))
    return outcome(name, case, tasks, soak.events, proc.returncode, hung, stepping_at, chaos_at)


def _drop_lines(log: Path) -> list[str]:
    """The run's own lines on workers it gave up on (why a worker was dropped)."""
    if not log.is_file():
        return []
    lines = log.read_text(errors="replace").splitlines()
    return [line for line in lines if "the run goes on without it" in line][:5]


def outcome(
    name: str,
    case: Case,
    tasks: Path,
    events: list[Event],
    code: int,
    hung: bool,
    stepping_at: float,
    chaos_at: float,
) -> dict[str, Any]:
    task = _task_dir(tasks)
    summary_file = task / "results" / "summary.json" if task else None
    has_summary = summary_file is not None and summary_file.is_file()
    summary = json.loads(summary_file.read_text()) if has_summary else {}
    kills: dict[str, int] = {}
    for e in events:
        if e.killed is not None:
            kills[e.killed[0]] = kills.get(e.killed[0], 0) + 1
    times = [e.recovered_after_s for e in events if e.recovered_after_s is not None]
    rows: list[dict[str, str]] = []
    progress = task / "results" / "progress.csv" if task else None
    if progress is not None and progress.is_file():
        with progress.open(newline="") as f:
            rows = list(csv.DictReader(f))
    # progress.csv's wall_time_s counts from the run's start; map this process's clock onto
    # it through the first row with env steps (the moment the soak saw stepping begin).
    first_step = next((float(r["wall_time_s"]) for r in rows if int(r["env_steps"]) > 0), None)
    before = during = None
    if first_step is not None:
        quiet = chaos_at - stepping_at
        before = _rate(rows, first_step, first_step + quiet)
        during = _rate(rows, first_step + quiet, float("inf"))
    evals = [e["return_mean"] for e in summary.get("eval_history", [])]
    collected = summary.get("transitions_collected")
    holds = collected is not None and collected == summary["transitions_stored"] + sum(
        summary["transitions_dropped"].values()
    )
    return {
        "kills": kills,
        "nodes_removed": sum(e.kind == "remove node" for e in events),
        "nodes_added": sum(e.kind == "add node" for e in events),
        "recovered": len(times),
        "unrecovered": len(events) - len(times),
        "recover_s": {
            "median": round(statistics.median(times), 1) if times else None,
            "max": round(max(times), 1) if times else None,
        },
        "exit_code": code,
        "stop_reason": summary.get("stop_reason"),
        "error": summary.get("error"),
        "hung": hung,
        "env_steps": summary.get("env_steps"),
        "env_steps_per_s": {
            "before": round(before, 1) if before else None,
            "during": round(during, 1) if during else None,
            "ratio": round(during / before, 2) if before and during else None,
        },
        "accounting_holds": holds,
        "best_eval": max(evals) if evals else None,
        "threshold": case.threshold,
        "reached_threshold": bool(evals) and max(evals) >= case.threshold,
        "worker_restarts": summary.get("worker_restarts"),
        "learner_restarts": summary.get("learner_restarts"),
        "workers_dropped": len(summary.get("workers_dropped") or []),
        "drops": _drop_lines(tasks / "main.log"),
        "task_dir": str(task) if task else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["dqn", "ppo"])
    parser.add_argument("--minutes", type=float, default=10.0, help="per case, from its first step")
    parser.add_argument("--kill-every", type=float, default=20.0, help="seconds, about")
    parser.add_argument("--quiet-s", type=float, default=45.0, help="no chaos at first")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--step-latency-ms", type=float, default=0.0, help="each env step also sleeps this long"
    )
    parser.add_argument(
        "--light-learning",
        action="store_true",
        help="a fraction of the learner's work and no evaluations: the soak's CPU, not learning",
    )
    args = parser.parse_args()
    if args.minutes * 60 <= args.quiet_s + 2 * args.kill_every:
        parser.error("--minutes leaves no time for the chaos after --quiet-s")

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, connect=False, head_node_args=node_args())
    nodes = [cluster.head_node, cluster.add_node(**node_args()), cluster.add_node(**node_args())]
    cluster.wait_for_nodes()
    results: dict[str, Any] = {}
    try:
        for name in args.cases:
            print(f"{name}: {args.minutes:g} min, a kill every ~{args.kill_every:g} s", flush=True)
            result = run_case(name, args, cluster, nodes)
            results[name] = result
            print(
                f"{name}: kills {result['kills']}, node removed {result['nodes_removed']} / "
                f"added {result['nodes_added']}, recovered {result['recovered']} "
                f"(median {result['recover_s']['median']} s, max {result['recover_s']['max']} s), "
                f"unrecovered {result['unrecovered']}, exit {result['exit_code']} "
                f"({result['stop_reason']}), hung {result['hung']}, "
                f"env steps/s {result['env_steps_per_s']}, accounting "
                f"{'holds' if result['accounting_holds'] else 'BROKEN'}, best eval "
                f"{result['best_eval']} (threshold {result['threshold']:g})",
                flush=True,
            )
    finally:
        cluster.shutdown()
    print(json.dumps(results))
    ok = all(
        not r["hung"] and r["accounting_holds"] and r["unrecovered"] == 0 for r in results.values()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
