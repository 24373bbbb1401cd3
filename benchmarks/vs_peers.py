"""joyrl-ray against Stable-Baselines3: time to a solved env, whole process, in the same run.

Each case runs joyrl-ray's best shipped config for it and SB3 with RL Zoo's hyperparameters
for the same env, seeds 1-3, one after the other (seeds interleaved, so both sides see the
same machine load). Both evaluate the same way: 10 deterministic (greedy) episodes every
~2k env steps, and stop at the first evaluation whose mean return reaches the threshold
(CartPole-v1, with or without its velocities: 475; LunarLander-v3: 200). The figure is the
whole process, start to exit: imports, Ray's start and stop (ours), the subprocess envs'
start (SB3's SubprocVecEnv).

    pip install -r requirements-bench.txt
    python benchmarks/vs_peers.py                  # all but the LunarLander cases
    python benchmarks/vs_peers.py --cases cartpole_novel   # recurrent PPO (needs sb3-contrib)
    python benchmarks/vs_peers.py --cases slow_cartpole_ppo --seeds 1
    python benchmarks/vs_peers.py --long           # and LunarLander-v3, DQN and PPO (box2d)
    python benchmarks/vs_peers.py --cases connect_four      # self-play (sb3-contrib)
    python benchmarks/vs_peers.py --cases connect_four --seeds 1 --env-steps 4096

Cases (ours: the yaml under configs/; SB3: RL Zoo's hyperparameters, benchmarks/sb3_zoo.yaml):

- ``cartpole_ppo``: configs/cartpole_ppo.yaml vs PPO, DummyVecEnv(8) (RL Zoo's n_envs 8).
- ``cartpole_dqn``: configs/cartpole_dqn.yaml vs DQN, one env.
- ``slow_cartpole_ppo``: CartPole with 2 ms per step and reset (``step_latency``):
  configs/slow_cartpole_ppo_single.yaml (one process, 1 worker x 8 async envs: the
  quickest on one machine) vs PPO with SubprocVecEnv(8); SB3 evaluates on the slow env too
  (its ``EvalCallback`` stops training while it evaluates), and once more on plain
  CartPole, its best case (``sb3_plain_eval_s``). The same seeds also run
  configs/slow_cartpole_ppo.yaml, the Ray layout (2 workers x 4 async envs, evaluating
  beside learning): ``ours_ray_s`` and its ratios.
- ``cartpole_novel``: CartPole without its velocities (``mask_velocity``: cart and pole
  positions only, RL Zoo's CartPoleNoVel-v1), which needs memory:
  configs/cartpole_novel_ppo_lstm_single.yaml (PPO with an LSTM, one process, 1 worker x
  8 envs; ``ours_ray_s``: configs/cartpole_novel_ppo_lstm.yaml, Ray, 2 workers x 4 envs) vs
  sb3-contrib's RecurrentPPO with RL Zoo's ppo_lstm settings (DummyVecEnv(8),
  VecNormalize on observations and rewards; evaluation on the masked env, its
  normalization synced from training and frozen). Budgets: ours 150k env steps, SB3
  100k (RL Zoo's n_timesteps). Without sb3-contrib the case prints one line saying what
  to install (``{"skipped": ...}`` in the JSON) and the other cases run.
- ``lunarlander_dqn`` / ``lunarlander_ppo`` (``--long``): configs/lunarlander_*.yaml vs RL
  Zoo's LunarLander settings, to 200.
- ``connect_four`` (``--long``): PettingZoo's Connect Four by self-play, a fixed budget
  rather than a threshold: configs/connect_four_ppo_league.yaml (PPO, Ray, 2 workers, a
  league of snapshots; ``general_cfg.online_eval=false``, as the peer does not evaluate while
  it trains) vs sb3-contrib's MaskablePPO trained by self-play with PettingZoo's SB3
  tutorial's settings (benchmarks/peers_connect_four.py), 100k env steps a side
  (``--env-steps``), a move of either player being one env step on both sides. The seconds
  are each side's training process, whole; the games are played afterwards, by
  benchmarks/peers_connect_four.py for both sides alike, greedy, illegal moves masked: each
  side's final policy against uniform-random legal moves (100 games, 50 from each seat) and
  ours against the peer (100 games from 50 distinct random 3-move openings, each from both
  seats). Per seed: seconds, env steps reached, won / drawn / lost; then the medians (and
  sums) and a verdict on the issue's goal: a higher win rate against random in less time,
  and ours winning the head-to-head.

A side that does not solve within its budget counts as null. Before the cases, one line
measures ``env_cfg.vector_mode``: 1 worker's vector env of 8 envs of the 2 ms env, async vs
sync, env steps per second with the policy's forward each step. The last line is one JSON
object: ``{"<case>": {"ours_config": "<yaml>", "ours_s": [..], "sb3_s": [..],
"ratio_median": x}, "vector_mode": {...}}`` (ratio: ours / SB3, medians over the seeds that
solved on both sides); ``connect_four`` adds ``ours_env_steps`` / ``sb3_env_steps``,
``ours_vs_random`` / ``sb3_vs_random`` and ``head_to_head`` (``{"won", "drawn", "lost"}``
per seed, ours' side), their medians and sums, and ``verdict``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmarks.peers_connect_four import Record

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SLOW_STEP_S = 0.002
EVAL_EVERY_STEPS = 2048  # env steps between evaluations (ours: the configs' model_save_fre)
EVAL_EPISODES = 10
RUN_TIMEOUT_S = 1800


# ----- cases -----
CASES: dict[str, dict[str, Any]] = {
    "cartpole_ppo": {"ours": "cartpole_ppo", "sb3": "ppo_cartpole", "slow": False},
    "cartpole_dqn": {"ours": "cartpole_dqn", "sb3": "dqn_cartpole", "slow": False},
    "slow_cartpole_ppo": {
        "ours": "slow_cartpole_ppo_single",
        "ours_ray": "slow_cartpole_ppo",
        "sb3": "ppo_cartpole",
        "slow": True,
    },
    "cartpole_novel": {
        "ours": "cartpole_novel_ppo_lstm_single",
        "ours_ray": "cartpole_novel_ppo_lstm",
        "sb3": "ppo_lstm_cartpole_novel",
        "slow": False,
        "needs": "sb3-contrib",  # RecurrentPPO
    },
}
LONG_CASES: dict[str, dict[str, Any]] = {
    "lunarlander_dqn": {"ours": "lunarlander_dqn", "sb3": "dqn_lunarlander", "slow": False},
    "lunarlander_ppo": {"ours": "lunarlander_ppo", "sb3": "ppo_lunarlander", "slow": False},
    "connect_four": {
        "ours": "connect_four_ppo_league",
        "peer": "MaskablePPO, self-play, PettingZoo's SB3 tutorial settings",
        "env_steps": 100_000,  # a side: moves of either player
        "needs": "sb3-contrib",  # MaskablePPO
        "game": True,  # a fixed budget, then games: connect_four_case
    },
}
THRESHOLD = {"cartpole": 475.0, "lunarlander": 200.0}


def threshold_of(case: str) -> float:
    return THRESHOLD["lunarlander" if "lunarlander" in case else "cartpole"]


def missing_extra(case: str) -> str | None:
    """The package ``case``'s peer needs beyond stable-baselines3 (``needs``), if it is not
    installed; None when there is nothing to install."""
    package = (LONG_CASES | CASES)[case].get("needs")
    if package is None or importlib.util.find_spec(package.replace("-", "_")) is not None:
        return None
    return package


# ----- SB3, in a process of its own (python benchmarks/vs_peers.py --sb3 ...) -----
SB3_ZOO = Path(__file__).with_name("sb3_zoo.yaml")  # RL Zoo's hyperparameters, per setting


def _linear(start: float) -> Any:
    return lambda progress: progress * start  # RL Zoo's lin_<start>


def _schedule(value: Any) -> Any:
    """RL Zoo's ``lin_<x>`` as the schedule it names; any other value as it is."""
    if isinstance(value, str) and value.startswith("lin_"):
        return _linear(float(value.removeprefix("lin_")))
    return value


