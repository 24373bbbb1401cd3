"""The contract between an algorithm and the runtime.

An algorithm is two classes and a config dataclass, as in Tianshou: a :class:`Policy`
that acts (only what :meth:`Policy.act` needs) and an :class:`Algorithm` that learns (the
policy it trains, plus optimizers, target nets and critics). Workers and evaluators build
the policy alone, so they cannot hold a learner-only part; each learner builds the
algorithm. The runtime moves numpy weights of the acting modules from the learner to the
workers, and hands the learner batches of columns. Nothing here imports ray: the runtime
never knows which algorithm runs, and an algorithm never knows how its data travelled.

The policy class tells the runtime what data it needs (:meth:`Policy.data_needs`): replay with
an update-to-data ratio (off-policy) or rollouts of a fixed length (on-policy).

Columns (``joyrl_ray.batch``) a worker produces for every step (first axis = batch, or
``[time, env]`` on-policy): ``obs``, ``actions``, ``rewards``, ``next_obs``,
``terminated``, ``truncated`` plus the extras returned by :meth:`Policy.act` (a recurrent
policy's ``memory``: the state each step was acted from). Off-policy
batches are n-step folded by the worker: ``rewards`` is the discounted n-step sum and
``discounts`` is ``gamma**k`` (0 after a terminal state), so every target is
``rewards + discounts * V(next_obs)``. Sampled batches also carry ``weights``
(importance sampling, ones without PER) and the learner returns new priorities from
:meth:`Algorithm.learn`.

Every gradient step goes through :meth:`Algorithm.optimize`, the one place where gradients
are averaged over data-parallel learners and clipped.

For use outside joyrl-ray, a policy returns its greedy acting as one torch module
(:meth:`Policy.acting_graph`, see :mod:`algos.export`), which the runtime traces to a file.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.export import ActingGraph, NotExportable, observation_encoder
from algos.masks import check_action_mask
from algos.observations import ObservationInput, to_tensor  # noqa: F401 (algorithms import it here)
from algos.parallel import DataParallel
from joyrl_ray.batch import Batch
from joyrl_ray.data_needs import DataNeeds


class NonFiniteGradient(FloatingPointError):
    """A gradient step refused because its gradient holds a nan or inf."""


@dataclass
class LearnResult:
    """What one update returns: scalars to log, and new priorities for prioritized replay."""

    metrics: dict[str, float] = field(default_factory=dict)
    priorities: np.ndarray | None = None


def space_name(space: type[gym.Space] | gym.Space) -> str:
    cls = space if isinstance(space, type) else type(space)
    return cls.__name__


class Policy(ABC):
    """Acting for one algorithm: only what :meth:`act` needs (the acting modules, the
    exploration schedule and its random numbers), never an optimizer, a target net or a
    critic. Workers, evaluators and test mode build this class alone."""

    #: Action spaces the algorithm can act in.
    action_spaces: ClassVar[tuple[type[gym.Space], ...]] = ()

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        self.check_spaces(obs_space, action_space)
        self.cfg = cfg
        self.obs_space = obs_space
        self.action_space = action_space
        self.device = device
        self.rng = np.random.default_rng()
        #: How observations become the networks' input (one-hot, Dict / Tuple leaves).
        self.inputs = ObservationInput(obs_space)

    def obs_tensor(self, obs: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
        """A batch of observations (``[*lead, ...]``, packed when nested) as network input."""
        return self.inputs.tensor(obs, self.device, dtype)

    def mask_tensor(self, obs: np.ndarray) -> torch.Tensor | None:
        """The legal actions of a batch of observations, bool ``[*lead, n]`` (None when the
        observations hold no ``"action_mask"``); see :mod:`algos.masks`."""
        return self.inputs.action_mask(obs, self.device)

    # ----- what the runtime asks before anything runs -----
    @classmethod
    def check_spaces(cls, obs_space: gym.Space, action_space: gym.Space) -> None:
        """Raise ValueError naming the supported spaces when the env's do not fit (an action
        mask included: it must name each action of a Discrete space)."""
        check_action_mask(obs_space, action_space)
        if cls.action_spaces and not isinstance(action_space, cls.action_spaces):
            allowed = ", ".join(space_name(s) for s in cls.action_spaces)
            raise ValueError(
                f"does not support the env's action space {action_space} "
                f"({space_name(action_space)}); it supports: {allowed}"
            )

    @classmethod
    def data_needs(cls, cfg: Any) -> DataNeeds:
        """Replay or rollouts, as the algorithm's config flavour declares it."""
        return cfg.data_needs()

    def seed(self, seed: int | None) -> None:
        """Seed the exploration draws (epsilon, action noise, sampled actions)."""
        self.rng = np.random.default_rng(seed)

    # ----- transition spec, read by the worker -----
    @property
    def gamma(self) -> float:
        return float(self.cfg.gamma)

    # ----- acting -----
    @abstractmethod
    def act(self, obs: np.ndarray, *, explore: bool, env_steps: int) -> tuple[np.ndarray, Batch]:
        """Actions for a batch of observations, and per-step extras to store with them."""

    def env_action(self, actions: np.ndarray) -> np.ndarray:
        """Map stored actions to what the env accepts (e.g. clip a Gaussian sample)."""
        return actions

    # ----- memory (recurrent policies keep one per row of the batch they act for) -----
    def reset_memory(self, n_envs: int) -> None:
        """A fresh batch of ``n_envs`` episodes starts: forget everything. Whoever acts calls
        it when it (re)builds or resets all its envs; a feed-forward policy has nothing to
        forget."""
        return None

    def episodes_ended(self, done: np.ndarray) -> None:
        """The episodes of the rows where ``done`` is true ended: each row's next act starts
        a new episode (called after every step, with terminated | truncated)."""
        return None

    def exploration_stats(self, env_steps: int) -> dict[str, float]:
        """Scalars describing exploration at ``env_steps`` (e.g. epsilon), for logs."""
        return {}

    # ----- weights (learner -> workers) -----
    @abstractmethod
    def acting_modules(self) -> dict[str, nn.Module]:
        """The modules acting needs; their weights travel to the workers."""

    def get_weights(self) -> dict[str, np.ndarray]:
        weights = {}
        for name, module in self.acting_modules().items():
            for key, tensor in module.state_dict().items():
                weights[f"{name}.{key}"] = tensor.detach().cpu().numpy().copy()
        return weights

    def set_weights(self, weights: dict[str, np.ndarray]) -> None:
        for name, module in self.acting_modules().items():
            prefix = f"{name}."
            state = {
                key[len(prefix) :]: torch.tensor(value)
                for key, value in weights.items()
                if key.startswith(prefix)
            }
            module.load_state_dict(state)

    def load_acting_state(self, state: dict[str, Any]) -> None:
        """Load only the acting modules from an :meth:`Algorithm.state_dict` (test mode)."""
        for name, module in self.acting_modules().items():
            module.load_state_dict(state[name])

    # ----- export (acting outside joyrl-ray) -----
    def observation_module(self) -> nn.Module:
        """The env's observations to the networks' input, as a module: what
        :meth:`obs_tensor` does, and the first module of every :meth:`acting_graph`.

        The one place where an observation normalizer folds into exported policies: a
        policy that normalizes its observations puts that step here, before the encoding.
        """
        if self.inputs.mask_space is not None:
            raise NotExportable(
                "the observations hold an action mask ('action_mask'), which an exported "
                "graph would ignore (it could choose illegal actions); masked policies are "
                "not exported"
            )
        return observation_encoder(self.inputs)

    def acting_graph(self) -> ActingGraph:
        """The greedy policy as one module (:class:`~algos.export.ActingGraph`): ``obs`` (and
        a recurrent policy's state) in; ``action`` as :meth:`env_action` of ``act(obs,
        explore=False)`` gives it, the algorithm's named outputs and the new state out.
        Raises :class:`~algos.export.NotExportable` saying why it cannot."""
        raise NotExportable(f"{type(self).__name__} does not define acting_graph")


