"""Offline datasets the tests make themselves: Pendulum-v1 driven by a scripted controller,
and the loop that learns from one in-process (no runtime) and scores the greedy policy.

The controller pumps energy into the swing until the pendulum nears the top (``E = w^2/2 +
15 cos(theta)`` towards the upright value 15, since ``d/dt E = 3 u w``), then balances it
there with a PD law. Gaussian noise of std ``noise`` is added to its torque (clipped to
[-2, 2]). Mean return per 200-step episode, measured over 200 episodes each of seeds 1,
2 and 3 (``pendulum_episodes(40_000, noise, seed)``):

===========  =======================
noise (std)  mean return (seeds 1-3)
===========  =======================
0.0          -141 (-140 to -143)
0.5          -150 (-149 to -152)
1.0          -168 (-163 to -173)
1.5          -266 (-254 to -273)
2.0          -450 (-427 to -467)
===========  =======================

Actions are stored as SAC's workers store them: in env units (the torque, ``[-2, 2]``),
float32 ``[T, 1]``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from algos.base import Algorithm, Policy
from joyrl_ray.wire.messages import Trajectory
from tests.support.cartpole_data import learn_offline, write_task_dir
from tests.support.recorded_episodes import record_episodes

# learn_offline and write_task_dir serve any env's episodes: shared with the CartPole data
__all__ = [
    "controller_torque",
    "greedy_return",
    "learn_offline",
    "pendulum_episodes",
    "write_task_dir",
]

MAX_TORQUE = 2.0
UPRIGHT_ENERGY = 15.0  # w^2/2 + 15 cos(theta) at rest on top (theta'' = 15 sin + 3 u)
PUMP_GAIN, KP, KD = 1.0, 10.0, 2.0
BALANCE_COS = 0.85  # balance once cos(theta) is above this


def controller_torque(obs: np.ndarray) -> float:
    """The scripted swing-up and balance torque for one observation ``[cos, sin, w]``."""
    cos, sin, speed = (float(x) for x in obs)
    if cos > BALANCE_COS:
        torque = -(KP * np.arctan2(sin, cos) + KD * speed)
    else:
        energy = 0.5 * speed * speed + UPRIGHT_ENERGY * cos
        torque = PUMP_GAIN * (UPRIGHT_ENERGY - energy) * (1.0 if speed >= 0 else -1.0)
    return float(np.clip(torque, -MAX_TORQUE, MAX_TORQUE))


def pendulum_episodes(n_steps: int, noise: float, seed: int) -> list[Trajectory]:
    """``n_steps`` steps of the noisy controller on Pendulum-v1 (the last episode may be cut
    off), each episode in the project's trajectory columns."""
    rng = np.random.default_rng(seed)

    def act(obs: np.ndarray) -> np.ndarray:
        torque = controller_torque(obs) + noise * rng.standard_normal()
        return np.array([np.clip(torque, -MAX_TORQUE, MAX_TORQUE)], np.float32)

    return record_episodes("Pendulum-v1", n_steps, act, seed=seed)


def greedy_return(policy: Policy, seeds: range) -> float:
    """The mean return of ``policy``'s greedy actions on Pendulum-v1, one episode per seed."""
    env = gym.make("Pendulum-v1")
    returns = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        total, done = 0.0, False
        while not done:
            actions, _ = policy.act(obs[None].astype(np.float32), explore=False, env_steps=0)
            obs, reward, terminated, truncated, _ = env.step(policy.env_action(actions)[0])
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def learned_return(algorithm_cls: type[Algorithm], cfg: Any, updates: int, seed: int) -> float:
    """The greedy return (10 fixed episodes) of ``algorithm_cls`` after ``updates`` offline
    updates on 40k steps of the controller with torque noise of std 2 (seeded alike)."""
    episodes = pendulum_episodes(40_000, noise=2.0, seed=seed)
    env = gym.make("Pendulum-v1")
    torch.manual_seed(seed)
    algo = algorithm_cls(cfg, env.observation_space, env.action_space, torch.device("cpu"))
    algo.seed(seed)
    algo.policy.seed(seed)
    learn_offline(algo, episodes, updates=updates, seed=seed)
    return greedy_return(algo.policy, range(100, 110))
