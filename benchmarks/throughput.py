"""Env steps per second: a bare loop against the runtime's workers (Ray backend).

    python benchmarks/throughput.py                      # DQN on CartPole-v1, workers 1 2 4
    python benchmarks/throughput.py --workers 1 2 --seconds 8 --rounds 3 --learn
    python benchmarks/throughput.py general_cfg.n_envs_per_worker=8   # any config override

(a) The baseline: one process stepping the same gymnasium SyncVectorEnv (as many env
copies per step as one worker steps) and running the same policy network's forward pass
(``policy.act``), with nothing else: no runtime, no transitions kept. It runs in a child
process at the scheduling niceness Ray gives its worker processes (15 by default), so that
on a shared, busy machine both compete alike for CPU (``--baseline-nice 0`` to opt out;
on an idle machine it makes no difference; ``--worker-nice 0`` runs Ray's workers, and
so the bare loop, at normal priority).

(b) The runtime: Worker and DataServer actors on a local Ray, as ``main.py`` runs them.
By default nothing learns (collection only: workers fold their steps into transitions and
push them to the DataServer's replay, which does not throttle them); ``--learn`` adds the
Learner, which paces the workers at ``algo_cfg.updates_per_step``. The rate is read from
the DataServer's env-step counter over a window that starts once every worker has pushed
(actor start-up is not measured).

Each round measures the bare loop, then the runtime with each worker count; with
``--rounds`` > 1 the figures are medians over rounds (the machine's load changes between
measurements, so do rounds alternate). Besides env steps/s, each line shows env steps per
CPU-second (of the bare loop's process; of the driver and every process of the local Ray
for the runtime), which does not depend on what else the machine runs.

The last line printed is one JSON object:
``{"baseline_steps_per_s": x, "runtime_steps_per_s": {"1": x, "2": x, "4": x}}``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import torch  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from algos import get_algorithm  # noqa: E402
from envs.registry import make_env_fn  # noqa: E402
from joyrl_ray.config import RunConfig, load_config  # noqa: E402
from joyrl_ray.data_server import ReplaySpec, StopRule  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--yaml", help="a run config (default: the python defaults, DQN CartPole)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seconds", type=float, default=6.0, help="measuring window per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the window")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (medians)")
    parser.add_argument("--learn", action="store_true", help="run the learner too")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray")
    parser.add_argument(
        "--baseline-nice",
        default="ray",
        help="niceness of the bare loop: 'ray' (that of Ray's workers) or a number",
    )
    parser.add_argument(
        "--worker-nice",
        type=int,
        default=None,
        help="niceness of Ray's worker processes (RAY_worker_niceness; Ray's default is 15)",
    )
    parser.add_argument("--bare-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*", help="section.key=value config overrides")
    return parser.parse_args(argv)


def load_cfg(args: argparse.Namespace) -> RunConfig:
    base = ["general_cfg.mp_backend=ray", "general_cfg.progress=false", "general_cfg.seed=1"]
    return RunConfig.from_omegaconf(load_config(args.yaml, base + list(args.overrides)))


# ----- CPU accounting from /proc -----
def _cpu_ticks(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                text = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(text[text.rindex(")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
    found, stack = [root], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def tree_cpu_s(root: int) -> dict[int, float]:
    """CPU seconds used so far by ``root`` and every process below it, per pid."""
    return {pid: _cpu_ticks(pid) / TICKS for pid in _tree(root)}


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def make_envs(cfg: RunConfig) -> SyncVectorEnv:
    general = cfg.general
    return SyncVectorEnv(
        [make_env_fn(cfg.env, max_episode_steps=general.max_step)] * general.n_envs_per_worker,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )


def make_policy(cfg: RunConfig, envs: SyncVectorEnv | None = None) -> object:
    probe = envs or make_envs(cfg)
    spec = get_algorithm(cfg.general.algo_name)
    policy = spec.policy_cls(
        cfg.algo, probe.single_observation_space, probe.single_action_space, torch.device("cpu")
    )
    if envs is None:
        probe.close()
    return policy


# ----- (a) the bare loop -----
def bare_loop(cfg: RunConfig, seconds: float, warmup: float) -> dict[str, float]:
    """Env stepping plus the policy's forward pass in this process: steps/s and steps/CPU-s."""
    torch.set_num_threads(1)  # as a worker does
    n_envs = cfg.general.n_envs_per_worker
    envs = make_envs(cfg)
    policy = make_policy(cfg, envs)
    policy.seed(1)
    obs, _ = envs.reset(seed=[1 + i for i in range(n_envs)])
    steps = 0
    start = time.perf_counter()
    measured = None
    while True:
        actions, _ = policy.act(obs, explore=True, env_steps=steps)
        obs, _, _, _, _ = envs.step(policy.env_action(actions))
        steps += n_envs
        now = time.perf_counter()
        if measured is None:
            if now - start >= warmup:
                measured = (now, time.process_time(), steps)
        elif now - measured[0] >= seconds:
            envs.close()
            cpu = time.process_time() - measured[1]
            return {
                "steps_per_s": (steps - measured[2]) / (now - measured[0]),
                "steps_per_cpu_s": (steps - measured[2]) / cpu,
            }