class Algorithm(ABC):
    """Learning for one algorithm: the acting :class:`Policy` it trains (``self.policy``)
    plus everything only learning needs (optimizers, target nets, critics, temperatures).
    Only learners build this class."""

    #: The acting policy this algorithm trains; workers build it alone.
    policy_cls: ClassVar[type[Policy]]
    #: Learner-only attributes saved in checkpoints besides the acting modules: modules,
    #: optimizers (anything with state_dict) or tensors.
    state_attrs: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self, cfg: Any, obs_space: gym.Space, action_space: gym.Space, device: torch.device
    ) -> None:
        self.policy = self.policy_cls(cfg, obs_space, action_space, device)
        self.cfg = cfg
        self.device = device
        #: Gradient steps (off-policy) or rollout iterations (on-policy, see :meth:`learn`).
        self.updates = 0
        self.rng = np.random.default_rng()
        self.torch_rng = torch.Generator(device=device)
        self.torch_rng.seed()
        self.parallel = DataParallel()
        self.setup()

    @abstractmethod
    def setup(self) -> None:
        """Build what only learning needs (optimizers, target nets, critics ...), once,
        from ``self.cfg``, ``self.policy`` and ``self.device``."""

    @property
    def gamma(self) -> float:
        return self.policy.gamma

    def seed(self, seed: int | None) -> None:
        """Seed the learning noise (minibatch order, target smoothing, sampled actions)."""
        self.rng = np.random.default_rng(seed)
        if seed is None:
            self.torch_rng.seed()
        else:
            self.torch_rng.manual_seed(seed)

    # ----- weights (learner -> workers) -----
    def get_weights(self) -> dict[str, np.ndarray]:
        return self.policy.get_weights()

    def exploration_stats(self, env_steps: int) -> dict[str, float]:
        return self.policy.exploration_stats(env_steps)

    # ----- learning -----
    @abstractmethod
    def learn(self, batch: Batch) -> LearnResult:
        """One update: a gradient step (off-policy) or every epoch over a rollout (on-policy).

        Either way it adds one to :attr:`updates`, the count ``model_save_fre`` is in.
        """

    def optimize(
        self,
        optimizer: torch.optim.Optimizer,
        loss: torch.Tensor,
        max_grad_norm: float | None = None,
    ) -> float:
        """One gradient step of ``optimizer``'s parameters on ``loss``.

        Gradients are averaged over the data-parallel learners, then clipped to
        ``max_grad_norm`` (when set), then applied. Returns the gradient norm before
        clipping (0 when not clipping). A gradient with a nan or inf in it raises
        :class:`NonFiniteGradient` before it reaches the weights: one such step would turn
        every weight into nan, and the run would go on acting and saving them.
        """
        params = [p for group in optimizer.param_groups for p in group["params"]]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.parallel.average_gradients(params)
        grads = [p.grad for p in params if p.grad is not None]
        total = nn.utils.get_total_norm(grads)
        norm = float(total)
        if not math.isfinite(norm):
            raise NonFiniteGradient(
                f"{type(self).__name__}: the gradient is not finite (norm {norm}, loss "
                f"{float(loss.detach())}) after {self.updates} updates; the weights were not "
                "changed by it. Check the env's rewards and observations for nan/inf, or "
                "lower algo_cfg.lr"
            )
        if max_grad_norm:
            nn.utils.clip_grads_with_norm_(params, max_grad_norm, total)
        optimizer.step()
        return norm if max_grad_norm else 0.0

    def join(self, parallel: DataParallel) -> None:
        """Learn as one of several data-parallel learners: take rank 0's state."""
        self.parallel = parallel
        parallel.broadcast_(self.synced_tensors())

    def _state_items(self) -> list[tuple[str, Any]]:
        """The acting modules, then each of :attr:`state_attrs`, by checkpoint key."""
        items: list[tuple[str, Any]] = list(self.policy.acting_modules().items())
        items.extend((name, getattr(self, name)) for name in self.state_attrs)
        return items

    def synced_tensors(self) -> list[torch.Tensor]:
        """Every tensor that must be identical on all learners (parameters, buffers, ...)."""
        tensors: list[torch.Tensor] = []
        for _, value in self._state_items():
            if isinstance(value, nn.Module):
                tensors.extend(value.parameters())
                tensors.extend(value.buffers())
            elif isinstance(value, torch.Tensor):
                tensors.append(value)
        return tensors

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed learner needs: the acting modules (all test mode reads),
        each of :attr:`state_attrs`, and the update count."""
        state: dict[str, Any] = {"updates": self.updates}
        for name, value in self._state_items():
            is_tensor = isinstance(value, torch.Tensor)
            state[name] = value.detach().cpu().clone() if is_tensor else value.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from ``state``. An optimizer takes the checkpoint's moments but keeps this
        config's hyperparameters (``lr``, betas, ...): a resume with a new ``algo_cfg.lr``,
        or a population-based sweep's mutated one, trains with it (as SB3's ``load`` with
        ``custom_objects``)."""
        for name, value in self._state_items():
            if isinstance(value, torch.Tensor):
                with torch.no_grad():
                    value.copy_(torch.as_tensor(state[name]))
            elif isinstance(value, torch.optim.Optimizer):
                configured = [_hyperparameters(group) for group in value.param_groups]
                value.load_state_dict(state[name])
                for group, hyperparameters in zip(value.param_groups, configured, strict=True):
                    group.update(hyperparameters)
            else:
                value.load_state_dict(state[name])
        self.updates = int(state["updates"])


def _hyperparameters(group: dict[str, Any]) -> dict[str, Any]:
    """An optimizer param group's settings (its ``params`` left out)."""
    return {key: value for key, value in group.items() if key != "params"}


#: Devices with torch's fused Adam kernel: one kernel for every parameter, where the default
#: on CPU walks the parameters one op at a time (a DQN update on CartPole: ~25% less CPU).
_FUSED_ADAM_DEVICES = frozenset({"cpu", "cuda"})


def adam(params: Iterable[Any], **options: Any) -> torch.optim.Adam:
    """``torch.optim.Adam`` over ``params`` (tensors, or param-group dicts), fused where the
    parameters' device has the kernel: the same update either way, up to rounding."""
    groups: list[Any] = []
    tensors: list[torch.Tensor] = []
    for entry in params:
        if isinstance(entry, dict):
            entry = {**entry, "params": list(entry["params"])}
            tensors.extend(entry["params"])
        else:
            tensors.append(entry)
        groups.append(entry)
    fused = all(t.device.type in _FUSED_ADAM_DEVICES for t in tensors)
    return torch.optim.Adam(groups, fused=fused, **options)