def _policy_kwargs(value: dict[str, Any]) -> dict[str, Any]:
    """RL Zoo's ``policy_kwargs`` with ``activation_fn`` named in the yaml (``ReLU``) as
    the ``torch.nn`` class it names (RL Zoo writes ``nn.ReLU``)."""
    if "activation_fn" not in value:
        return value
    import torch

    return {**value, "activation_fn": getattr(torch.nn, value["activation_fn"])}


def _kwarg(key: str, value: Any) -> Any:
    return _policy_kwargs(value) if key == "policy_kwargs" else _schedule(value)


@dataclass(frozen=True)
class Sb3Setting:
    """One setting of benchmarks/sb3_zoo.yaml, ready for SB3."""

    algo: str  # PPO, DQN (stable-baselines3) or RecurrentPPO (sb3-contrib)
    env_id: str
    n_envs: int
    budget: int  # env steps
    kwargs: dict[str, Any]  # the model's keyword arguments
    policy: str = "MlpPolicy"
    wrappers: tuple[str, ...] = ()  # names from envs.wrappers.WRAPPERS, in order
    normalize: bool = False  # VecNormalize on observations and rewards, as RL Zoo's ``normalize``


def sb3_settings(name: str) -> Sb3Setting:
    """RL Zoo's hyperparameters for the setting ``name`` of benchmarks/sb3_zoo.yaml."""
    import yaml

    settings = yaml.safe_load(SB3_ZOO.read_text())
    if name not in settings:
        raise ValueError(f"unknown SB3 setting {name!r}")
    zoo = settings[name]
    return Sb3Setting(
        algo=zoo["algo"],
        env_id=zoo["env_id"],
        n_envs=zoo["n_envs"],
        budget=zoo["budget"],
        kwargs={key: _kwarg(key, value) for key, value in zoo["kwargs"].items()},
        policy=zoo.get("policy", "MlpPolicy"),
        wrappers=tuple(zoo.get("wrappers", ())),
        normalize=bool(zoo.get("normalize", False)),
    )


