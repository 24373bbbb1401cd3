"""PPO on HalfCheetah-v5: joyrl-ray against Stable-Baselines3, same settings, same env steps.

Both sides train with RL Zoo's tuned HalfCheetah settings (hyperparams/ppo.yml: one env,
512 steps per update, 20 epochs of 64, learning rate 2.06e-5, 256x256 ReLU actor and
critic, initial log-std -2, observations and rewards normalized): ours is
configs/halfcheetah_ppo.yaml (``env_cfg.normalize_obs`` / ``normalize_reward``), SB3's is
benchmarks/sb3_zoo.yaml's ``ppo_halfcheetah`` (VecNormalize). Each runs the same env-step
budget (RL Zoo's 1M unless ``--budget``) and evaluates the same way: 10 deterministic
episodes every 25,600 env steps (50 updates), observations normalized with the training
statistics, frozen. Seeds run one after the other, ours then SB3's, so both see the same
machine load.

    pip install -r requirements-mujoco.txt -r requirements-bench.txt
    python benchmarks/halfcheetah.py                       # seed 1, 1M env steps a side
    python benchmarks/halfcheetah.py --seeds 1 2 3 --budget 300000

Per seed and side: the last and the best evaluation's mean return and the whole process's
seconds (imports, Ray's start and stop for ours). The last line is one JSON object:
``{"budget": n, "ours": {"last": [..], "best": [..], "s": [..]}, "sb3": {...},
"last_return_ratio_median": x, "time_ratio_median": y}`` (ratios: ours / SB3, medians over
the seeds; a return ratio above 1 is ours ahead, a time ratio below 1 is ours quicker).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vs_peers import ROOT, normalized, sb3_model_class, sb3_settings, timed  # noqa: E402

CONFIG = "configs/halfcheetah_ppo.yaml"
SB3_SETTING = "ppo_halfcheetah"
EVAL_EVERY_STEPS = 25_600  # ours: model_save_fre 50 updates of 512 env steps
EVAL_EPISODES = 10
SIDE_TIMEOUT_S = 4 * 3600  # one side's whole run (1M env steps: ~25-50 min on 2 cores)


def run_sb3(seed: int, budget: int) -> None:
    """SB3's side, in a process of its own: trains ``budget`` env steps, prints one JSON line
    with every evaluation's env steps and mean return."""
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.env_util import make_vec_env

    setting = sb3_settings(SB3_SETTING)
    env = make_vec_env(setting.env_id, setting.n_envs, seed=seed)
    eval_env = make_vec_env(setting.env_id, 1, seed=seed + 1000)
    env, eval_env = normalized(env, eval_env, setting.kwargs.get("gamma", 0.99))
    history: list[tuple[int, float]] = []

    class Eval(EvalCallback):
        """Keeps every evaluation's mean return (EvalCallback keeps them only with a log
        path); it copies the training env's VecNormalize statistics before each one."""

        def _on_step(self) -> bool:
            go_on = super()._on_step()
            if self.n_calls % self.eval_freq == 0:
                history.append((self.num_timesteps, float(self.last_mean_reward)))
            return go_on

    callback = Eval(
        eval_env,
        n_eval_episodes=EVAL_EPISODES,
        eval_freq=max(EVAL_EVERY_STEPS // setting.n_envs, 1),
        deterministic=True,
        verbose=0,
    )
    model_cls = sb3_model_class(setting.algo)
    model = model_cls(setting.policy, env, seed=seed, device="cpu", verbose=0, **setting.kwargs)
    model.learn(total_timesteps=budget, callback=callback)
    env.close()
    eval_env.close()
    steps = [steps for steps, _ in history]
    returns = [round(mean, 1) for _, mean in history]
    print(json.dumps({"eval_env_steps": steps, "eval_returns": returns}))


def ours_once(seed: int, budget: int, tasks: Path) -> dict[str, Any] | None:
    """Our side's whole process: main.py with the shipped config for ``budget`` env steps."""
    seconds, done = timed(
        [
            sys.executable,
            "main.py",
            "--yaml",
            CONFIG,
            f"general_cfg.seed={seed}",
            f"general_cfg.max_env_steps={budget}",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            f"general_cfg.tasks_dir={tasks}",
        ],
        SIDE_TIMEOUT_S,
    )
    if done.returncode != 0:
        print(f"# ours seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return None
    (path,) = tasks.glob("*/results/summary.json")
    history = json.loads(path.read_text())["eval_history"]
    return outcome([float(e["return_mean"]) for e in history], seconds)


def sb3_once(seed: int, budget: int) -> dict[str, Any] | None:
    argv = [sys.executable, __file__, "--sb3", "--seeds", str(seed), "--budget", str(budget)]
    seconds, done = timed(argv, SIDE_TIMEOUT_S)
    if done.returncode != 0:
        print(f"# sb3 seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome(result["eval_returns"], seconds)


def outcome(returns: list[float], seconds: float) -> dict[str, Any] | None:
    if not returns:
        return None
    return {"last": round(returns[-1], 1), "best": round(max(returns), 1), "s": round(seconds, 1)}


def median_ratio(ours: list[dict[str, Any] | None], peer: list[dict[str, Any] | None], key: str):
    pairs = [(a[key], b[key]) for a, b in zip(ours, peer, strict=True) if a and b]
    if not pairs:
        return None
    peer_median = statistics.median(b for _, b in pairs)
    return round(statistics.median(a for a, _ in pairs) / peer_median, 2) if peer_median else None


def column(runs: list[dict[str, Any] | None], key: str) -> list[float | None]:
    return [run[key] if run else None for run in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", nargs="*", type=int, default=[1])
    parser.add_argument("--budget", type=int, default=1_000_000, help="env steps a side")
    parser.add_argument("--sb3", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3:
        run_sb3(args.seeds[0], args.budget)
        return
    ours: list[dict[str, Any] | None] = []
    peer: list[dict[str, Any] | None] = []
    with tempfile.TemporaryDirectory(prefix="halfcheetah_") as tmp:
        for seed in args.seeds:
            started = time.time()
            ours.append(ours_once(seed, args.budget, Path(tmp) / f"ours_{seed}"))
            peer.append(sb3_once(seed, args.budget))
            print(
                f"seed {seed}, {args.budget} env steps a side: ours {ours[-1]}, sb3 {peer[-1]} "
                f"({time.time() - started:.0f} s)",
                flush=True,
            )
    result = {
        "budget": args.budget,
        "seeds": args.seeds,
        "ours_config": CONFIG,
        "ours": {key: column(ours, key) for key in ("last", "best", "s")},
        "sb3": {key: column(peer, key) for key in ("last", "best", "s")},
        "last_return_ratio_median": median_ratio(ours, peer, "last"),
        "best_return_ratio_median": median_ratio(ours, peer, "best"),
        "time_ratio_median": median_ratio(ours, peer, "s"),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    if not (ROOT / CONFIG).exists():
        sys.exit(f"{CONFIG} is missing: run this from a joyrl-ray checkout")
    main()
