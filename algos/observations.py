"""Observations as the networks take them: one tensor per batch, whatever the env's space.

- ``Box`` and ``MultiBinary`` observations go in as they are (uint8 images are scaled by the
  network's first module);
- ``Discrete`` and ``MultiDiscrete`` ones go in one-hot (``[..., n]``, each component's
  one-hots side by side);
- ``Dict`` and ``Tuple`` ones (packed by the runtime, see :mod:`envs.observations`) go in
  as every leaf encoded that way, flattened and concatenated in the space's order. An image
  leaf (a 3-D ``Box``) then gets the conv layers of the layer list, a copy for each image
  leaf (:class:`MultiInputEncoder`), and the linear layers act on what all leaves give
  together: the multi-input policy of Stable-Baselines3, built from the same layer lists.

A ``Dict`` observation with an ``"action_mask"`` key (PettingZoo's convention: 1 where an
action is legal) is encoded like any other leaf, so the network sees the mask too; acting
and targets read it apart (:meth:`ObservationInput.action_mask`) and apply it
(:mod:`algos.masks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from envs.observations import Leaf, is_nested, leaves

#: The key of a Dict observation that holds the legal actions (PettingZoo's name).
ACTION_MASK = "action_mask"


def action_mask_space(obs_space: gym.Space) -> gym.Space | None:
    """The action mask's space when ``obs_space`` is a Dict holding one, else None."""
    if isinstance(obs_space, spaces.Dict) and ACTION_MASK in obs_space.spaces:
        return obs_space.spaces[ACTION_MASK]
    return None