def sb3_model_class(algo: str) -> type:
    """The SB3 class of ``algo``; RecurrentPPO comes from sb3-contrib."""
    if algo == "RecurrentPPO":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    from stable_baselines3 import DQN, PPO

    return {"PPO": PPO, "DQN": DQN}[algo]


def sb3_wrapper(setting: Sb3Setting, latency: bool) -> Callable[[Any], Any]:
    """Wraps one env as the setting says (our ``env_cfg.wrappers``: ``mask_velocity`` makes
    CartPole-v1 into RL Zoo's CartPoleNoVel-v1), then with 2 ms per step if ``latency``."""
    from envs.config import EnvConfig
    from envs.latency import StepLatency
    from envs.wrappers import WRAPPERS

    env_cfg = EnvConfig(id=setting.env_id, wrappers=list(setting.wrappers))

    def wrap(env: Any) -> Any:
        for name in setting.wrappers:
            env = WRAPPERS[name](env, env_cfg)
        return StepLatency(env, SLOW_STEP_S) if latency else env

    return wrap


def normalized(env: Any, eval_env: Any, gamma: float) -> tuple[Any, Any]:
    """RL Zoo's ``normalize: true``: observations and rewards normalized with the algorithm's
    gamma; the evaluation env normalizes observations only and does not update the
    statistics (EvalCallback copies the training env's before each evaluation)."""
    from stable_baselines3.common.vec_env import VecNormalize

    eval_env = VecNormalize(eval_env, gamma=gamma, training=False, norm_reward=False)
    return VecNormalize(env, gamma=gamma), eval_env


