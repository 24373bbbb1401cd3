"""Env steps and updates per second: the runtime against baselines measured in the same run.

    python benchmarks/throughput.py           # collection: bare loop vs 1, 2, 4 workers
    python benchmarks/throughput.py --learn   # learning: single backend vs Ray 1, 2 workers
    python benchmarks/throughput.py --yaml configs/pong_dqn.yaml --envs 1   # Atari
    python benchmarks/throughput.py --multi-agent   # two agents vs one (agent_throughput.py)

Collection (the default): (a) the bare loop, one process stepping the same gymnasium
SyncVectorEnv and running the same policy forward pass (``policy.act``) with nothing else;
(b) Worker and DataServer actors on a local Ray, as ``main.py`` runs them, with no learner
(workers fold and push transitions into replay). Each is measured for every
``--envs`` count of envs per worker. The learner alone is measured too: ``policy.learn``
updates per second on batches of the config's shapes, in this process.

Learning (``--learn``, ``configs/cartpole_dqn.yaml`` by default): the whole run (workers,
DataServer, learner) with ``mp_backend: single`` in one process against the Ray backend
with 1 and 2 workers; env steps/s and updates/s over a window that starts once learning
has started.

Baselines run in a child process at the niceness Ray gives its workers (15 by default), so
that both sides compete alike for CPU on a shared machine. Each line shows ratios against
the baseline of the same run; with ``--rounds`` > 1 the figures are medians over rounds.
The last line printed is one JSON object: ``{"baseline_steps_per_s": x,
"runtime_steps_per_s": {"<envs>": {"1": x, ...}}, "learner_updates_per_s": x}``, or with
``--learn`` ``{"single_updates_per_s": x, "ray_updates_per_s": {"1": x, "2": x},
"single_steps_per_s": x, "ray_steps_per_s": {"1": x, "2": x}}``.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gymnasium.vector import AutoresetMode, SyncVectorEnv  # noqa: E402

from algos import get_algorithm  # noqa: E402
from envs.probe import probe_env  # noqa: E402
from envs.registry import make_env_fn  # noqa: E402
from joyrl_ray.backends.planes import PlaneSetup  # noqa: E402
from joyrl_ray.backends.runtime import RoleConfigs  # noqa: E402
from joyrl_ray.config import RunConfig, load_config  # noqa: E402
from joyrl_ray.control.coordinator import StopRule  # noqa: E402
from joyrl_ray.data_needs import ReplayNeeds  # noqa: E402
from joyrl_ray.roles.worker.worker import initial_net_seed  # noqa: E402

DEFAULT_LEARN_YAML = ROOT / "configs" / "cartpole_dqn.yaml"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--yaml", help="a run config (default: the python defaults, DQN CartPole)")
    parser.add_argument("--workers", type=int, nargs="+", default=None, help="worker counts")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8], help="envs per worker")
    parser.add_argument("--seconds", type=float, default=6.0, help="measuring window per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the window")
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds (medians)")
    parser.add_argument("--learn", action="store_true", help="single vs Ray, learning")
    parser.add_argument(
        "--multi-agent",
        action="store_true",
        help="two agents sharing a policy vs one agent, same step cost (agent_throughput.py)",
    )
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray")
    parser.add_argument(
        "--baseline-nice",
        default="ray",
        help="niceness of the baselines: 'ray' (that of Ray's workers) or a number",
    )
    parser.add_argument(
        "--learner-only",
        nargs="+",
        metavar="DEVICE",
        help="only the learner's updates/s, on each device (e.g. cpu cuda), side by side",
    )
    parser.add_argument("--child", choices=("bare", "single"), help=argparse.SUPPRESS)
    parser.add_argument("overrides", nargs="*", help="section.key=value config overrides")
    args = parser.parse_args(argv)
    if args.workers is None:
        args.workers = [1, 2] if args.learn else [1, 2, 4]
    if args.learn and args.yaml is None:
        args.yaml = str(DEFAULT_LEARN_YAML)
    return args


def load_cfg(args: argparse.Namespace, *extra: str) -> RunConfig:
    base = ["general_cfg.progress=false", "general_cfg.seed=1", "general_cfg.online_eval=false"]
    base += ["general_cfg.max_env_steps=-1", "general_cfg.reward_threshold=null"]
    return RunConfig.from_omegaconf(
        load_config(args.yaml, base + list(args.overrides) + list(extra))
    )


def make_envs(cfg: RunConfig) -> SyncVectorEnv:
    general = cfg.general
    return SyncVectorEnv(
        [make_env_fn(cfg.env, max_episode_steps=general.max_step)] * general.n_envs_per_worker,
        autoreset_mode=AutoresetMode.SAME_STEP,
    )


# ----- baselines -----
def bare_loop(cfg: RunConfig, seconds: float, warmup: float) -> dict[str, float]:
    """Env stepping plus the policy's forward pass in this process: steps/s and steps/CPU-s."""
    torch.set_num_threads(1)  # as a worker does
    n_envs = cfg.general.n_envs_per_worker
    envs = make_envs(cfg)
    spec = get_algorithm(cfg.general.algo_name)
    # Worker 0's initial net: an untrained net's episode lengths set how often envs reset,
    # which moves steps/s by 10-30%, so both sides must act with the same one.
    net_seed = initial_net_seed(cfg.general.seed, 0)
    if net_seed is not None:
        torch.manual_seed(net_seed)
    policy = spec.policy_cls(
        cfg.algo,
        envs.single_observation_space,
        envs.single_action_space,
        torch.device("cpu"),
    )
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