def bare_loop_in_child(args: argparse.Namespace, niceness: int) -> dict[str, float]:
    """:func:`bare_loop` in a fresh process at ``niceness``."""
    argv = [sys.executable, __file__, "--bare-only", f"--seconds={args.seconds}"]
    argv += [f"--warmup={args.warmup}", *(["--yaml", args.yaml] if args.yaml else [])]
    child = subprocess.run(
        [*argv, *args.overrides],
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.nice(niceness),
    )
    return json.loads(child.stdout.strip().splitlines()[-1])


# ----- (b) the runtime -----
def runtime_rate(cfg: RunConfig, n_workers: int, args: argparse.Namespace) -> dict[str, float]:
    """Env steps/s of ``n_workers`` Worker actors pushing to a DataServer actor."""
    import ray

    from joyrl_ray.runtimes import RayRuntime

    cfg.general.n_workers = n_workers
    cpus = ray.cluster_resources().get("CPU", 1.0)
    learner_cpus = cfg.general.learner_num_cpus if args.learn else 0.0
    worker_cpus = max(min(1.0, round((cpus - learner_cpus) / n_workers, 2)), 0.01)
    server_kwargs = {
        "stop_rule": StopRule(max_env_steps=-1),
        "replay": ReplaySpec.from_algo_cfg(cfg.algo),
        "n_workers": n_workers,
        # Collection only: no learner, so no learner to wait for.
        "learner_lag_tolerance": cfg.general.learner_lag_tolerance if args.learn else -1,
    }
    with tempfile.TemporaryDirectory(prefix="joyrl_bench_") as task_dir:
        learner_kwargs = None
        if args.learn:
            learner_kwargs = {"task_dir": task_dir, "started_at": time.time(), "threads": 1}
        runtime = RayRuntime(cfg, server_kwargs, learner_kwargs, worker_num_cpus=worker_cpus)
        server = runtime.data_server
        try:
            if not args.learn:  # as a learner does at its start: workers act with version 1
                weights = make_policy(cfg).get_weights()
                server.call("publish_weights", server.share(weights), 1).result()
            # Start-up (actor processes importing torch, building envs) is not measured:
            # wait until every worker has pushed at least twice.
            floor = 2 * n_workers * cfg.general.worker_chunk_steps * cfg.general.n_envs_per_worker
            if args.learn:
                floor += int(cfg.algo.learn_start)
            deadline = time.monotonic() + 180
            while server.call("counters").result()["env_steps"] < floor:
                if time.monotonic() > deadline:
                    raise RuntimeError("workers did not start within 180 s")
                runtime.advance(0.05)
            time.sleep(args.warmup)
            cpu0 = tree_cpu_s(os.getpid())
            c0, t0 = server.call("counters").result(), time.perf_counter()
            time.sleep(args.seconds)
            c1, t1 = server.call("counters").result(), time.perf_counter()
            cpu = cpu_between(cpu0, tree_cpu_s(os.getpid()))
            server.call("request_stop", "benchmark").result()
            while not runtime.advance(1.0):
                pass
        finally:
            runtime.shutdown()
    steps = c1["env_steps"] - c0["env_steps"]
    return {
        "steps_per_s": steps / (t1 - t0),
        "steps_per_cpu_s": steps / cpu if cpu > 0 else float("nan"),
        "updates_per_s": (c1["updates"] - c0["updates"]) / (t1 - t0),
    }