def run_sb3(
    name: str, seed: int, slow: bool, slow_eval: bool, threshold: float, budget: int | None
) -> None:
    """Train until an evaluation reaches ``threshold``; prints one JSON line. ``budget``:
    env steps instead of the setting's (a quick check of one side alone:
    ``vs_peers.py --sb3 <setting> --seed 1 --threshold 475 --budget 2304``)."""
    from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    setting = sb3_settings(name)
    n_envs = setting.n_envs
    vec_cls = SubprocVecEnv if slow else DummyVecEnv
    env = make_vec_env(
        setting.env_id,
        n_envs,
        seed=seed,
        wrapper_class=sb3_wrapper(setting, slow),
        vec_env_cls=vec_cls,
    )
    eval_wrapper = sb3_wrapper(setting, slow and slow_eval)
    eval_env = make_vec_env(setting.env_id, 1, seed=seed + 1000, wrapper_class=eval_wrapper)
    if setting.normalize:
        env, eval_env = normalized(env, eval_env, setting.kwargs.get("gamma", 0.99))
    stop = StopTrainingOnRewardThreshold(reward_threshold=threshold, verbose=0)
    solved_at: dict[str, float] = {}

    class Eval(EvalCallback):
        def _on_step(self) -> bool:
            go_on = super()._on_step()
            if not go_on and "s" not in solved_at:
                solved_at["s"] = time.time()
                solved_at["steps"] = self.num_timesteps
            return go_on

    # SB3's evaluate_policy (EvalCallback's) carries a recurrent policy's state and
    # episode starts from step to step, as sb3-contrib's RecurrentPPO needs.
    callback = Eval(
        eval_env,
        callback_on_new_best=stop,
        n_eval_episodes=EVAL_EPISODES,
        eval_freq=max(EVAL_EVERY_STEPS // n_envs, 1),
        deterministic=True,
        verbose=0,
    )
    model_cls = sb3_model_class(setting.algo)
    model = model_cls(setting.policy, env, seed=seed, device="cpu", verbose=0, **setting.kwargs)
    model.learn(total_timesteps=budget or setting.budget, callback=callback)
    env.close()
    eval_env.close()
    last = callback.last_mean_reward
    print(
        json.dumps(
            {
                "solved_at": solved_at.get("s"),
                "env_steps": solved_at.get("steps"),
                "last_eval_mean": None if last == -float("inf") else round(float(last), 1),
            }
        )
    )


# ----- one side's whole process -----
def timed(
    argv: list[str], timeout_s: float = RUN_TIMEOUT_S
) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Seconds and outcome of ``argv``; a run past ``timeout_s`` is killed and reads as
    exit 124, so that side counts as unsolved and the other seeds and cases still run."""
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}
    t0 = time.time()
    try:
        done = subprocess.run(
            argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        done = subprocess.CompletedProcess(argv, 124, "", f"killed after {timeout_s:g} s")
    return time.time() - t0, done


def ours_argv(config: str, seed: int, tasks: Path) -> list[str]:
    """``main.py`` on ``configs/<config>.yaml`` with ``seed``, quiet, writing under ``tasks``."""
    return [
        sys.executable,
        "main.py",
        "--yaml",
        f"configs/{config}.yaml",
        f"general_cfg.seed={seed}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
        f"general_cfg.tasks_dir={tasks}",
    ]


def ours_once(case: str, seed: int, tasks: Path, side: str = "ours") -> float | None:
    """Whole-process seconds of ``main.py`` to the threshold; None if it did not solve.
    ``side``: the case's config to run ("ours", or "ours_ray" where the case has one)."""
    config = (LONG_CASES | CASES)[case][side]
    threshold = f"general_cfg.reward_threshold={threshold_of(case):g}"
    seconds, done = timed([*ours_argv(config, seed, tasks), threshold])
    if done.returncode != 0:
        print(f"# ours {case} seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return None
    (path,) = tasks.glob("*/results/summary.json")
    summary = json.loads(path.read_text())
    return round(seconds, 1) if summary.get("stop_reason") == "reward_threshold" else None


def sb3_once(case: str, seed: int, *, slow_eval: bool = True) -> float | None:
    spec = (LONG_CASES | CASES)[case]
    argv = [sys.executable, __file__, "--sb3", spec["sb3"], "--seed", str(seed)]
    argv += ["--threshold", str(threshold_of(case))]
    if spec["slow"]:
        argv.append("--slow")
        if not slow_eval:
            argv.append("--plain-eval")
    seconds, done = timed(argv)
    if done.returncode != 0:
        print(f"# sb3 {case} seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return None
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return round(seconds, 1) if result["solved_at"] is not None else None


def ratio_median(ours: list[float | None], peer: list[float | None]) -> float | None:
    pairs = [(a, b) for a, b in zip(ours, peer, strict=True) if a is not None and b is not None]
    if not pairs:
        return None
    return round(statistics.median(a for a, _ in pairs) / statistics.median(b for _, b in pairs), 2)


# ----- connect_four: the same budget a side, then the same games for both -----
@dataclass(frozen=True)
class Trained:
    """One side's training process: whole seconds, env steps it reached, and what it left
    to play with (ours: the task directory; the peer: its model file); None if it failed."""

    seconds: float | None = None
    env_steps: int | None = None
    where: Path | None = None


def ours_trained(case: str, seed: int, env_steps: int, tasks: Path) -> Trained:
    """``main.py`` for ``env_steps`` env steps, without online evaluations (the peer trains
    without them; both are measured afterwards by the same games)."""
    argv = ours_argv((LONG_CASES | CASES)[case]["ours"], seed, tasks)
    argv += [f"general_cfg.max_env_steps={env_steps}", "general_cfg.online_eval=false"]
    seconds, done = timed(argv)
    if done.returncode != 0:
        print(f"# ours {case} seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return Trained()
    (path,) = tasks.glob("*/results/summary.json")
    summary = json.loads(path.read_text())
    return Trained(round(seconds, 1), int(summary["env_steps"]), path.parent.parent)


def peer_trained(case: str, seed: int, env_steps: int, model: Path) -> Trained:
    """MaskablePPO by self-play in a process of its own (benchmarks/peers_connect_four.py),
    timed as the other cases time SB3."""
    script = Path(__file__).with_name("peers_connect_four.py")
    argv = [sys.executable, str(script), "--seed", str(seed), "--env-steps", str(env_steps)]
    seconds, done = timed([*argv, "--save", str(model)])
    if done.returncode != 0:
        print(f"# sb3 {case} seed {seed}: exit {done.returncode}: {done.stderr[-500:]}")
        return Trained()
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return Trained(round(seconds, 1), int(result["env_steps"]), model)


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 3) if known else None


def game_verdict(
    ratio: float | None, ours_rate: float | None, peer_rate: float | None, h2h: Record
) -> str:
    """The issue's goal, part by part: a higher win rate against random (medians), in less
    time (median seconds), and ours winning the head-to-head (summed over the seeds)."""
    if ratio is None or ours_rate is None or peer_rate is None or h2h.games == 0:
        return "not measured: a side failed on every seed"
    parts = [
        (ours_rate > peer_rate, f"higher win rate against random ({ours_rate} vs {peer_rate})"),
        (ratio < 1, f"less time ({ratio}x)"),
        (h2h.won > h2h.lost, f"ours winning the head-to-head ({h2h})"),
    ]
    head = "met" if all(ok for ok, _ in parts) else "not met"
    return f"{head}: " + "; ".join(f"{'yes' if ok else 'no'}, {what}" for ok, what in parts)


def connect_four_case(case: str, seeds: list[int], env_steps: int, tmp: Path) -> dict[str, Any]:
    """Per seed: both sides train ``env_steps`` env steps (ours, then the peer), then play
    benchmarks/peers_connect_four.py's games: each against random, ours against the peer."""
    from benchmarks.peers_connect_four import (
        Record,
        against_random,
        head_to_head,
        ours_player,
        peer_player,
    )

    sides = ("ours", "sb3")
    runs: dict[str, list[Trained]] = {side: [] for side in sides}
    vs_random: dict[str, list[Record | None]] = {side: [] for side in sides}
    h2h: list[Record | None] = []
    for seed in seeds:
        ours = ours_trained(case, seed, env_steps, tmp / f"{case}_{seed}")
        peer = peer_trained(case, seed, env_steps, tmp / f"{case}_{seed}_sb3.zip")
        players = {
            "ours": ours_player(ours.where) if ours.where else None,
            "sb3": peer_player(peer.where) if peer.where else None,
        }
        line = f"{case} seed {seed}:"
        for side, run in zip(sides, (ours, peer), strict=True):
            player = players[side]
            record = against_random(player, seed) if player else None
            runs[side].append(run)
            vs_random[side].append(record)
            line += f" {side} {run.seconds} s, {run.env_steps} env steps, against random "
            line += f"{record} ({record.win_rate:.2f});" if record else "-;"
        ours_player_, peer_player_ = players["ours"], players["sb3"]
        if ours_player_ is not None and peer_player_ is not None:
            h2h.append(head_to_head(ours_player_, peer_player_, seed))
        else:
            h2h.append(None)
        print(f"{line} head-to-head, ours {h2h[-1] or '-'}", flush=True)
    seconds = {side: [run.seconds for run in runs[side]] for side in sides}
    sums = {side: round(sum(s for s in seconds[side] if s is not None), 1) for side in sides}
    rates = {side: _median([r.win_rate if r else None for r in vs_random[side]]) for side in sides}
    h2h_sum = sum((r for r in h2h if r is not None), Record())
    ratio = ratio_median(seconds["ours"], seconds["sb3"])
    verdict = game_verdict(ratio, rates["ours"], rates["sb3"], h2h_sum)
    print(
        f"{case}, {env_steps} env steps a side: median ours {_median(seconds['ours'])} s, sb3 "
        f"{_median(seconds['sb3'])} s ({ratio}x; sums {sums['ours']} s, {sums['sb3']} s); "
        f"won against random, median: ours {rates['ours']}, sb3 {rates['sb3']}; "
        f"head-to-head, all seeds, ours {h2h_sum}",
        flush=True,
    )
    print(f"{case} verdict: {verdict}", flush=True)
    spec = (LONG_CASES | CASES)[case]
    return {
        "ours_config": spec["ours"],
        "peer": spec["peer"],
        "env_steps": env_steps,
        "ours_s": seconds["ours"],
        "sb3_s": seconds["sb3"],
        "ratio_median": ratio,
        "ours_s_sum": sums["ours"],
        "sb3_s_sum": sums["sb3"],
        "ours_env_steps": [run.env_steps for run in runs["ours"]],
        "sb3_env_steps": [run.env_steps for run in runs["sb3"]],
        "ours_vs_random": [r.as_dict() if r else None for r in vs_random["ours"]],
        "sb3_vs_random": [r.as_dict() if r else None for r in vs_random["sb3"]],
        "ours_win_rate_median": rates["ours"],
        "sb3_win_rate_median": rates["sb3"],
        "head_to_head": [r.as_dict() if r else None for r in h2h],
        "head_to_head_sum": h2h_sum.as_dict(),
        "verdict": verdict,
    }


# ----- vector_mode: async vs sync on the slow env -----
def vector_mode_line(n_envs: int = 8, vector_steps: int = 300) -> dict[str, float]:
    """Env steps/s of one worker's vector env of ``n_envs`` 2 ms envs, acting with a
    64x64 policy forward each vector step, async vs sync."""
    import numpy as np
    import torch
    from omegaconf import OmegaConf

    from envs.config import EnvConfig
    from envs.registry import make_env_fn
    from envs.vector import close_vector_env, make_vector_env

    torch.set_num_threads(1)
    cfg = OmegaConf.structured(EnvConfig(wrappers=["step_latency"], step_latency_s=SLOW_STEP_S))
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, 2),
    )
    rates = {}
    for mode in ("sync", "async"):
        envs = make_vector_env([make_env_fn(cfg)] * n_envs, mode)
        obs, _ = envs.reset(seed=list(range(n_envs)))
        t0 = time.monotonic()
        for _ in range(vector_steps):
            with torch.no_grad():
                actions = net(torch.as_tensor(obs, dtype=torch.float32)).argmax(1).numpy()
            obs, *_ = envs.step(actions.astype(np.int64))
        rates[mode] = n_envs * vector_steps / (time.monotonic() - t0)
        close_vector_env(envs)
    return {
        "sync_steps_per_s": round(rates["sync"]),
        "async_steps_per_s": round(rates["async"]),
        "async_over_sync": round(rates["async"] / rates["sync"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="*", default=None)
    parser.add_argument("--seeds", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument(
        "--long", action="store_true", help="also the LunarLander and Connect Four cases"
    )
    parser.add_argument(
        "--env-steps", type=int, help="connect_four: env steps a side (default 100,000)"
    )
    parser.add_argument("--sb3", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--threshold", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--slow", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plain-eval", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3:
        run_sb3(args.sb3, args.seed, args.slow, not args.plain_eval, args.threshold, args.budget)
        return
    cases = CASES | LONG_CASES  # --cases may name a long one without --long
    names = args.cases or [*CASES, *(LONG_CASES if args.long else ())]
    unknown = [c for c in names if c not in cases]
    if unknown:
        parser.error(f"unknown case(s) {unknown}; allowed: {', '.join(cases)}")
    results: dict[str, Any] = {}
    vector = vector_mode_line()
    print(
        f"vector_mode, 1 worker x 8 envs of {SLOW_STEP_S * 1000:g} ms: sync "
        f"{vector['sync_steps_per_s']} env steps/s, async {vector['async_steps_per_s']} "
        f"({vector['async_over_sync']}x)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="vs_peers_") as tmp:
        for case in names:
            package = missing_extra(case)
            if package is not None:
                hint = "pip install -r requirements-bench.txt"
                print(f"{case}: skipped, its peer needs {package}: {hint}", flush=True)
                results[case] = {"skipped": f"{package} is not installed"}
                continue
            if cases[case].get("game"):
                steps = args.env_steps or cases[case]["env_steps"]
                results[case] = connect_four_case(case, args.seeds, steps, Path(tmp))
                continue
            ours: list[float | None] = []
            peer: list[float | None] = []
            plain: list[float | None] = []
            ours_ray: list[float | None] = []
            for seed in args.seeds:
                ours.append(ours_once(case, seed, Path(tmp) / f"{case}_{seed}"))
                line = f"{case} seed {seed}: ours {ours[-1]} s"
                if "ours_ray" in cases[case]:
                    tasks = Path(tmp) / f"{case}_ray_{seed}"
                    ours_ray.append(ours_once(case, seed, tasks, side="ours_ray"))
                    line += f", ours on Ray {ours_ray[-1]} s"
                peer.append(sb3_once(case, seed))
                line += f", sb3 {peer[-1]} s"
                if cases[case]["slow"]:
                    plain.append(sb3_once(case, seed, slow_eval=False))
                    line += f", sb3 evaluating on plain CartPole {plain[-1]} s"
                print(line, flush=True)
            results[case] = {
                "ours_config": cases[case]["ours"],
                "ours_s": ours,
                "sb3_s": peer,
                "ratio_median": ratio_median(ours, peer),
            }
            if plain:
                results[case]["sb3_plain_eval_s"] = plain
                results[case]["ratio_median_plain_eval"] = ratio_median(ours, plain)
            if ours_ray:
                results[case]["ours_ray_config"] = cases[case]["ours_ray"]
                results[case]["ours_ray_s"] = ours_ray
                results[case]["ratio_median_ray"] = ratio_median(ours_ray, peer)
                if plain:
                    results[case]["ratio_median_ray_plain_eval"] = ratio_median(ours_ray, plain)
    results["vector_mode"] = vector
    print(json.dumps(results))


if __name__ == "__main__":
    main()
