"""The greedy acting policy as one torch module, for use outside joyrl-ray.

Each algorithm's policy returns an :class:`ActingGraph` from :meth:`Policy.acting_graph
<algos.base.Policy.acting_graph>`: a module that maps a batch of observations (and a
recurrent policy's state) to the greedy action, already in the env's action space (what
``env_action`` of the greedy action gives), plus the algorithm's named outputs (Q values,
distribution parameters). The runtime traces that module to a file
(``python -m joyrl_ray.export``) without knowing which algorithm made it.

A graph's first module maps the env's observations to the networks' input
(:meth:`Policy.observation_module <algos.base.Policy.observation_module>`); the algorithm
builds the rest on the networks' input (its ``head``). A recurrent head takes its memory
as one tensor per state (an LSTM's ``h`` and ``c``, a GRU's ``h``), each ``[batch, hidden]``,
zeros at an episode's start, and returns the memory after the step the same way.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from algos.observations import ObservationInput
from algos.recurrent import RecurrentNetwork

#: The batch size of the sample inputs: more than one, so that no exporter takes the batch
#: axis for a constant 1.
SAMPLE_BATCH = 2


class NotExportable(ValueError):
    """A policy (or an observation space) that cannot be exported; the message says why."""


@dataclass(frozen=True)
class ActingGraph:
    """``module(*inputs)`` returns the tensors named ``outputs``, in order (its ``forward``
    has one positional parameter per input). It holds a copy of the policy's modules, in
    eval mode.

    ``inputs`` is ``obs`` then a recurrent policy's ``state_in_<name>``; ``outputs`` starts
    with ``action`` and ends with the ``state_out_<name>`` of each state in. ``sample`` is
    one input of each, a batch of :data:`SAMPLE_BATCH` rows (the first axis of every input
    and output is the batch).
    """

    module: nn.Module
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    sample: tuple[torch.Tensor, ...]

    @property
    def states(self) -> tuple[str, ...]:
        """The recurrent state inputs (none for a feed-forward policy)."""
        return self.inputs[1:]

    def initial_state(self, batch: int) -> tuple[torch.Tensor, ...]:
        """Each state input at an episode's start: zeros ``[batch, ...]``."""
        return tuple(
            torch.zeros(batch, *sample.shape[1:], dtype=sample.dtype) for sample in self.sample[1:]
        )


class _Graph(nn.Module):
    """The observation module, then the algorithm's head: ``forward(obs)``."""

    def __init__(self, observation: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.observation = observation
        self.head = head

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(self.head(self.observation(obs)))


# One positional parameter per input (no ``*state``): exporters map the sample inputs and
# their dynamic batch axis to the parameters one by one.
class _GraphOneState(_Graph):
    """``forward(obs, h)``: a GRU's memory."""

    def forward(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, ...]:  # type: ignore[override]
        return tuple(self.head(self.observation(obs), h))


class _GraphTwoStates(_Graph):
    """``forward(obs, h, c)``: an LSTM's memory."""

    def forward(  # type: ignore[override]
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        return tuple(self.head(self.observation(obs), h, c))


_GRAPHS: dict[int, type[_Graph]] = {0: _Graph, 1: _GraphOneState, 2: _GraphTwoStates}


def build_graph(
    observation: nn.Module,
    head: nn.Module,
    outputs: tuple[str, ...],
    obs_space: gym.Space,
    memory: RecurrentNetwork | None = None,
) -> ActingGraph:
    """An :class:`ActingGraph` of ``head`` (which returns ``outputs``, then the new memory
    when ``memory`` is the recurrent network it steps) on ``observation``'s output."""
    obs = sample_observations(obs_space, SAMPLE_BATCH)
    names: tuple[str, ...] = ()
    state: tuple[torch.Tensor, ...] = ()
    if memory is not None:
        names = memory_names(memory)
        state = tuple(torch.zeros(SAMPLE_BATCH, memory.hidden) for _ in names)
    # A copy: the graph is put in eval mode and traced without touching the policy's modules.
    module = _GRAPHS[len(names)](copy.deepcopy(observation), copy.deepcopy(head)).eval()
    return ActingGraph(
        module,
        ("obs", *(f"state_in_{n}" for n in names)),
        (*outputs, *(f"state_out_{n}" for n in names)),
        (obs, *state),
    )


def with_normalized_observations(
    graph: ActingGraph, mean: np.ndarray, std: np.ndarray, clip: float
) -> ActingGraph:
    """``graph`` taking the env's raw observations: ``clip((obs - mean) / std, -clip, clip)``
    first, the frozen statistics a run trained with (``env_cfg.normalize_obs``), then the
    graph's own observation module."""
    module = copy.deepcopy(graph.module)
    module.observation = nn.Sequential(ObservationNormalizer(mean, std, clip), module.observation)
    return ActingGraph(module.eval(), graph.inputs, graph.outputs, graph.sample)


class ObservationNormalizer(nn.Module):
    """Observations standardized by frozen statistics and clipped, in float32."""

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, mean: np.ndarray, std: np.ndarray, clip: float) -> None:
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean, np.float32)))
        self.register_buffer("std", torch.as_tensor(np.asarray(std, np.float32)))
        self.clip = float(clip)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.clamp((obs - self.mean) / self.std, -self.clip, self.clip)