def single_backend(cfg: RunConfig, seconds: float, warmup: float) -> dict[str, float]:
    """The whole run in one process (``mp_backend: single``): env steps/s and updates/s."""
    from joyrl_ray.backends.local import LocalRuntime

    spaces = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    runtime = LocalRuntime(
        cfg.general,
        RoleConfigs.of(cfg),
        plane_setup(cfg, learn=True),
        learner_setup(spaces),
        spaces,
    )
    counters = lambda: runtime.coordinator_object.counters  # noqa: E731
    try:
        return measure(runtime.advance, counters, seconds, warmup, learn=True, cfg=cfg)
    finally:
        runtime.shutdown()


def in_child(args: argparse.Namespace, what: str, niceness: int, n_envs: int) -> dict[str, float]:
    """A baseline in a fresh process at ``niceness``."""
    argv = [sys.executable, __file__, f"--child={what}", f"--seconds={args.seconds}"]
    argv += [f"--warmup={args.warmup}", *(["--yaml", args.yaml] if args.yaml else [])]
    argv += [*args.overrides, f"general_cfg.n_envs_per_worker={n_envs}"]
    child = subprocess.run(
        argv, capture_output=True, text=True, check=True, preexec_fn=lambda: os.nice(niceness)
    )
    return json.loads(child.stdout.strip().splitlines()[-1])


def learner_alone(cfg: RunConfig, seconds: float) -> float:
    """``policy.learn`` updates per second on batches of the config's shapes (off-policy)."""
    spec = get_algorithm(cfg.general.algo_name)
    needs = spec.policy_cls.data_needs(cfg.algo)
    if not isinstance(needs, ReplayNeeds):
        return float("nan")
    from joyrl_ray.roles.learner.learner import pick_device

    torch.set_num_threads(max(1, int(cfg.general.learner_num_cpus)))  # as the learner does
    obs_space, action_space = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    policy = spec.algorithm_cls(cfg.algo, obs_space, action_space, pick_device(cfg.general.device))
    rows, rng = needs.batch_size, np.random.default_rng(0)
    obs = np.stack([obs_space.sample() for _ in range(rows)])
    batch = {
        "obs": obs,
        "next_obs": obs.copy(),
        "actions": np.stack([action_space.sample() for _ in range(rows)]),
        "rewards": rng.standard_normal(rows).astype(np.float32),
        "discounts": np.full(rows, 0.99, np.float32),
        "weights": np.ones(rows, np.float32),
    }
    policy.learn(batch)  # warm-up (allocations, cuda context)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        policy.learn(batch)
        done += 1
    if policy.device.type == "cuda":
        torch.cuda.synchronize()
    return done / (time.perf_counter() - start)


# ----- the runtime -----
def plane_setup(cfg: RunConfig, *, learn: bool) -> PlaneSetup:
    general = cfg.general
    return PlaneSetup(
        stop_rule=StopRule(),
        needs=get_algorithm(general.algo_name).policy_cls.data_needs(cfg.algo),
        n_workers=general.n_workers,
        n_learners=general.n_learners,
        n_shards=general.n_replay_shards,
        # Collection only: no learner to wait for.
        learner_lag_tolerance=general.learner_lag_tolerance if learn else -1,
    )


def learner_setup(spaces: Any) -> dict[str, Any]:
    """The one learner group of a single-agent run (keyed by its policy id)."""
    from joyrl_ray.backends.runtime import LearnerSetup
    from joyrl_ray.policies import DEFAULT_POLICY

    return {DEFAULT_POLICY: LearnerSetup(spaces, None, lambda: None)}


