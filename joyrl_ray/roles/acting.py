"""What a multi-agent run's agents act with: the policy built from its plan (an algorithm's
acting policy, trained or fixed with a checkpoint's weights; random; a user's script), and
their observations batched as that policy takes them."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from algos import get_algorithm
from algos.base import Policy
from algos.scripted import RandomPolicy, ScriptedPolicy
from envs.observations import PackedLayout, is_nested
from joyrl_ray.multi_agent_plan import FIXED_RANDOM, PolicyPlan
from joyrl_ray.seeding import derive_seed


def acting_policy(plan: PolicyPlan, *, worker_id: int | str = 0, seed: int = 0) -> Policy:
    """``plan``'s acting policy on the CPU (an algorithm's: initial weights from ``seed``,
    or the fixed checkpoint's)."""
    if plan.fixed == FIXED_RANDOM:
        return RandomPolicy(plan.obs_space, plan.action_space)
    if plan.algo_name is None:  # a user's script, by import path
        assert plan.fixed is not None
        return ScriptedPolicy(plan.fixed, plan.obs_space, plan.action_space)
    net_seed = derive_seed(seed, "torch", worker_id, "init", plan.policy_id)
    if net_seed is not None:  # the net it acts with until the learner's weights arrive
        torch.manual_seed(net_seed)
    spec = get_algorithm(plan.algo_name)
    policy = spec.policy_cls(plan.algo, plan.obs_space, plan.action_space, torch.device("cpu"))
    if plan.weights is not None:
        policy.set_weights(plan.weights)
    return policy


class Observations:
    """One policy's agents' observations as the policy takes them (packed when nested)."""

    def __init__(self, space: gym.Space) -> None:
        self.layout = PackedLayout(space) if is_nested(space) else None
        self.dtype = space.dtype

    def one(self, obs: object) -> np.ndarray:
        if self.layout is not None:
            return self.layout.pack(obs)
        return np.asarray(obs, dtype=self.dtype)

    def many(self, observations: list[object]) -> np.ndarray:
        if self.layout is None:
            return np.asarray(observations, dtype=self.dtype)
        packed = np.empty(len(observations), dtype=self.layout.dtype)
        for i, obs in enumerate(observations):
            packed[i] = self.layout.pack(obs)
        return packed