# ----- observations -----
def observation_dtype(space: gym.Space) -> torch.dtype:
    """The graph's ``obs`` dtype: uint8 for uint8 images (scaled inside), int64 for
    Discrete / MultiDiscrete (one-hot inside), float32 for every other Box."""
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return torch.int64
    if getattr(space, "dtype", None) == np.uint8:
        return torch.uint8
    return torch.float32


def sample_observations(space: gym.Space, batch: int) -> torch.Tensor:
    """``batch`` observations of ``space`` as the graph takes them (drawn from a seeded
    copy of it, so the space's own random numbers stay as they were)."""
    space = copy.deepcopy(space)
    space.seed(0)
    rows = np.stack([space.sample() for _ in range(batch)])
    return torch.as_tensor(rows).to(observation_dtype(space))


class OneHot(nn.Module):
    """Discrete / MultiDiscrete observations ``[B]`` / ``[B, *shape]`` to their one-hots side
    by side ``[B, sum(n)]``, as :class:`~algos.observations.ObservationInput` encodes them
    (comparisons with constants, which every exporter and runtime has)."""

    first: torch.Tensor
    categories: torch.Tensor

    def __init__(self, sizes: list[int], first: np.ndarray) -> None:
        super().__init__()
        self.sizes = sizes
        self.register_buffer("first", torch.tensor(np.array(first, dtype=np.int64)))
        self.register_buffer("categories", torch.arange(max(sizes), dtype=torch.int64))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        index = obs.reshape(obs.shape[0], len(self.sizes)).to(torch.int64) - self.first
        parts = [
            (index[:, i : i + 1] == self.categories[:n]).to(torch.float32)
            for i, n in enumerate(self.sizes)
        ]
        return torch.cat(parts, dim=-1)


def observation_encoder(inputs: ObservationInput) -> nn.Module:
    """What :meth:`ObservationInput.tensor` does, as a module: Box observations pass as
    they are (the networks scale uint8 images), Discrete / MultiDiscrete ones go one-hot.
    Nested (Dict / Tuple) observations are refused: the runtime packs them into numpy
    records, which an exported file cannot take."""
    if inputs.nested:
        raise NotExportable(
            f"the observation space {inputs.space} is nested (Dict / Tuple), which export does "
            "not support yet; allowed: Box, Discrete or MultiDiscrete observations (or "
            "env_cfg.wrappers: [flatten] in the training run)"
        )
    leaf = inputs.leaves[0]
    if leaf.one_hot is None:
        return nn.Identity()
    first = np.broadcast_to(leaf.first, (len(leaf.one_hot),))
    return OneHot(leaf.one_hot, first)


# ----- actions -----
class BoxClip(nn.Module):
    """Actions clipped to a Box's bounds (``np.clip`` of ``env_action``)."""

    low: torch.Tensor
    high: torch.Tensor

    def __init__(self, space: gym.spaces.Box) -> None:
        super().__init__()
        self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
        self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))

    def forward(self, actions: torch.Tensor) -> torch.Tensor:
        return torch.minimum(torch.maximum(actions, self.low), self.high)


class BoxScale(BoxClip):
    """Normalised ``[-1, 1]`` actions to a Box's bounds, then clipped (what
    :meth:`BoxScaler.to_env <algos.continuous.BoxScaler.to_env>` does)."""

    def forward(self, actions: torch.Tensor) -> torch.Tensor:
        center, half = (self.high + self.low) / 2.0, (self.high - self.low) / 2.0
        return super().forward(center + half * actions)


# ----- memory -----
def memory_names(net: RecurrentNetwork) -> tuple[str, ...]:
    """The states of a recurrent network's memory: an LSTM's ``h`` and ``c``, a GRU's ``h``."""
    return ("h", "c") if net.slots == 2 else ("h",)


def join_memory(states: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """States ``[B, H]`` each as a memory ``[B, k, H]``."""
    return torch.stack(states, dim=1)


def split_memory(memory: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A memory ``[B, k, H]`` as its states ``[B, H]`` each."""
    return tuple(memory.unbind(dim=1))
