"""A straggler worker: how much of its throughput a run keeps when one worker is 5x slower.

Four workers step a latency-wrapped CartPole-v1 (``env_cfg.wrappers: [step_latency]``,
``--latency-s`` per step, so the envs' time dominates as in a slow simulator). In the
straggler runs worker 3's envs take ``--slowdown`` times as long per step
(``env_cfg.step_latency_worker_s``). PPO (synchronous rollouts: every iteration waits for
one rollout from each worker) and APPO (asynchronous rollouts: the learner takes what is
queued) each run a fixed env-step budget with and without the straggler, on Ray, in this
one invocation; the figure is env steps per second of the run (from the first data to the
stop, ``summary.json``'s ``time_s.run``), and the ratio straggler / even per algorithm.
Both use the same network, rollout length and epochs (2: the learner stays cheap, so the
envs set the pace); online evaluation is off.

    python benchmarks/straggler.py                # 4 runs of 16,384 env steps
    python benchmarks/straggler.py --env-steps 8192 --slowdown 5

The last line is one JSON object: ``{"ppo_ratio": x, "appo_ratio": y,
"ppo_steps_per_s": {"even": a, "straggler": b}, "appo_steps_per_s": {"even": c,
"straggler": d}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
N_WORKERS = 4
CONFIGS = {"ppo": "cartpole_ppo", "appo": "cartpole_appo"}


def run_once(algo: str, straggler: bool, args: argparse.Namespace, tasks: Path) -> dict:
    """One run of ``args.env_steps`` env steps; its summary.json."""
    latencies = [args.latency_s] * N_WORKERS
    if straggler:
        latencies[-1] = args.latency_s * args.slowdown
    overrides = [
        "general_cfg.mp_backend=ray",
        f"general_cfg.n_workers={N_WORKERS}",
        "general_cfg.n_envs_per_worker=1",
        f"general_cfg.max_env_steps={args.env_steps}",
        "general_cfg.seed=1",
        "general_cfg.online_eval=false",
        "general_cfg.reward_threshold=null",
        "general_cfg.model_save_fre=100000",
        "general_cfg.save_fig=false",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tasks}",
        "algo_cfg.rollout_len=128",
        "algo_cfg.n_epochs=2",
        "env_cfg.wrappers=[step_latency]",
        f"env_cfg.step_latency_s={args.latency_s}",
        f"env_cfg.step_latency_worker_s=[{','.join(str(x) for x in latencies)}]",
    ]
    if algo == "appo":
        # One update per 4 rollouts (as PPO's iteration); room for the fast workers to go
        # on while the straggler collects; its rollouts come several versions late.
        overrides += [
            f"algo_cfg.batch_rollouts={N_WORKERS}",
            f"algo_cfg.rollout_queue_capacity={2 * N_WORKERS}",
            "algo_cfg.max_policy_lag=16",
        ]
    cmd = [sys.executable, "main.py", "--yaml", str(ROOT / "configs" / f"{CONFIGS[algo]}.yaml")]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    for _ in range(3):  # a loaded machine may fail to start Ray in time: try again
        done = subprocess.run(
            cmd + overrides, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
        )
        if "starting a local Ray failed" not in done.stderr:
            break
        shutil.rmtree(tasks, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"{algo} run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    (task,) = tasks.iterdir()
    return json.loads((task / "results" / "summary.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env-steps", type=int, default=16_384)
    parser.add_argument("--latency-s", type=float, default=0.002)
    parser.add_argument("--slowdown", type=float, default=5.0)
    args = parser.parse_args()
    rates: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="straggler_") as tmp:
        for algo in CONFIGS:
            rates[algo] = {}
            for case in ("even", "straggler"):
                summary = run_once(algo, case == "straggler", args, Path(tmp) / f"{algo}_{case}")
                run_s = summary["time_s"]["run"]
                rate = summary["env_steps"] / run_s
                rates[algo][case] = round(rate, 1)
                print(
                    f"{algo:4s} {case:9s}: {summary['env_steps']} env steps in {run_s:.1f} s = "
                    f"{rate:7.1f} env steps/s, {summary['updates']} updates, dropped "
                    f"{summary.get('transitions_dropped', {})}",
                    flush=True,
                )
    ratios = {a: round(r["straggler"] / r["even"], 3) for a, r in rates.items()}
    print(
        f"PPO keeps {ratios['ppo']:.2f}x of its env steps/s with the straggler, "
        f"APPO {ratios['appo']:.2f}x"
    )
    print(
        json.dumps(
            {
                "ppo_ratio": ratios["ppo"],
                "appo_ratio": ratios["appo"],
                "ppo_steps_per_s": rates["ppo"],
                "appo_steps_per_s": rates["appo"],
            }
        )
    )


if __name__ == "__main__":
    main()
