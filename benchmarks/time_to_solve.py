"""Time to solve: env steps and wall time until the solving evaluation, per config and seed.

Runs the real ``main.py`` for each shipped (env, algo) yaml and seeds 1-3 with the yaml's
``reward_threshold`` (or the one below), and reports, from the run's ``summary.json``, the
env steps of the first evaluation at or above the threshold and the wall time from process
start until that evaluation. The last line is one JSON object:
``{"<config>": {"<seed>": {"env_steps": n, "wall_s": x}}}`` (null where it did not solve).

    python benchmarks/time_to_solve.py                      # every config, seeds 1-3
    python benchmarks/time_to_solve.py --configs cartpole_dqn --seeds 1 --backend single
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THRESHOLDS = {
    "cartpole_dqn": 475.0,
    "cartpole_dqn_per": 475.0,
    "cartpole_ppo": 475.0,
    "pendulum_ppo": -300.0,
    "pendulum_sac": -200.0,
    "pendulum_td3": -200.0,
}


def solve_once(config: str, seed: int, backend: str, tasks_dir: Path) -> dict | None:
    started = time.time()
    cmd = [
        sys.executable,
        str(ROOT / "main.py"),
        "--yaml",
        str(ROOT / "configs" / f"{config}.yaml"),
        f"general_cfg.seed={seed}",
        f"general_cfg.mp_backend={backend}",
        f"general_cfg.reward_threshold={THRESHOLDS[config]}",
        f"general_cfg.tasks_dir={tasks_dir}",
        "general_cfg.progress=false",
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        print(
            f"{config} seed {seed}: exit {result.returncode}: {result.stderr[-500:]}",
            file=sys.stderr,
        )
        return None
    task = Path(result.stdout.strip().splitlines()[-1])
    summary = json.loads((task / "results" / "summary.json").read_text())
    for entry in summary["eval_history"]:
        if entry["return_mean"] >= THRESHOLDS[config]:
            solved_at = summary["started_at"] + entry["wall_time_s"]
            return {"env_steps": entry["env_steps"], "wall_s": round(solved_at - started, 1)}
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="*", default=list(THRESHOLDS), choices=list(THRESHOLDS))
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--backend", default="ray", choices=["ray", "single"])
    args = parser.parse_args()
    results: dict[str, dict[str, dict | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for config in args.configs:
            results[config] = {}
            for seed in args.seeds:
                outcome = solve_once(config, seed, args.backend, Path(tmp))
                results[config][str(seed)] = outcome
                shown = (
                    f"{outcome['env_steps']} env steps, {outcome['wall_s']} s"
                    if outcome
                    else "not solved"
                )
                print(f"{config:18s} seed {seed}: {shown}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
