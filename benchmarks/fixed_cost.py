"""A Ray run's fixed cost against a bare Ray start and the one-process run, in the same run.

Each round runs, one after the other (so all three see the same machine load): a bare
local Ray start and stop in a fresh process (``ray.init(address="local")`` and
``ray.shutdown()``), the config on the one-process backend, and the same config on Ray,
each a whole process timed from the outside. A run's fixed cost is its whole process less
its ``time_s.run`` (first env step to the stop: the learning itself), so runs that learn
in different times still compare. The goal (issue: a Ray run's fixed cost) is

    ray fixed - (bare Ray + single fixed) <= 1 s

and the Ray run's ``time_s.startup_parts`` and ``teardown_parts`` say where its start and
its end went (docs/outputs.md). Rounds use seeds 1, 2, ...; the medians come last, then one
JSON line: ``{"rounds": [...], "median": {...}, "config": ..., "num_cpus": ...}``.

    python benchmarks/fixed_cost.py                      # configs/cartpole_ppo.yaml, 3 rounds
    python benchmarks/fixed_cost.py --rounds 5 --yaml configs/cartpole_dqn.yaml
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BARE_RAY = (
    "import ray, sys; ray.init(address='local', include_dashboard=False, "
    "num_cpus=int(sys.argv[1])); ray.shutdown()"
)
STARTUP = (
    "ray_ready",
    "roles_requested",
    "processes_started",
    "roles_imported",
    "roles_ready",
    "first_weights",
    "first_env_step",
)


def timed(command: list[str]) -> float:
    """Seconds the command took, whole process; it must succeed."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    return elapsed


def run_once(yaml_file: str, backend: str, seed: int, num_cpus: int) -> dict[str, Any]:
    """One main.py run, whole process: its seconds and its summary's ``time_s``."""
    with tempfile.TemporaryDirectory(prefix="fixed_cost_") as tasks:
        command = [
            sys.executable,
            "main.py",
            "--yaml",
            yaml_file,
            f"general_cfg.mp_backend={backend}",
            f"general_cfg.seed={seed}",
            f"general_cfg.ray_num_cpus={num_cpus}",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tasks}",
        ]
        whole = timed(command)
        (summary_file,) = Path(tasks).glob("*/results/summary.json")
        times = json.loads(summary_file.read_text())["time_s"]
    return {"whole_s": round(whole, 2), "time_s": times, "fixed_s": round(whole - times["run"], 2)}


def one_round(yaml_file: str, seed: int, num_cpus: int) -> dict[str, Any]:
    bare = timed([sys.executable, "-c", BARE_RAY, str(num_cpus)])
    single = run_once(yaml_file, "single", seed, num_cpus)
    on_ray = run_once(yaml_file, "ray", seed, num_cpus)
    return {
        "seed": seed,
        "bare_ray_s": round(bare, 2),
        "single_whole_s": single["whole_s"],
        "single_fixed_s": single["fixed_s"],
        "ray_whole_s": on_ray["whole_s"],
        "ray_fixed_s": on_ray["fixed_s"],
        "excess_s": round(on_ray["fixed_s"] - (bare + single["fixed_s"]), 2),
        "ray_startup_parts": on_ray["time_s"]["startup_parts"],
        "ray_teardown_parts": on_ray["time_s"]["teardown_parts"],
        "single_startup_parts": single["time_s"]["startup_parts"],
    }


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    flat = ("bare_ray_s", "single_whole_s", "single_fixed_s", "ray_whole_s", "ray_fixed_s")
    out: dict[str, Any] = {key: _median(rounds, key) for key in (*flat, "excess_s")}
    for parts in ("ray_startup_parts", "ray_teardown_parts", "single_startup_parts"):
        out[parts] = {key: _median([r[parts] for r in rounds], key) for key in rounds[0][parts]}
    return out


def describe(row: dict[str, Any]) -> str:
    parts = row["ray_startup_parts"]
    moments = ", ".join(f"{key} {parts[key]}" for key in STARTUP if parts.get(key) is not None)
    ending = row["ray_teardown_parts"]
    return (
        f"bare Ray {row['bare_ray_s']} s | single whole {row['single_whole_s']} s, "
        f"fixed {row['single_fixed_s']} s | Ray whole {row['ray_whole_s']} s, "
        f"fixed {row['ray_fixed_s']} s | excess {row['excess_s']} s\n"
        f"    Ray start-up (s since its process began): {moments}\n"
        f"    Ray end (s since the stop): roles ended {ending['roles_ended']}, "
        f"Ray stopped {ending['ray_stopped']}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--yaml", default="configs/cartpole_ppo.yaml")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num-cpus", type=int, default=2, help="the local Ray's (all three)")
    args = parser.parse_args()
    rounds = []
    for seed in range(1, args.rounds + 1):
        row = one_round(args.yaml, seed, args.num_cpus)
        rounds.append(row)
        print(f"round {seed}: {describe(row)}", flush=True)
    middle = medians(rounds)
    print(f"median: {describe({**middle, 'seed': None})}")
    verdict = "within" if middle["excess_s"] <= 1.0 else "over"
    print(f"excess: Ray fixed - (bare Ray + single fixed) = {middle['excess_s']} s ({verdict} 1 s)")
    report = {"config": args.yaml, "num_cpus": args.num_cpus, "rounds": rounds, "median": middle}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
