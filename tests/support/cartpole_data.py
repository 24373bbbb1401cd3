"""Offline datasets the tests make themselves: CartPole-v1 driven by scripted controllers.

The expert pushes the cart toward the side the pole falls to, looking a little ahead
(right when ``angle + 0.5 * angular_velocity > 0``); alone it balances for all 500 steps of
every episode. The poor controller looks at the angle only (right when ``angle > 0``): the
pole swings ever wider and falls after about 40 steps. Each step takes a uniformly random
action with probability ``random_rate``, else the poor controller's with probability
``poor_rate``, else the expert's. Mean return per episode, measured over four datasets of
50,000 steps (seeds 0..3, 400 to 4,600 episodes each row):

===========  =========  ==========================
random_rate  poor_rate  mean return
===========  =========  ==========================
0.0          0.0        500 (expert)
0.3          0.0        319
0.45         0.0        188 (medium: :data:`MEDIUM_RATE`)
0.6          0.0        90
0.1          0.7        215 (mixed: :data:`MIXED_RATES`)
0.1          1.0        44 (poor)
===========  =========  ==========================

Uniformly random actions leave the expert's the most frequent action in every state, so
cloning the most frequent action recovers the expert from the medium dataset (behaviour
cloning reaches 500 on it). In the mixed dataset the poor controller's action is the most
frequent wherever the two disagree: cloning gives the poor controller, while learning
action values can tell the expert's steps apart (``tests/algos/test_discrete_cql.py``).
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np

from algos.base import Algorithm, Policy
from joyrl_ray.batch import WEIGHTS, batch_rows
from joyrl_ray.data.dataset_rows import folded_transitions
from joyrl_ray.run.trajectories import TrajectoryWriter
from joyrl_ray.wire.messages import Trajectory
from tests.support.recorded_episodes import record_episodes

LOOK_AHEAD = 0.5  # the expert's weight of the angular velocity against the angle
MEDIUM_RATE = 0.45  # random_rate of a medium dataset (uniform noise on the expert)
MIXED_RATES = {"random_rate": 0.1, "poor_rate": 0.7}  # a medium dataset that cloning fails


def expert_action(obs: np.ndarray) -> int:
    """The expert's action for one observation ``[x, x_dot, angle, angle_dot]``."""
    return int(obs[2] + LOOK_AHEAD * obs[3] > 0.0)


def poor_action(obs: np.ndarray) -> int:
    """The poor controller's action: it pushes by the angle alone, too late every time."""
    return int(obs[2] > 0.0)


def cartpole_episodes(
    n_steps: int, random_rate: float, seed: int, *, poor_rate: float = 0.0
) -> list[Trajectory]:
    """``n_steps`` steps on CartPole-v1 of the expert with random actions (and the poor
    controller's) mixed in, as the module says; whole episodes, but the last may be cut off.
    Each episode in the project's trajectory columns (``joyrl_ray.run.trajectories``)."""
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray) -> int:
        if rng.random() < random_rate:
            return int(rng.integers(2))
        if rng.random() < poor_rate:
            return poor_action(obs)
        return expert_action(obs)

    return record_episodes("CartPole-v1", n_steps, act, seed=seed)


def episode_returns(episodes: list[Trajectory]) -> np.ndarray:
    """The return of each episode that ended (a cut-off last one left out)."""
    return np.array(
        [float(e["rewards"].sum()) for e in episodes if e["terminated"][-1] or e["truncated"][-1]]
    )


def write_task_dir(episodes: list[Trajectory], path: Path) -> Path:
    """``path/results/trajs_0.pkl`` holding ``episodes`` (what ``collect_traj`` writes)."""
    results = Path(path) / "results"
    results.mkdir(parents=True, exist_ok=True)
    writer = TrajectoryWriter(results)
    writer.extend(episodes)
    writer.close()
    return Path(path)


def learn_offline(
    algorithm: Algorithm, episodes: list[Trajectory], updates: int, seed: int
) -> dict[str, float]:
    """``updates`` calls of ``algorithm.learn`` on uniform minibatches (``batch_size`` rows)
    of the episodes' folded transitions, as a replay shard holding the dataset samples them;
    the last update's metrics."""
    cfg = algorithm.cfg
    batch_size = int(cfg.batch_size)
    rows = folded_transitions(episodes, int(cfg.n_step), float(cfg.gamma))
    size = batch_rows(rows)
    rng = np.random.default_rng(seed)
    metrics: dict[str, float] = {}
    for _ in range(updates):
        picks = rng.integers(0, size, batch_size)
        batch = {key: value[picks] for key, value in rows.items()}
        batch[WEIGHTS] = np.ones(batch_size, np.float32)
        metrics = algorithm.learn(batch).metrics
    return metrics


def greedy_returns(policy: Policy, seeds: list[int]) -> np.ndarray:
    """The return of one CartPole-v1 episode per reset seed, acting greedily."""
    env = gym.make("CartPole-v1")
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            actions, _ = policy.act(obs[None], explore=False, env_steps=0)
            obs, reward, terminated, truncated, _ = env.step(int(actions[0]))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()
    return np.array(returns)