def to_tensor(
    array: np.ndarray, device: torch.device, dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Numpy to torch without a copy where possible (read-only arrays, e.g. Ray's, are copied)."""
    if isinstance(array, np.ndarray) and not array.flags.writeable:
        array = array.copy()
    tensor = torch.as_tensor(array, device=device)
    return tensor.to(dtype) if dtype is not None else tensor


def _one_hot_sizes(space: gym.Space) -> list[int] | None:
    """Category counts of a Discrete / MultiDiscrete space (None for any other)."""
    if isinstance(space, spaces.Discrete):
        return [int(space.n)]
    if isinstance(space, spaces.MultiDiscrete):
        return [int(n) for n in np.asarray(space.nvec).ravel()]
    return None


def is_image(space: gym.Space) -> bool:
    """A 3-D Box: an image, channels first or last."""
    return isinstance(space, spaces.Box) and len(space.shape) == 3


@dataclass(frozen=True)
class LeafInput:
    """Where one leaf sits in the flat input, and how it is encoded."""

    leaf: Leaf
    start: int
    width: int
    one_hot: list[int] | None  # category counts, for Discrete / MultiDiscrete leaves
    first: np.ndarray  # each component's first category (its ``start``), for one-hot

    @classmethod
    def of(cls, leaf: Leaf, start: int) -> LeafInput:
        sizes = _one_hot_sizes(leaf.space)
        width = sum(sizes) if sizes is not None else int(np.prod(leaf.space.shape))
        first = np.asarray(getattr(leaf.space, "start", 0), dtype=np.int64).ravel()
        return cls(leaf, start, width, sizes, first)

    @property
    def stop(self) -> int:
        return self.start + self.width

    def encode(self, values: np.ndarray, device: torch.device) -> torch.Tensor:
        """This leaf's values ``[*lead, *leaf shape]`` as floats ``[*lead, width]``."""
        lead = values.shape[: values.ndim - len(self.leaf.space.shape or ())]
        # A copy with strides of its own: a field of a packed row keeps the row's stride,
        # which torch refuses when it is not a multiple of the field's item size, and
        # ascontiguousarray passes a single row through as it is.
        tensor = torch.as_tensor(values.copy(order="C"), device=device)
        if self.one_hot is None:
            return tensor.reshape(*lead, -1).float()
        first = torch.as_tensor(self.first, device=device)
        index = tensor.reshape(*lead, len(self.one_hot)).long() - first
        parts = [F.one_hot(index[..., i], n) for i, n in enumerate(self.one_hot)]
        return torch.cat(parts, dim=-1).float()


class ObservationInput:
    """How a batch of observations of ``space`` becomes the one tensor a network takes."""

    def __init__(self, space: gym.Space) -> None:
        self.space = space
        self.nested = is_nested(space)
        self.leaves: list[LeafInput] = []
        start = 0
        for leaf in leaves(space):  # a plain space is one leaf
            self.leaves.append(LeafInput.of(leaf, start))
            start = self.leaves[-1].stop
        self.encoded = self.nested or self.leaves[0].one_hot is not None
        #: Shape of one row of the network's input.
        self.shape: tuple[int, ...] = (start,) if self.encoded else tuple(space.shape or ())
        #: The action mask's space (a Dict observation's ``"action_mask"``), or None.
        self.mask_space = action_mask_space(space)

    @property
    def image_leaves(self) -> list[LeafInput]:
        return [leaf for leaf in self.leaves if self.nested and is_image(leaf.leaf.space)]

    def tensor(
        self, obs: np.ndarray, device: torch.device, dtype: torch.dtype | None = None
    ) -> torch.Tensor:
        """The network input for ``obs`` (``[*lead, ...]``, packed when nested)."""
        if not self.encoded:
            return to_tensor(obs, device, dtype)
        if not self.nested:
            return self.leaves[0].encode(np.asarray(obs), device)
        return torch.cat([leaf.encode(obs[leaf.leaf.name], device) for leaf in self.leaves], -1)

    def action_mask(
        self, obs: np.ndarray, device: torch.device | None = None
    ) -> torch.Tensor | None:
        """The legal actions of ``obs`` (packed, ``[*lead]``) as bool ``[*lead, n]``; None
        without a mask. A row with no legal action (a finished game's last observation)
        comes back all legal, so that no distribution is left without support."""
        if self.mask_space is None:
            return None
        values = np.asarray(obs[ACTION_MASK])
        lead = values.shape[: values.ndim - len(self.mask_space.shape or ())]
        mask = torch.as_tensor(values.reshape(*lead, -1) != 0, device=device)
        return mask | ~mask.any(dim=-1, keepdim=True)


class MultiInputEncoder(nn.Module):
    """The flat input of a nested space with image leaves: each image leaf through its own
    conv stack (channels last are moved first; uint8 scaled to [0, 1]), every other leaf as
    it is; then all side by side."""

    def __init__(
        self,
        inputs: ObservationInput,
        image_stack: Callable[[tuple[int, ...]], tuple[nn.Module, int]],
    ) -> None:
        super().__init__()
        self.slices: list[tuple[int, int, tuple[int, ...] | None, bool, bool]] = []
        self.convs = nn.ModuleList()
        width = 0
        for leaf in inputs.leaves:
            space = leaf.leaf.space
            if not is_image(space):
                self.slices.append((leaf.start, leaf.stop, None, False, False))
                width += leaf.width
                continue
            shape = tuple(int(s) for s in space.shape)
            channels_last = shape[-1] <= 4 < shape[0]
            chw = (shape[2], shape[0], shape[1]) if channels_last else shape
            conv, out_width = image_stack(chw)
            self.convs.append(conv)
            scale = space.dtype == np.uint8
            self.slices.append((leaf.start, leaf.stop, shape, channels_last, scale))
            width += out_width
        self.width = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts, convs = [], iter(self.convs)
        for start, stop, shape, channels_last, scale in self.slices:
            part = x[..., start:stop]
            if shape is None:
                parts.append(part)
                continue
            image = part.reshape(-1, *shape)
            if channels_last:
                image = image.permute(0, 3, 1, 2)
            if scale:
                image = image / 255.0
            parts.append(next(convs)(image).reshape(*x.shape[:-1], -1))
        return torch.cat(parts, dim=-1)


def network_input_shape(inputs: ObservationInput | Sequence[int]) -> tuple[int, ...]:
    """The shape of one row that a network built on ``inputs`` takes."""
    if isinstance(inputs, ObservationInput):
        return inputs.shape
    return tuple(int(s) for s in inputs)
