"""Learning from a dataset: how long a large one takes to load, and a learner's pace with no
workers against an online run's, in the same run.

1. Load: a dataset of ``--transitions`` CartPole-shaped transitions (episodes of 500
   steps, written as ``trajs_*.pkl`` files the way ``collect_traj`` writes them) is read
   and checked as the driver does, then each of ``--shards`` replay shards is built from it
   as a run builds them (each reads the files and keeps its part): seconds for each.
2. Pace: ``configs/cartpole_dqn.yaml`` on Ray to ``--updates`` learner updates, once online
   (its worker, the update-to-data ratio) and once from the dataset (no workers, no ratio),
   same batch size, ``--rounds`` times alternating: the learner's updates per second of
   its learning and waiting for data, and the ratio of the medians.

Last line: one JSON object with every figure.

    python benchmarks/offline.py                             # 1M transitions, 2 shards
    python benchmarks/offline.py --transitions 100000 --updates 2000
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from joyrl_ray.data.replay_shard import DataServer  # noqa: E402
from joyrl_ray.data_needs import ReplayNeeds  # noqa: E402
from joyrl_ray.run.dataset import check_size, load_dataset  # noqa: E402
from joyrl_ray.run.trajectories import TrajectoryWriter  # noqa: E402

EPISODE = 500


def write_dataset(folder: Path, transitions: int, seed: int = 0) -> None:
    """``transitions`` steps of CartPole-shaped episodes (random values: loading does not
    look at them), in trajectory files of at most 1000 episodes."""
    rng = np.random.default_rng(seed)
    (folder / "results").mkdir(parents=True)
    writer = TrajectoryWriter(folder / "results")
    for start in range(0, transitions, EPISODE):
        steps = min(EPISODE, transitions - start)
        obs = rng.standard_normal((steps + 1, 4)).astype(np.float32)
        ends = np.zeros(steps, bool)
        ends[-1] = True
        writer.extend(
            [
                {
                    "obs": obs[:-1],
                    "actions": rng.integers(0, 2, steps),
                    "rewards": np.ones(steps, np.float32),
                    "next_obs": obs[1:],
                    "terminated": np.zeros(steps, bool),
                    "truncated": ends,
                }
            ]
        )
    writer.close()


def load_figures(folder: Path, shards: int) -> dict[str, Any]:
    """Seconds to read and check the dataset (the driver) and to build each shard from it."""
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    spaces = (env.observation_space, env.action_space)
    needs = ReplayNeeds(batch_size=64, buffer_size=100_000, learn_start=0, updates_per_step=1)
    started = time.perf_counter()
    dataset = load_dataset(str(folder), "tasks", spaces, needs)
    rows = check_size(dataset, needs, shards)
    driver_s = time.perf_counter() - started
    shard_s = []
    for shard in range(shards):
        started = time.perf_counter()
        server = DataServer(needs=needs, shard=shard, n_shards=shards, dataset=dataset.source)
        shard_s.append(round(time.perf_counter() - started, 2))
        assert len(server.buffer) > 0
        del server
    return {"transitions": rows, "driver_read_s": round(driver_s, 2), "shard_build_s": shard_s}


def run_main(tasks: Path, *overrides: str) -> dict[str, Any]:
    command = [
        sys.executable,
        "main.py",
        "--yaml",
        "configs/cartpole_dqn.yaml",
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.progress=false",
        "general_cfg.online_eval=false",
        "general_cfg.max_env_steps=10000000",
        *overrides,
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-2000:]}")
    (summary_file,) = tasks.glob("*/results/summary.json")
    summary: dict[str, Any] = json.loads(summary_file.read_text())
    return summary


def pace(summary: dict[str, Any]) -> float:
    """The learner's updates per second of its learning and waiting for data (its own
    clock: no start-up, no report lag)."""
    learner = summary["learners"][0]
    times = learner["times"]
    return float(learner["updates"]) / (times["learn_s"] + times["data_wait_s"] + times["sync_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--updates", type=int, default=5_000)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="offline_") as tmp:
        folder = Path(tmp) / "data"
        write_dataset(folder, args.transitions)
        load = load_figures(folder, args.shards)
        print(
            f"load: {load['transitions']} transitions; driver read+check "
            f"{load['driver_read_s']} s; shards built in {load['shard_build_s']} s"
        )
        common = (
            f"general_cfg.max_updates={args.updates}",
            f"general_cfg.ray_num_cpus={args.num_cpus}",
        )
        online, offline = [], []
        for round_ in range(args.rounds):  # alternating, so both see the same machine load
            online.append(pace(run_main(Path(tmp) / f"online{round_}", *common)))
            dataset = (
                f"general_cfg.dataset={folder}",
                f"general_cfg.n_replay_shards={args.shards}",
            )
            offline.append(pace(run_main(Path(tmp) / f"offline{round_}", *common, *dataset)))
            print(
                f"round {round_ + 1}: online {online[-1]:.1f}, offline {offline[-1]:.1f} updates/s"
            )
    figures = {
        **load,
        "updates": args.updates,
        "online_updates_per_s": [round(x, 1) for x in online],
        "offline_updates_per_s": [round(x, 1) for x in offline],
        "offline_over_online_median": round(
            statistics.median(offline) / statistics.median(online), 2
        ),
    }
    print(
        f"pace, medians: online {statistics.median(online):.1f} updates/s, from the dataset "
        f"{statistics.median(offline):.1f} updates/s ({figures['offline_over_online_median']}x)"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
