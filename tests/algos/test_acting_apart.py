"""A worker's acting object holds only what acting needs, for every built-in algorithm.

Workers, evaluators and test mode build ``spec.policy_cls``; learners build
``spec.algorithm_cls``. The checks walk the acting object's attributes (through containers
and the algorithm's own helper objects) and look at what is really there: no optimizer, no
module whose parameters are not the acting modules' (a target net, a critic), no trainable
tensor of its own (SAC's ``log_alpha``). The learning object built from the same spec must
have those parts, so the check would see them if the acting object held them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from algos import ALGORITHMS, get_algorithm
from algos.base import Algorithm, Policy

CPU = torch.device("cpu")
OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
BUILT_IN = sorted(name for name in ALGORITHMS if ":" not in name)
#: Algorithms whose learning needs nothing beyond the acting modules and an optimizer.
NO_LEARNER_MODULES = {"BC"}  # behaviour cloning fits the actor alone


def action_space_for(name: str) -> gym.Space:
    policy_cls = get_algorithm(name).policy_cls
    return DISCRETE if gym.spaces.Discrete in policy_cls.action_spaces else BOX


def attributes(obj: Any, path: str = "", seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """Every value reachable from ``obj``'s attributes, through containers and the project's
    own helper objects; modules are yielded whole (their parameters are checked apart)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, dict):
        children = [(f"{path}[{k!r}]", v) for k, v in obj.items()]
    elif isinstance(obj, (list, tuple, set)):
        children = [(f"{path}[{i}]", v) for i, v in enumerate(obj)]
    elif type(obj).__module__.startswith(("algos.", "joyrl_ray.")) and hasattr(obj, "__dict__"):
        children = [(f"{path}.{k}", v) for k, v in vars(obj).items()]
    else:
        return
    for child_path, child in children:
        yield child_path, child
        if not isinstance(child, (nn.Module, torch.Tensor)):
            yield from attributes(child, child_path, seen)


def acting_object(name: str) -> Policy:
    spec = get_algorithm(name)
    return spec.policy_cls(spec.config_cls(), OBS, action_space_for(name), CPU)


def learning_object(name: str) -> Algorithm:
    spec = get_algorithm(name)
    return spec.algorithm_cls(spec.config_cls(), OBS, action_space_for(name), CPU)


def parameter_ids(modules: Any) -> set[int]:
    return {id(p) for module in modules for p in module.parameters()}


@pytest.mark.parametrize("name", BUILT_IN)
def test_acting_object_has_no_optimizer_target_net_or_critic(name: str) -> None:
    policy = acting_object(name)
    found = list(attributes(policy))
    optimizers = [path for path, value in found if isinstance(value, torch.optim.Optimizer)]
    assert not optimizers, f"{name}: optimizers on the acting object: {optimizers}"

    acting = parameter_ids(policy.acting_modules().values())
    assert acting, f"{name}: no acting parameters"
    extra_modules = [
        path
        for path, value in found
        if isinstance(value, nn.Module) and not parameter_ids([value]) <= acting
    ]
    assert not extra_modules, f"{name}: modules that acting does not use: {extra_modules}"

    own_tensors = [
        path
        for path, value in found
        if isinstance(value, torch.Tensor) and value.requires_grad and id(value) not in acting
    ]
    assert not own_tensors, f"{name}: trainable tensors outside the acting modules: {own_tensors}"

    learner_words = ("optim", "target", "critic", "alpha")
    state = [path for path, _ in found if not path.startswith(".cfg")]  # not the settings
    named = [path for path in state if any(word in path.lower() for word in learner_words)]
    assert not named, f"{name}: learner-side attributes on the acting object: {named}"


@pytest.mark.parametrize("name", BUILT_IN)
def test_learning_object_holds_what_the_acting_object_lacks(name: str) -> None:
    """The other side of the split: the learner's object has optimizers and modules beyond
    the acting ones (a target net or a critic), and trains its policy's acting modules."""
    algorithm = learning_object(name)
    found = list(attributes(algorithm))
    assert any(isinstance(value, torch.optim.Optimizer) for _, value in found), name
    acting = parameter_ids(algorithm.policy.acting_modules().values())
    modules = [value for _, value in found if isinstance(value, nn.Module)]
    if name not in NO_LEARNER_MODULES:
        assert parameter_ids(modules) - acting, f"{name}: no target net or critic on the learner"
    optimized = {
        id(p)
        for _, value in found
        if isinstance(value, torch.optim.Optimizer)
        for group in value.param_groups
        for p in group["params"]
    }
    assert acting <= optimized, f"{name}: the acting modules are not trained"


@pytest.mark.parametrize("name", BUILT_IN)
def test_checkpoint_carries_what_test_mode_loads(name: str) -> None:
    """A learner's checkpoint state loads into a fresh acting object, which then acts as the
    learner's policy does."""
    torch.manual_seed(0)
    algorithm = learning_object(name)
    torch.manual_seed(1)
    policy = acting_object(name)
    policy.load_acting_state(algorithm.state_dict())
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 4)).astype(np.float32)
    expected, _ = algorithm.policy.act(obs, explore=False, env_steps=10**9)
    actions, _ = policy.act(obs, explore=False, env_steps=10**9)
    np.testing.assert_array_equal(actions, expected)
