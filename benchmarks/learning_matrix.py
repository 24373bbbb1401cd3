"""The learning matrix: every claim of the README's algorithm table, run to its threshold.

Each case is the real ``python main.py --yaml configs/<name>.yaml`` with the case's
overrides and seed, a budget of env steps (``max_env_steps``) and a threshold on the best
online evaluation (10 episodes); the run stops at the first evaluation that reaches it.
A case passes when that evaluation came within the budget. One line per case and seed,
then one JSON object: ``{"<case>": {"<seed>": {"solved_at": n | null, "best": x,
"process_s": s}}}``; the exit code is 1 when a case failed.

    python benchmarks/learning_matrix.py                        # every case, seed 1
    python benchmarks/learning_matrix.py --cases ray-sac-pendulum --seeds 1 2 3
    python benchmarks/learning_matrix.py --list                 # the cases and which CI runs

Why a benchmark and not tests: the whole matrix takes about an hour of a 2-core machine.
CI (``tests/learning/``) runs the cases marked ``ci``: one learning run per algorithm in one
process, one per data flow on Ray (replay, synchronous and asynchronous rollouts, each
with two learners), and the policies with memory. The rest (each algorithm again on Ray,
its variants, the observation kinds) run here, before a release and after a change to an
algorithm or a flow. The figures go to ``benchmarks/RESULTS.md``.
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

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class LearningCase:
    """One claim: ``config`` (a yaml under configs/) on ``backend`` reaches ``threshold``
    within ``budget`` env steps. ``ci``: tests/learning/ runs it, on every commit
    (``bash .ci/run``), or with ``release`` only in the release check (``bash .ci/release``:
    the long learning checks on Ray)."""

    config: str
    backend: str
    threshold: float
    budget: int
    overrides: tuple[str, ...] = ()
    ci: bool = False
    ci_seed: int = 1  # the seed test_ray_learning.py runs it with (the matrix: --seeds)
    release: bool = False

    def args(self) -> tuple[str, ...]:
        """The command-line overrides of the run (after ``--yaml``), without the seed."""
        workers = ("general_cfg.n_workers=2",) if self.backend == "ray" else ()
        return (
            f"general_cfg.mp_backend={self.backend}",
            *workers,
            f"general_cfg.max_env_steps={self.budget}",
            f"general_cfg.reward_threshold={self.threshold:g}",
            *self.overrides,
        )


SHARDS_2 = "general_cfg.n_replay_shards=2"  # worker k -> shard k mod 2, sampled round robin
LEARNERS_2 = "general_cfg.n_learners=2"
SEED_2 = "general_cfg.seed=2"


def _dqn_variant(algo: str, *extra: str) -> tuple[str, ...]:
    return (SEED_2, f"general_cfg.algo_name={algo}", *extra)


#: id -> case. Ids start with the backend.
CASES: dict[str, LearningCase] = {
    # ----- one process: each algorithm learns (CI) -----
    # Each budget is at least twice the env steps the slowest of seeds 1-3 took on this
    # 2-core machine (in a comment where it is not the seed's own run): a seeded run is
    # reproducible on one CPU, not across CPUs, whose float kernels differ, so another
    # machine's run is as good as another seed. A run stops at its threshold: a wide budget
    # costs CI nothing when the run learns as it does here.
    # TD3 seeds 1-3: 8.0k, 7.1k, 6.1k; SAC 5.1k each; PPO on CartPole 10k, 37k, 25k; PPO
    # (Gaussian) on Pendulum 25k each.
    "single-td3-pendulum": LearningCase("pendulum_td3", "single", -200.0, 20_000, ci=True),
    "single-sac-pendulum": LearningCase("pendulum_sac", "single", -200.0, 12_000, ci=True),
    "single-ppo-cartpole": LearningCase("cartpole_ppo", "single", 475.0, 80_000, ci=True),
    "single-ppo-gaussian-pendulum": LearningCase(
        "pendulum_ppo", "single", -300.0, 100_000, ci=True
    ),
    # The DQN variants, on seed 2, to 200. Seeds 1-3: PER 5.1k, 9.2k, 3.1k; DoubleDQN +
    # 3-step 11k, 3.1k, 7.2k; DuelingDQN + PER + 3-step 3.1k, 3.1k, 17k.
    "single-dqn-per": LearningCase(
        "cartpole_dqn", "single", 200.0, 20_000, (SEED_2, "algo_cfg.buffer_type=PER"), ci=True
    ),
    "single-doubledqn-nstep3": LearningCase(
        "cartpole_dqn",
        "single",
        200.0,
        24_000,
        _dqn_variant("DoubleDQN", "algo_cfg.n_step=3"),
        ci=True,
    ),
    "single-duelingdqn-per-nstep3": LearningCase(
        "cartpole_dqn",
        "single",
        200.0,
        36_000,
        _dqn_variant("DuelingDQN", "algo_cfg.buffer_type=PER", "algo_cfg.n_step=3"),
        ci=True,
    ),
    "single-slow-cartpole-ppo-async-envs": LearningCase(
        "slow_cartpole_ppo_single", "single", 475.0, 100_000, ci=True
    ),
    # PPO with an LSTM on CartPole without its velocities (seeds 1-3 at 84k, 87k and 56k
    # env steps; the Ray layout of the same config is below; each commit's CI runs the
    # recurrent Ray flows as PPO + GRU and APPO + GRU).
    "single-ppo-lstm-cartpole-novel": LearningCase(
        "cartpole_novel_ppo_lstm_single", "single", 475.0, 180_000, ci=True
    ),
    # APPO with an LSTM on Pendulum without its angular velocity: asynchronous rollouts
    # and V-trace over sequences (seeds 1-3 at 82k, 74k and 98k env steps; the Ray layout
    # of the same config is below).
    "single-appo-lstm-pendulum-novel": LearningCase(
        "pendulum_novel_appo_lstm", "single", -300.0, 200_000, ci=True
    ),
    # R2D2 in one process (the shipped config, two replay shards) with 64 sequences per
    # update, to a modest return: seeds 1-3 reached 150 at 27.4k, 37.8k and 29.3k env steps
    # (seed 2 was near 30 until 35k).
    "single-r2d2-cartpole-novel-to-150": LearningCase(
        "cartpole_novel_r2d2", "single", 150.0, 80_000, ("algo_cfg.batch_size=64",), ci=True
    ),
    # Action masks (envs/masked.py): each step a new set of legal actions, the best legal
    # one pays 1 and an illegal one -1, so the best return is 8 and a policy that ignores
    # the mask falls short of it. Seeds 1-3 all reach 8 at the first evaluation: DQN at
    # 1280 env steps, PPO at 1024 (5-6 s each).
    "single-dqn-masked-choice": LearningCase("masked_choice_dqn", "single", 7.5, 10_000, ci=True),
    "single-ppo-masked-choice": LearningCase("masked_choice_ppo", "single", 7.5, 20_000, ci=True),
    # ----- one process: the rest -----
    "single-dqn-cartpole": LearningCase("cartpole_dqn", "single", 475.0, 60_000),
    "single-appo-cartpole": LearningCase("cartpole_appo", "single", 475.0, 100_000),
    # ----- Ray, one case per data flow, two learners each (CI) -----
    # The replay flow to 200 (seeds 1-3 at 12k, 4.1k and 16k env steps): CI shows it
    # learns and accounts for every row; the solve to 475 is the case after it. PPO with
    # two learners: seeds 1-3 at 14k, 8.2k and 23k.
    "ray-per-2-shards-2-learners": LearningCase(
        "cartpole_dqn_per", "ray", 200.0, 32_000, (SHARDS_2, LEARNERS_2), ci=True
    ),
    "ray-per-2-shards-2-learners-475": LearningCase(
        "cartpole_dqn_per", "ray", 475.0, 40_000, (SHARDS_2, LEARNERS_2)
    ),
    "ray-ppo-2-learners": LearningCase(
        "cartpole_ppo", "ray", 475.0, 50_000, (LEARNERS_2,), ci=True
    ),
    # IMPALA with two learners: seeds 1-3 at 13k, 19k and 15k.
    "ray-impala-2-learners": LearningCase(
        "cartpole_impala", "ray", 475.0, 40_000, (LEARNERS_2,), ci=True
    ),
    # ----- Ray, policies with memory (CI) -----
    # A cue recalled after 5 blank steps, once per rollout flow: PPO + GRU (synchronous
    # rollouts), APPO + GRU (asynchronous rollouts, V-trace over sequences); seeds 1-3 at
    # 2.6k-3.8k and 4.1k-5.4k env steps.
    "ray-ppo-gru-cue-recall": LearningCase("cue_recall_ppo_lstm", "ray", 0.9, 20_000, ci=True),
    "ray-appo-gru-cue-recall": LearningCase("cue_recall_appo_gru", "ray", 0.9, 20_000, ci=True),
    # ----- Ray: every algorithm and variant again, the observation kinds -----
    "ray-dqn-cartpole": LearningCase("cartpole_dqn", "ray", 475.0, 60_000),
    "ray-dqn-cartpole-2-shards": LearningCase("cartpole_dqn", "ray", 475.0, 60_000, (SHARDS_2,)),
    "ray-dqn-per-cartpole-2-shards": LearningCase(
        "cartpole_dqn_per", "ray", 475.0, 60_000, (SHARDS_2,)
    ),
    "ray-doubledqn-per-cartpole": LearningCase(
        "cartpole_dqn_per", "ray", 475.0, 60_000, ("general_cfg.algo_name=DoubleDQN",)
    ),
    "ray-duelingdqn-nstep3-cartpole": LearningCase(
        "cartpole_dqn",
        "ray",
        475.0,
        60_000,
        ("general_cfg.algo_name=DuelingDQN", "algo_cfg.n_step=3"),
    ),
    "ray-td3-pendulum": LearningCase("pendulum_td3", "ray", -200.0, 40_000),
    "ray-sac-pendulum": LearningCase("pendulum_sac", "ray", -200.0, 30_000),
    "ray-ppo-cartpole": LearningCase("cartpole_ppo", "ray", 475.0, 50_000),
    "ray-appo-cartpole": LearningCase("cartpole_appo", "ray", 475.0, 100_000),
    "ray-appo-pendulum": LearningCase("pendulum_appo", "ray", -300.0, 300_000),
    "ray-impala-cartpole": LearningCase("cartpole_impala", "ray", 475.0, 100_000),
    "ray-appo-2-learners": LearningCase("cartpole_appo", "ray", 475.0, 40_000, (LEARNERS_2,)),
    "ray-dqn-goalgrid-dict": LearningCase("goalgrid_dqn", "ray", 0.9, 50_000),
    "ray-ppo-goalgrid-dict": LearningCase("goalgrid_ppo", "ray", 0.9, 100_000),
    "ray-dqn-frozenlake-discrete": LearningCase("frozenlake_dqn", "ray", 1.0, 30_000),
    "ray-slow-cartpole-ppo-async-envs": LearningCase("slow_cartpole_ppo", "ray", 475.0, 100_000),
    # PPO with an LSTM on Ray (synchronous rollouts: reproducible), in the release check
    # with seed 3: it solves at 51,200 env steps (seed 2 at 64,000, seed 1 at 133,120).
    "ray-ppo-lstm-cartpole-novel": LearningCase(
        "cartpole_novel_ppo_lstm", "ray", 475.0, 150_000, ci=True, ci_seed=3, release=True
    ),
    "ray-appo-lstm-pendulum-novel": LearningCase(
        "pendulum_novel_appo_lstm", "ray", -300.0, 300_000
    ),
    # Free-running, not a test: which weights a worker acts with and which rows a shard
    # holds when the learner samples depend on timing, so a run is not reproducible, and
    # this one misses now and then. Seed 2, four runs as test_ray_learning.py runs them (two
    # side by side): 475 at 62k, 43k and 45k env steps, and once not within 150k (420 at
    # best, at 99k).
    "ray-r2d2-cartpole-novel-2-shards": LearningCase("cartpole_novel_r2d2", "ray", 475.0, 150_000),
    # The same in lockstep (general_cfg.lockstep): the single backend's run on the same
    # actors, bit for bit, so a seed pins it. Seed 3: 475 at 39,808 env steps (500.0), the
    # same on either backend; seeds 1-6 on the single backend: 39.6k, 127k, 39.8k, 90k,
    # 69k and 69k env steps.
    "ray-r2d2-cartpole-novel-2-shards-lockstep": LearningCase(
        "cartpole_novel_r2d2",
        "ray",
        475.0,
        150_000,
        ("general_cfg.lockstep=true",),
        ci=True,
        ci_seed=3,
        release=True,
    ),
    # The release check's R2D2 run: the same config to 200, with 64 sequences per update
    # (half the CPU of an update; evaluating every 250 updates, seeds 1-6 reached 200 at
    # 26k-48k env steps with it, and 475 at 60k-143k).
    "ray-r2d2-cartpole-novel-2-shards-to-200": LearningCase(
        "cartpole_novel_r2d2",
        "ray",
        200.0,
        80_000,
        ("algo_cfg.batch_size=64",),
        ci=True,
        release=True,
    ),
    # ----- several agents in one env (PettingZoo; tests/learning/test_multi_agent_learning.py
    # runs the first and the third with budgets of their own) -----
    # Tic-tac-toe: the threshold is the mean return against uniform-random play, half the
    # games in each seat (an untrained masked policy scores about 0.55).
    "ray-dqn-tictactoe-self-play": LearningCase("tictactoe_dqn", "ray", 0.8, 100_000),
    "ray-ppo-tictactoe-vs-random": LearningCase("tictactoe_ppo", "ray", 0.75, 100_000),
    # simple_spread: the mean episode return per agent; random play scores -27.7.
    "single-ppo-simple-spread-shared": LearningCase(
        "simple_spread_ppo_shared", "single", -20.0, 100_000
    ),
    "ray-ppo-simple-spread-per-agent": LearningCase(
        "simple_spread_ppo_per_agent", "ray", -20.0, 200_000
    ),
}


def run_case(case: LearningCase, seed: int, tasks_dir: Path) -> dict:
    """One run of ``case`` at ``seed``: the env steps of its first evaluation at or above the
    threshold (None: not within the budget), its best evaluation, whole-process seconds."""
    started = time.time()
    cmd = [
        sys.executable,
        str(ROOT / "main.py"),
        "--yaml",
        str(ROOT / "configs" / f"{case.config}.yaml"),
        *case.args(),
        f"general_cfg.seed={seed}",
        f"general_cfg.tasks_dir={tasks_dir}",
        "general_cfg.progress=false",
        "general_cfg.save_fig=false",
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    process_s = round(time.time() - started, 1)
    if result.returncode != 0:
        return {"error": f"exit {result.returncode}: {result.stderr.strip()[-300:]}"}
    task = Path(result.stdout.strip().splitlines()[-1])
    summary = json.loads((task / "results" / "summary.json").read_text())
    history = summary["eval_history"]
    solving = [e["env_steps"] for e in history if e["return_mean"] >= case.threshold]
    solved_at = solving[0] if solving and solving[0] <= case.budget else None
    best = max((e["return_mean"] for e in history), default=None)
    return {"solved_at": solved_at, "best": best, "process_s": process_s}


def _shown(outcome: dict, case: LearningCase) -> str:
    if "error" in outcome:
        return outcome["error"]
    best = "none" if outcome["best"] is None else f"{outcome['best']:.1f}"
    if outcome["solved_at"] is None:
        return f"NOT solved within {case.budget} env steps (best {best}), {outcome['process_s']} s"
    return f"solved at {outcome['solved_at']} env steps of {case.budget}, {outcome['process_s']} s"


def _tier(case: LearningCase) -> str:
    """Which CI check runs ``case``: each commit's, the release check, or neither."""
    if not case.ci:
        return ""
    return "release" if case.release else "ci"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", nargs="*", type=int, default=[1])
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    args = parser.parse_args()
    if args.list:
        for name, case in CASES.items():
            print(f"{name:40s} {_tier(case):8s} {case.config} {' '.join(case.overrides)}")
        return
    results: dict[str, dict[str, dict]] = {}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.cases:
            case = CASES[name]
            results[name] = {}
            for seed in args.seeds:
                outcome = run_case(case, seed, Path(tmp) / f"{name}-{seed}")
                results[name][str(seed)] = outcome
                failed |= outcome.get("solved_at") is None
                print(f"{name:36s} seed {seed}: {_shown(outcome, case)}", flush=True)
    print(json.dumps(results))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
