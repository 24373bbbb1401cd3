"""Scaling with workers and learners: the real runtime, three cases, one run.

    python benchmarks/scaling.py                 # every case (about 10 minutes on 2 cores)
    python benchmarks/scaling.py --cases worker  # one case: worker, learner or compute
    python benchmarks/scaling.py --scale 0.5     # half the work per configuration

Each configuration is one ``python main.py`` run on a local Ray (DQN on CartPole-v1, seed
1) that stops after a fixed number of env steps. Its wall time is from the first data until
every role is done, ``wall_time_s - time_s.startup`` of its ``summary.json``: Ray's
start-up and teardown (which do not depend on the configuration) are not counted, while
the learners' drain after the env-step stop (the updates the ratio still grants, which
learner-bound runs leave behind) is. The verdict is the run's own (``bottleneck.verdict``).

- worker-bound: every env step sleeps ``--latency`` seconds (the ``step_latency``
  wrapper), the network is tiny and the update ratio low, so the env dominates; 1, 2, 4
  and 8 workers (each asking for 0.1 CPU, so 8 fit 2 cores: they mostly sleep).
- learner-bound: a fast env and ``benchmarks.slow_learner:SLOW_DQN``, whose updates cost
  ``--learn-cost`` seconds per batch row of each learner (two learners halve it, as real
  data-parallel learning does); 1 and 2 learners with 2 and 4 workers.
- real compute (reported, not targeted): no sleeps, a larger network and batch; 1 learner
  (one torch thread), 2 learners (one each) and 1 learner with two threads.

Speed-up is the 1-worker (1-learner) configuration's time over each one's; parallel
efficiency is speed-up / n. The load average of the machine is printed with every
configuration: the runs share the CPUs with whatever else runs. The last line printed
is one JSON object: ``{"worker_speedup": {"2": x, "4": x, "8": x}, "learner_speedup":
{"2": x}, "verdicts": {"worker_bound": "...", "learner_bound": "..."}, ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envs.latency import step_latency_overrides  # noqa: E402

SMALL_NET = "[{layer_type: linear, layer_dim: [32], activation: relu}]"
LARGE_NET = (
    "[{layer_type: linear, layer_dim: [1024], activation: relu}, "
    "{layer_type: linear, layer_dim: [1024], activation: relu}]"
)
COMMON = (
    "general_cfg.mp_backend=ray",
    "general_cfg.seed=1",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
    "general_cfg.online_eval=false",
    "general_cfg.model_save_fre=1000000",
)


@dataclass
class Config:
    case: str  # worker, learner or compute
    n_workers: int
    n_learners: int
    overrides: tuple[str, ...]
    note: str = ""  # shown after the label

    @property
    def label(self) -> str:
        workers = f"{self.n_workers} worker{'s' if self.n_workers > 1 else ''}"
        learners = f"{self.n_learners} learner{'s' if self.n_learners > 1 else ''}"
        return f"{workers}, {learners}{self.note}"


@dataclass
class Result:
    config: Config
    run_s: float  # first data to every role done
    stop_s: float  # first data to the env-step stop (summary.json time_s.run)
    env_steps: int
    updates: int
    verdict: str
    shares: dict[str, float]
    load: tuple[float, float]  # load average before and after


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", nargs="+", default=["worker", "learner", "compute"],
        choices=["worker", "learner", "compute"],
    )  # fmt: skip
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the work of each run")
    parser.add_argument("--latency", type=float, default=0.005, help="seconds per env step")
    parser.add_argument("--learn-cost", type=float, default=0.002, help="seconds per batch row")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--keep", help="write the task directories here (default: a temp dir)")
    return parser.parse_args(argv)


def worker_bound(args: argparse.Namespace) -> list[Config]:
    steps = int(24_000 * args.scale)
    case = (
        f"general_cfg.max_env_steps={steps}",
        "general_cfg.worker_num_cpus=0.1",
        *step_latency_overrides(args.latency),
        f"algo_cfg.value_layers={SMALL_NET}",
        "algo_cfg.batch_size=32",
        "algo_cfg.learn_start=500",
        "algo_cfg.updates_per_step=0.02",
    )
    return [Config("worker", n, 1, case) for n in args.workers]


def learner_bound(args: argparse.Namespace) -> list[Config]:
    steps = int(1_200 * args.scale)
    case = (
        "general_cfg.algo_name=benchmarks.slow_learner:SLOW_DQN",
        f"general_cfg.max_env_steps={steps}",
        "general_cfg.learner_num_cpus=0.5",
        f"algo_cfg.learn_cost_s_per_row={args.learn_cost}",
        f"algo_cfg.value_layers={SMALL_NET}",
        "algo_cfg.batch_size=64",
        "algo_cfg.learn_start=200",
        "algo_cfg.updates_per_step=0.25",
    )
    return [Config("learner", w, n, case) for n in (1, 2) for w in (2, 4)]


def real_compute(args: argparse.Namespace) -> list[Config]:
    steps = int(3_000 * args.scale)
    case = (
        f"general_cfg.max_env_steps={steps}",
        f"algo_cfg.value_layers={LARGE_NET}",
        "algo_cfg.batch_size=1024",
        "algo_cfg.learn_start=1100",
        "algo_cfg.updates_per_step=0.1",
    )
    one_thread = "general_cfg.learner_num_cpus=1"  # a learner's torch threads: its CPUs
    return [
        Config("compute", 2, 1, (*case, one_thread), " (1 thread)"),
        Config("compute", 2, 2, (*case, one_thread), " (1 thread each)"),
        Config("compute", 2, 1, (*case, "general_cfg.learner_num_cpus=2"), " (2 threads)"),
    ]


def run_one(config: Config, tasks: Path) -> Result:
    """One main.py run; its summary's run time, counts, shares and verdict."""
    load_before = os.getloadavg()[0]
    before = set(tasks.glob("*"))
    cmd = [
        sys.executable,
        str(ROOT / "main.py"),
        *COMMON,
        f"general_cfg.tasks_dir={tasks}",
        f"general_cfg.n_workers={config.n_workers}",
        f"general_cfg.n_learners={config.n_learners}",
        *config.overrides,
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(
            f"{config.label} ({config.case}) exited {done.returncode}:\n{done.stderr}"
        )
    (task,) = set(tasks.glob("*")) - before
    summary = json.loads((task / "results" / "summary.json").read_text())
    shares = {k: v for k, v in summary["bottleneck"].items() if isinstance(v, float)}
    # From the first data until every role is done (the learners drain what the ratio still
    # grants after the env-step stop): start-up and Ray's teardown are not counted.
    return Result(
        config,
        float(summary["wall_time_s"]) - float(summary["time_s"]["startup"]),
        float(summary["time_s"]["run"]),
        int(summary["env_steps"]),
        int(summary["updates"]),
        summary["bottleneck"]["verdict"],
        shares,
        (load_before, os.getloadavg()[0]),
    )


def show(result: Result, base: Result | None, n: int) -> str:
    speedup = base.run_s / result.run_s if base else 1.0
    s = result.shares
    return (
        f"  {result.config.label:<36} {result.run_s:6.1f} s (stop at {result.stop_s:5.1f} s) "
        f"{result.env_steps:6d} steps "
        f"{result.updates:5d} updates  speed-up {speedup:4.2f}x  efficiency {speedup / n:4.2f}  "
        f"{result.verdict:<13} [workers step {s['worker_stepping']:.2f} push-wait "
        f"{s['worker_push_wait']:.2f} weights-wait {s['worker_weights_wait']:.2f}; learners "
        f"learn {s['learner_learning']:.2f} data-wait {s['learner_data_wait']:.2f} sync "
        f"{s['learner_sync']:.2f} checkpoint {s['learner_checkpoint']:.2f}]  "
        f"load {result.load[0]:.1f}->{result.load[1]:.1f}"
    )


def run_case(title: str, configs: list[Config], tasks: Path, scale_by: str) -> list[Result]:
    print(title, flush=True)
    results: list[Result] = []
    for config in configs:
        results.append(run_one(config, tasks))
        n = getattr(results[-1].config, scale_by) / getattr(results[0].config, scale_by)
        print(show(results[-1], results[0], max(n, 1)), flush=True)
    return results


def majority(results: list[Result]) -> str:
    verdicts = [r.verdict for r in results]
    return max(set(verdicts), key=verdicts.count)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    print(
        f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the start; wall "
        "time = summary.json wall_time_s - time_s.startup (first data to every role done)",
        flush=True,
    )
    out: dict[str, Any] = {"worker_speedup": {}, "learner_speedup": {}, "verdicts": {}}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="joyrl_scaling_") as tmp:
        tasks = Path(args.keep or tmp)
        tasks.mkdir(parents=True, exist_ok=True)
        if "worker" in args.cases:
            title = (
                f"worker-bound: CartPole-v1 with {args.latency * 1000:g} ms per env step, "
                f"{worker_bound(args)[0].overrides[0].split('=')[1]} env steps per configuration"
            )
            results = run_case(title, worker_bound(args), tasks, "n_workers")
            base = results[0]
            for r in results[1:]:
                out["worker_speedup"][str(r.config.n_workers)] = round(base.run_s / r.run_s, 2)
            out["verdicts"]["worker_bound"] = majority(results)
        if "learner" in args.cases:
            title = (
                f"learner-bound: SLOW_DQN, {args.learn_cost * 1000:g} ms per batch row "
                "(batch 64, split over the learners), fast CartPole-v1"
            )
            results = run_case(title, learner_bound(args), tasks, "n_learners")
            by = {(r.config.n_learners, r.config.n_workers): r for r in results}
            out["learner_speedup"]["2"] = round(by[1, 4].run_s / by[2, 4].run_s, 2)
            out["learner_speedup_vs_1_learner_2_workers"] = round(
                by[1, 2].run_s / by[2, 4].run_s, 2
            )
            out["verdicts"]["learner_bound"] = majority(results)
        if "compute" in args.cases:
            title = (
                "real compute (reported, not targeted): DQN, 2 x 1024 hidden units, batch 1024, "
                "no sleeps; each learner runs as many torch threads as it asks CPUs"
            )
            results = run_case(title, real_compute(args), tasks, "n_learners")
            one, two, threads = (r.run_s for r in results)
            out["compute_speedup"] = {"2": round(one / two, 2)}
            out["compute_two_learners_vs_one_learner_two_threads"] = round(threads / two, 2)
            out["verdicts"]["compute"] = [r.verdict for r in results]
    print(
        f"done in {time.monotonic() - started:.0f} s; load average {os.getloadavg()[0]:.1f} "
        "at the end",
        flush=True,
    )
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    main()
