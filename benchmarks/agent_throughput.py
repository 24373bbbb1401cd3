"""Multi-agent collection against single-agent collection of the same step cost, same run.

``python benchmarks/throughput.py --multi-agent``: whole ``python main.py`` runs on a local
Ray (2 workers, DQN, few updates), alternately on :class:`envs.agent_toys.BusyWorld` (two
agents, one shared policy) and on its single-agent twin :class:`envs.agent_toys.BusyEnv`,
whose step burns the same CPU. Each run's env steps per second per worker is read from its
``progress.csv`` past a warm-up; the ratio multi / single is the multi-agent runtime's cost
(a multi-agent step also decides for two agents and sends twice the rows). The last line is
one JSON object: ``{"single_steps_per_s_per_worker": x, "multi_steps_per_s_per_worker": x,
"ratio": r}``.
"""

from __future__ import annotations

import csv
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 2
COMMON = (
    "general_cfg.algo_name=DQN",
    "general_cfg.mp_backend=ray",
    f"general_cfg.n_workers={WORKERS}",
    "general_cfg.n_envs_per_worker=4",
    "general_cfg.online_eval=false",
    "general_cfg.progress=false",
    "general_cfg.save_fig=false",
    "general_cfg.reward_threshold=null",
    "general_cfg.seed=1",
    "algo_cfg.updates_per_step=0.02",  # collection-bound: the learner barely works
)
SHARED = ("multi_agent.policies={shared: {}}", "multi_agent.policy_mapping={'*': shared}")
CASES = {
    "single": ("env_cfg.id=envs.agent_toys:BusyEnv", *COMMON),
    "multi": ("env_cfg.id=envs.agent_toys:BusyWorld", *COMMON, *SHARED),
}


def steps_per_s_per_worker(task: Path, warmup_s: float) -> float:
    """Env steps per second per worker over the run's progress rows past ``warmup_s``."""
    with (task / "results" / "progress.csv").open(newline="") as f:
        rows = [(float(r["wall_time_s"]), int(r["env_steps"])) for r in csv.DictReader(f)]
    start = rows[0][0] + warmup_s
    window = [(t, s) for t, s in rows if t >= start]
    (t0, s0), (t1, s1) = window[0], window[-1]
    return (s1 - s0) / (t1 - t0) / WORKERS


def run_case(name: str, env_steps: int, warmup_s: float) -> float:
    with tempfile.TemporaryDirectory() as tasks:
        command = [
            sys.executable,
            str(ROOT / "main.py"),
            *CASES[name],
            f"general_cfg.max_env_steps={env_steps}",
            f"general_cfg.tasks_dir={tasks}",
        ]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise SystemExit(f"{name} run failed ({done.returncode}):\n{done.stderr[-2000:]}")
        (task,) = [p for p in Path(tasks).iterdir() if p.is_dir()]
        return steps_per_s_per_worker(task, warmup_s)


def compare(rounds: int, env_steps: int = 60000, warmup_s: float = 5.0) -> dict[str, float]:
    """Alternating rounds of both cases; medians and their ratio."""
    rates: dict[str, list[float]] = {name: [] for name in CASES}
    for r in range(rounds):
        for name in CASES:
            rate = run_case(name, env_steps, warmup_s)
            rates[name].append(rate)
            print(f"round {r + 1} {name}: {rate:.0f} env steps/s per worker", flush=True)
    single = statistics.median(rates["single"])
    multi = statistics.median(rates["multi"])
    out = {
        "single_steps_per_s_per_worker": round(single, 1),
        "multi_steps_per_s_per_worker": round(multi, 1),
        "ratio": round(multi / single, 3),
    }
    print(
        f"two agents sharing a policy: {multi:.0f} env steps/s per worker against "
        f"{single:.0f} single-agent: {multi / single:.2f}x (medians of {rounds})",
        flush=True,
    )
    print(json.dumps(out), flush=True)
    return out