def measure(
    advance: Any, counters: Any, seconds: float, warmup: float, *, learn: bool, cfg: RunConfig
) -> dict[str, float]:
    """Rates over ``seconds`` once every worker pushed twice (and learning started)."""
    general = cfg.general
    floor = 2 * general.n_workers * general.worker_chunk_steps * general.n_envs_per_worker
    deadline = time.monotonic() + 300
    while counters().env_steps < floor or (learn and counters().updates == 0):
        if time.monotonic() > deadline:
            raise RuntimeError("the roles did not start within 300 s")
        advance(0.05)
    end = time.monotonic() + warmup
    while time.monotonic() < end:
        advance(0.05)
    c0, t0 = _next_report(advance, counters, counters().env_steps, time.monotonic() + 120)
    cpu0 = tree_cpu_s(os.getpid())
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        advance(0.05)
    c1, t1 = _next_report(advance, counters, counters().env_steps, time.monotonic() + 120)
    cpu = cpu_between(cpu0, tree_cpu_s(os.getpid()))
    return {
        "steps_per_s": (c1.env_steps - c0.env_steps) / (t1 - t0),
        "updates_per_s": (c1.updates - c0.updates) / (t1 - t0),
        "steps_per_cpu_s": (c1.env_steps - c0.env_steps) / cpu if cpu > 0 else float("nan"),
    }


def _next_report(advance: Any, counters: Any, seen: int, deadline: float) -> tuple[Any, float]:
    """The counters, and when they were read, once they move past ``seen`` env steps.

    Workers report whole chunks, so a window must open and close on a report: a short
    window on a loaded machine could otherwise fall between two reports and read 0."""
    while True:
        now = copy.copy(counters())
        if now.env_steps != seen:
            return now, time.perf_counter()
        if time.monotonic() > deadline:
            raise RuntimeError("the workers stopped reporting env steps")
        advance(0.05)


def ray_runtime(cfg: RunConfig, args: argparse.Namespace) -> dict[str, float]:
    from joyrl_ray.backends.placement import alive_nodes, make_requests
    from joyrl_ray.backends.ray_runtime import RayRuntime

    spaces = probe_env(cfg.env, max_episode_steps=cfg.general.max_step)
    requests = make_requests(cfg.general, alive_nodes(), train=args.learn)
    setup = learner_setup(spaces) if args.learn else {}
    runtime = RayRuntime(
        cfg.general,
        RoleConfigs.of(cfg),
        plane_setup(cfg, learn=args.learn),
        setup,
        spaces,
        requests,
    )
    latest = {"counters": None}

    def counters() -> Any:
        reports = runtime.coordinator.drain_reports().result(60)
        latest["counters"] = reports.counters
        return reports.counters

    def advance(timeout_s: float) -> None:
        time.sleep(0.5)  # the roles run by themselves; poll as seldom as the driver does

    try:
        return measure(advance, counters, args.seconds, args.warmup, learn=args.learn, cfg=cfg)
    finally:
        stop_roles(runtime)
        runtime.shutdown()


def stop_roles(runtime: Any, timeout_s: float = 30.0) -> None:
    """Let the roles end their loops as at the end of a run, so that the kills of the
    shutdown find no task running (Ray would print a line for each one it cut off)."""
    runtime.coordinator.request_stop("benchmark_done").result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while not runtime.finished and time.monotonic() < deadline:
        runtime.advance(1.0)


# ----- CPU accounting from /proc -----
TICKS = os.sysconf("SC_CLK_TCK")


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