def ray_worker_niceness() -> int:
    import ray

    return ray.get(ray.remote(num_cpus=0)(lambda: os.nice(0)).remote())


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def main(argv: list[str] | None = None) -> dict[str, object]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cfg = load_cfg(args)
    if args.bare_only:
        print(json.dumps(bare_loop(cfg, args.seconds, args.warmup)), flush=True)
        return {}
    general = cfg.general
    print(
        f"{general.algo_name} on {cfg.env.id}: {general.n_envs_per_worker} env(s) per worker, "
        f"chunks of {general.worker_chunk_steps} steps, {os.cpu_count()} CPUs here, "
        f"{'learning' if args.learn else 'collection only'}; "
        f"window {args.seconds:g} s after {args.warmup:g} s warm-up; load average "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    import ray

    if args.worker_nice is not None:
        os.environ["RAY_worker_niceness"] = str(args.worker_nice)
    ray.init(
        num_cpus=args.num_cpus,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    bare: list[dict[str, float]] = []
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in args.workers}
    try:
        niceness = ray_worker_niceness() if args.baseline_nice == "ray" else int(args.baseline_nice)
        for r in range(args.rounds):
            bare.append(bare_loop_in_child(args, niceness))
            print(
                f"round {r + 1}: bare loop (nice {niceness}) {bare[-1]['steps_per_s']:8.0f} "
                f"steps/s, {bare[-1]['steps_per_cpu_s']:8.0f} steps/CPU-s",
                flush=True,
            )
            for n in args.workers:
                runs[n].append(runtime_rate(cfg, n, args))
                print(
                    f"round {r + 1}: runtime, {n} worker(s) {runs[n][-1]['steps_per_s']:8.0f} "
                    f"steps/s, {runs[n][-1]['steps_per_cpu_s']:8.0f} steps/CPU-s; "
                    f"load average {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    finally:
        ray.shutdown()
    baseline = _median(bare, "steps_per_s")
    baseline_cpu = _median(bare, "steps_per_cpu_s")
    first = args.workers[0]
    first_rate = _median(runs[first], "steps_per_s")
    what = "median over rounds" if args.rounds > 1 else "one round"
    print(f"bare loop: {baseline:8.0f} env steps/s, {baseline_cpu:8.0f} per CPU-s ({what})")
    rates: dict[str, float] = {}
    for n, rows in runs.items():
        rate, per_cpu = _median(rows, "steps_per_s"), _median(rows, "steps_per_cpu_s")
        rates[str(n)] = round(rate, 1)
        line = f"runtime, {n} worker(s): {rate:8.0f} env steps/s = {rate / baseline:.2f}x bare loop"
        if n != first:
            line += f", {rate / first_rate:.2f}x {first} worker(s)"
        line += f"; {per_cpu:8.0f} per CPU-s = {per_cpu / baseline_cpu:.2f}x bare loop"
        if args.learn:
            line += f"; {_median(rows, 'updates_per_s'):.0f} updates/s"
        print(line, flush=True)
    out = {"baseline_steps_per_s": round(baseline, 1), "runtime_steps_per_s": rates}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
