"""Torch modules built from the layer lists in ``algo_cfg`` (see :mod:`algos.layers`).

Conv layers come first and act on ``[C, H, W]`` images (uint8 images are scaled to [0, 1]);
the stack is flattened before the first linear layer. A network is built on an
observation space's input (:class:`algos.observations.ObservationInput`: one-hot for
discrete observations, every leaf of a Dict / Tuple) or on a plain shape. The output layer
is added by the caller's ``out_dim`` and has no activation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from algos.layers import ACTIVATION_NAMES, RECURRENT_TYPES, layer_field
from algos.observations import MultiInputEncoder, ObservationInput, network_input_shape

ACTIVATIONS: dict[str, type[nn.Module] | None] = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "sigmoid": nn.Sigmoid,
    "leakyrelu": nn.LeakyReLU,
    "elu": nn.ELU,
    "none": None,
}
assert tuple(ACTIVATIONS) == ACTIVATION_NAMES


class ScaleImage(nn.Module):
    """uint8 pixels to floats in [0, 1]; floats pass through."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float() / 255.0 if x.dtype == torch.uint8 else x.float()


def build_body(
    layers: Sequence[Any], inputs: ObservationInput | Sequence[int]
) -> tuple[nn.Sequential, int]:
    """The configured layers on ``inputs`` (an observation space's input, or a plain shape),
    without a head, and the width of what they give. On a nested space with image leaves
    the conv layers go to each image leaf (:class:`MultiInputEncoder`), the rest on what
    all give."""
    if isinstance(inputs, ObservationInput) and inputs.image_leaves:
        n_conv = _leading_convs(layers)
        convs, rest = layers[:n_conv], layers[n_conv:]

        def image_stack(chw: tuple[int, ...]) -> tuple[nn.Module, int]:
            modules, shape = stack_layers(convs, chw)
            return nn.Sequential(*modules), shape[0]

        encoder = MultiInputEncoder(inputs, image_stack)
        modules, shape = stack_layers(rest, (encoder.width,))
        return nn.Sequential(encoder, *modules), shape[0]
    modules, shape = stack_layers(layers, network_input_shape(inputs))
    return nn.Sequential(ScaleImage(), *modules), shape[0]


def build_network(
    layers: Sequence[Any], inputs: ObservationInput | Sequence[int], out_dim: int | None
) -> nn.Sequential:
    """Stack the configured layers on ``inputs`` (:func:`build_body`); add a linear head of
    ``out_dim``."""
    body, width = build_body(layers, inputs)
    return nn.Sequential(*body, *head_layers((width,), out_dim))


def _leading_convs(layers: Sequence[Any]) -> int:
    types = [str(layer_field(layer, "layer_type")).lower() for layer in layers]
    return next((i for i, t in enumerate(types) if t != "conv2d"), len(types))


def head_layers(shape: tuple[int, ...], out_dim: int | None) -> list[nn.Module]:
    return [] if out_dim is None else [nn.Linear(shape[0], out_dim)]


class DuelingHead(nn.Module):
    """Q = V + A - mean(A) over features of ``width`` (Wang et al. 2016): a value stream and
    an advantage stream, the advantages centred so that V is identified."""

    def __init__(self, width: int, n_actions: int) -> None:
        super().__init__()
        self.value = nn.Linear(width, 1)
        self.advantage = nn.Linear(width, n_actions)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(dim=-1, keepdim=True)


def stack_layers(
    layers: Sequence[Any], in_shape: Sequence[int]
) -> tuple[list[nn.Module], tuple[int, ...]]:
    """The modules of ``layers`` on an input of ``in_shape``, flattened at the end, and the
    width they give."""
    modules: list[nn.Module] = []
    shape = tuple(int(s) for s in in_shape)
    flat = len(shape) == 1
    for layer in layers:
        layer_type = str(layer_field(layer, "layer_type")).lower()
        dim = layer_field(layer, "layer_dim")
        width = int(dim[0] if isinstance(dim, (list, tuple)) or hasattr(dim, "__len__") else dim)
        if layer_type in RECURRENT_TYPES:
            raise ValueError(f"a {layer_type} layer needs a recurrent network (algos.recurrent)")
        if layer_type == "conv2d":
            if flat:
                raise ValueError(
                    "conv2d layers must come before linear layers, on image observations"
                )
            conv = nn.Conv2d(
                shape[0],
                width,
                kernel_size=int(layer_field(layer, "kernel_size")),
                stride=int(layer_field(layer, "stride")),
                padding=int(layer_field(layer, "padding")),
            )
            modules.append(conv)
            with torch.no_grad():
                shape = tuple(conv(torch.zeros(1, *shape)).shape[1:])
        else:
            if not flat:
                modules.append(nn.Flatten())
                shape = (int(np.prod(shape)),)
                flat = True
            modules.append(nn.Linear(shape[0], width))
            shape = (width,)
        activation = ACTIVATIONS[str(layer_field(layer, "activation")).lower()]
        if activation is not None:
            modules.append(activation())
    if not flat:
        modules.append(nn.Flatten())
        shape = (int(np.prod(shape)),)
    return modules, shape


def output_dim(network: nn.Sequential) -> int:
    """Width of the last linear layer."""
    linears = [m for m in network if isinstance(m, nn.Linear)]
    return linears[-1].out_features


def soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    """Polyak averaging: target <- (1 - tau) * target + tau * source."""
    targets, sources = list(target.parameters()), list(source.parameters())
    if len(targets) != len(sources):
        raise ValueError(f"soft_update: {len(targets)} target tensors, {len(sources)} source")
    with torch.no_grad():  # two multi-tensor ops, not two per tensor: the same arithmetic
        torch._foreach_mul_(targets, 1.0 - tau)
        torch._foreach_add_(targets, sources, alpha=tau)