# ----- the runs -----
def ray_worker_niceness() -> int:
    import ray

    return ray.get(ray.remote(num_cpus=0)(lambda: os.nice(0)).remote())


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def collection(args: argparse.Namespace, niceness: int) -> dict[str, Any]:
    bare: dict[int, list[dict[str, float]]] = {e: [] for e in args.envs}
    runs: dict[int, dict[int, list[dict[str, float]]]] = {
        e: {n: [] for n in args.workers} for e in args.envs
    }
    for r in range(args.rounds):
        for e in args.envs:
            bare[e].append(in_child(args, "bare", niceness, e))
            print(
                f"round {r + 1}, {e} env(s)/worker: bare loop {bare[e][-1]['steps_per_s']:8.0f}"
                f" steps/s (nice {niceness})",
                flush=True,
            )
            for n in args.workers:
                cfg = load_cfg(
                    args, f"general_cfg.n_workers={n}", f"general_cfg.n_envs_per_worker={e}"
                )
                runs[e][n].append(ray_runtime(cfg, args))
                print(
                    f"round {r + 1}, {e} env(s)/worker: {n} worker(s) "
                    f"{runs[e][n][-1]['steps_per_s']:8.0f} steps/s; load average "
                    f"{os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    what = "median over rounds" if args.rounds > 1 else "one round"
    out: dict[str, Any] = {"runtime_steps_per_s": {}}
    for e in args.envs:
        baseline = _median(bare[e], "steps_per_s")
        out.setdefault("baseline_steps_per_s", {})[str(e)] = round(baseline, 1)
        print(f"{e} env(s) per worker: bare loop {baseline:8.0f} env steps/s ({what})")
        first = _median(runs[e][args.workers[0]], "steps_per_s")
        rates: dict[str, float] = {}
        for n, rows in runs[e].items():
            rate = _median(rows, "steps_per_s")
            rates[str(n)] = round(rate, 1)
            line = f"  {n} worker(s): {rate:8.0f} env steps/s = {rate / baseline:.2f}x bare loop"
            if n != args.workers[0]:
                line += f", {rate / first:.2f}x {args.workers[0]} worker(s)"
            print(line, flush=True)
        out["runtime_steps_per_s"][str(e)] = rates
    updates = learner_alone(load_cfg(args), args.seconds)
    print(f"learner alone ({load_cfg(args).general.device}): {updates:.1f} updates/s", flush=True)
    out["learner_updates_per_s"] = round(updates, 1)
    return out


def learning(args: argparse.Namespace, niceness: int) -> dict[str, Any]:
    single: list[dict[str, float]] = []
    runs: dict[int, list[dict[str, float]]] = {n: [] for n in args.workers}
    for r in range(args.rounds):
        single.append(in_child(args, "single", niceness, load_cfg(args).general.n_envs_per_worker))
        print(
            f"round {r + 1}: single backend {single[-1]['steps_per_s']:7.0f} env steps/s, "
            f"{single[-1]['updates_per_s']:6.0f} updates/s (nice {niceness})",
            flush=True,
        )
        for n in args.workers:
            runs[n].append(ray_runtime(load_cfg(args, f"general_cfg.n_workers={n}"), args))
            print(
                f"round {r + 1}: ray, {n} worker(s) {runs[n][-1]['steps_per_s']:7.0f} env steps/s,"
                f" {runs[n][-1]['updates_per_s']:6.0f} updates/s; load average "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    s_steps, s_updates = _median(single, "steps_per_s"), _median(single, "updates_per_s")
    print(f"single backend: {s_steps:7.0f} env steps/s, {s_updates:6.0f} updates/s")
    out: dict[str, Any] = {
        "single_updates_per_s": round(s_updates, 1),
        "ray_updates_per_s": {},
        "single_steps_per_s": round(s_steps, 1),
        "ray_steps_per_s": {},
    }
    for n, rows in runs.items():
        steps, updates = _median(rows, "steps_per_s"), _median(rows, "updates_per_s")
        out["ray_steps_per_s"][str(n)] = round(steps, 1)
        out["ray_updates_per_s"][str(n)] = round(updates, 1)
        print(
            f"ray, {n} worker(s): {steps:7.0f} env steps/s = {steps / s_steps:.2f}x single, "
            f"{updates:6.0f} updates/s = {updates / s_updates:.2f}x single",
            flush=True,
        )
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.child == "bare":
        print(json.dumps(bare_loop(load_cfg(args), args.seconds, args.warmup)), flush=True)
        return {}
    if args.child == "single":
        cfg = load_cfg(args, "general_cfg.mp_backend=single")
        print(json.dumps(single_backend(cfg, args.seconds, args.warmup)), flush=True)
        return {}
    if args.multi_agent:
        from benchmarks.agent_throughput import compare

        return compare(args.rounds)
    if args.learner_only:
        out = {}
        for device in args.learner_only:
            rate = learner_alone(load_cfg(args, f"general_cfg.device={device}"), args.seconds)
            out[device] = round(rate, 1)
            print(f"learner alone on {device}: {rate:.1f} updates/s", flush=True)
        print(json.dumps({"learner_updates_per_s": out}), flush=True)
        return out
    cfg = load_cfg(args)
    print(
        f"{cfg.general.algo_name} on {cfg.env.id}: {os.cpu_count()} CPUs here, "
        f"{'learning' if args.learn else 'collection only'}, chunks of "
        f"{cfg.general.worker_chunk_steps} steps; window {args.seconds:g} s after "
        f"{args.warmup:g} s warm-up; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    import ray

    ray.init(
        address="local",
        num_cpus=args.num_cpus,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
    )
    try:
        niceness = ray_worker_niceness() if args.baseline_nice == "ray" else int(args.baseline_nice)
        out = learning(args, niceness) if args.learn else collection(args, niceness)
    finally:
        ray.shutdown()
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
