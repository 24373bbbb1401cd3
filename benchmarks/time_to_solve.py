"""Time to solve: env steps and wall time until the solving evaluation, per config and seed.

Runs the real ``main.py`` for each shipped (env, algo) yaml and seeds 1-3 with the yaml's
``reward_threshold`` (or the one below), and reports, from the run's ``summary.json``, the
env steps of the first evaluation at or above the threshold and the wall time from process
start until that evaluation. The last line is one JSON object:
``{"<config>": {"<seed>": {"env_steps": n, "wall_s": x}}}`` (null where it did not solve).

    python benchmarks/time_to_solve.py                      # every config, seeds 1-3
    python benchmarks/time_to_solve.py --configs cartpole_dqn --seeds 1 --backend single
    python benchmarks/time_to_solve.py --vs-single          # Ray vs single, whole process

``--vs-single`` runs cartpole_ppo and cartpole_dqn as shipped (Ray) and with the single
backend, seeds interleaved, and between them a bare ``ray.init(); ray.shutdown()`` process:
the Ray run's whole-process time should exceed the single backend's by no more than that
bare Ray process takes (the runtime adds nothing of its own beyond Ray's start and stop).
Its last line is ``{"configs": {"<config>": {"ray_s": [...],
"single_s": [...], "bare_ray_s": [...], "ray_minus_single_s": x, "within_bare_ray": b}}}``.

How many env steps a seed needs to solve differs between the backends (a Ray run is not
bit-reproducible, and DQN on CartPole solves anywhere from about 20k to 50k steps), so with
three seeds the comparison above is mostly the seeds' luck. ``--vs-single --fixed-steps N``
takes it out: both backends run exactly N env steps (no threshold; the same updates, the
same evaluations), so what differs is the runtime alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
    "lunarlander_dqn": 200.0,
    "lunarlander_ppo": 200.0,
}
VS_SINGLE_CONFIGS = ["cartpole_ppo", "cartpole_dqn"]
BARE_RAY = "import ray; ray.init(address='local'); ray.shutdown()"


def solve_once(
    config: str, seed: int, backend: str, tasks_dir: Path, fixed_steps: int | None = None
) -> dict | None:
    """One run until its threshold: env steps and seconds at the solving evaluation, and the
    whole process's seconds (start to exit: imports, Ray's start and stop included).

    With ``fixed_steps`` the run goes on for exactly that many env steps instead, and the
    result is its whole-process seconds (``process_s``) whether it solved or not.
    """
    started = time.time()
    stop = (
        [f"general_cfg.max_env_steps={fixed_steps}", "general_cfg.reward_threshold=null"]
        if fixed_steps
        else [f"general_cfg.reward_threshold={THRESHOLDS[config]}"]
    )
    cmd = [
        sys.executable,
        str(ROOT / "main.py"),
        "--yaml",
        str(ROOT / "configs" / f"{config}.yaml"),
        f"general_cfg.seed={seed}",
        f"general_cfg.mp_backend={backend}",
        *stop,
        f"general_cfg.tasks_dir={tasks_dir}",
        "general_cfg.progress=false",
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    process_s = time.time() - started
    if result.returncode != 0:
        print(
            f"{config} seed {seed}: exit {result.returncode}: {result.stderr[-500:]}",
            file=sys.stderr,
        )
        return None
    task = Path(result.stdout.strip().splitlines()[-1])
    summary = json.loads((task / "results" / "summary.json").read_text())
    if fixed_steps:
        return {
            "env_steps": summary["env_steps"],
            "wall_s": round(summary["wall_time_s"], 1),
            "process_s": round(process_s, 1),
            "startup_s": summary["time_s"]["startup"],
            "fixed": True,
        }
    for entry in summary["eval_history"]:
        if entry["return_mean"] >= THRESHOLDS[config]:
            solved_at = summary["started_at"] + entry["wall_time_s"]
            return {
                "env_steps": entry["env_steps"],
                "wall_s": round(solved_at - started, 1),
                "process_s": round(process_s, 1),
                "startup_s": summary["time_s"]["startup"],
            }
    return None


def bare_ray_s() -> float:
    """Seconds of a process that only starts and stops a local Ray."""
    started = time.time()
    subprocess.run([sys.executable, "-c", BARE_RAY], check=True, capture_output=True)
    return time.time() - started


def _shown(outcome: dict | None) -> str:
    if not outcome:
        return "not solved"
    if outcome.get("fixed"):
        return f"{outcome['env_steps']} env steps, process {outcome['process_s']} s"
    return (
        f"{outcome['env_steps']} env steps, solved at {outcome['wall_s']} s, process "
        f"{outcome['process_s']} s"
    )


def vs_single(
    configs: list[str], seeds: list[int], tmp: Path, fixed_steps: int | None = None
) -> dict:
    """Ray as shipped against the single backend, seeds interleaved, plus bare Ray processes.

    The runtime's own cost on Ray is its whole-process time minus the single backend's;
    it should be no more than what starting and stopping Ray alone costs.
    """
    out: dict = {"configs": {}, "fixed_steps": fixed_steps}
    for config in configs:
        rows: dict[str, list[float]] = {"ray": [], "single": [], "bare": []}
        for seed in seeds:
            for backend in ("single", "ray"):
                outcome = solve_once(config, seed, backend, tmp, fixed_steps)
                print(f"{config:14s} seed {seed} {backend:6s}: {_shown(outcome)}", flush=True)
                rows[backend].append(outcome["process_s"] if outcome else float("nan"))
            rows["bare"].append(round(bare_ray_s(), 2))
            print(f"{config:14s} seed {seed} bare Ray process: {rows['bare'][-1]} s", flush=True)
        single = statistics.median(rows["single"])
        ray = statistics.median(rows["ray"])
        bare = statistics.median(rows["bare"])
        verdict = "within" if ray <= single + bare else "over"
        print(
            f"{config}: median process seconds: ray {ray:.1f}, single {single:.1f}, bare Ray "
            f"{bare:.1f}; ray - single = {ray - single:+.1f} s ({verdict} the bare Ray cost); "
            f"ray / single = {ray / single:.2f}x",
            flush=True,
        )
        out["configs"][config] = {
            "ray_s": rows["ray"],
            "single_s": rows["single"],
            "bare_ray_s": rows["bare"],
            "ray_minus_single_s": round(ray - single, 2),
            "within_bare_ray": verdict == "within",
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="*", default=list(THRESHOLDS), choices=list(THRESHOLDS))
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--backend", default="ray", choices=["ray", "single"])
    parser.add_argument(
        "--vs-single",
        action="store_true",
        help="whole-process time on Ray vs the single backend (cartpole_ppo, cartpole_dqn)",
    )
    parser.add_argument(
        "--fixed-steps",
        type=int,
        default=None,
        help="with --vs-single: run exactly this many env steps instead of until solved",
    )
    args = parser.parse_args()
    if args.vs_single:
        configs = args.configs if args.configs != list(THRESHOLDS) else VS_SINGLE_CONFIGS
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(vs_single(configs, args.seeds, Path(tmp), args.fixed_steps)))
        return
    results: dict[str, dict[str, dict | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for config in args.configs:
            results[config] = {}
            for seed in args.seeds:
                outcome = solve_once(config, seed, args.backend, Path(tmp))
                results[config][str(seed)] = outcome
                print(f"{config:18s} seed {seed}: {_shown(outcome)}", flush=True)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
