"""Torch modules built from the layer lists in ``algo_cfg`` (see :mod:`algos.layers`).

Conv layers come first and act on ``[C, H, W]`` images (uint8 images are scaled to [0, 1]);
the stack is flattened before the first linear layer. The output layer is added by the
caller's ``out_dim`` and has no activation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from algos.layers import ACTIVATION_NAMES, layer_field

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


def build_network(
    layers: Sequence[Any], in_shape: Sequence[int], out_dim: int | None
) -> nn.Sequential:
    """Stack the configured layers on an input of ``in_shape``; add a linear head of ``out_dim``."""
    modules: list[nn.Module] = [ScaleImage()]
    shape = tuple(int(s) for s in in_shape)
    flat = len(shape) == 1
    for layer in layers:
        layer_type = str(layer_field(layer, "layer_type")).lower()
        dim = layer_field(layer, "layer_dim")
        width = int(dim[0] if isinstance(dim, (list, tuple)) or hasattr(dim, "__len__") else dim)
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
    if out_dim is not None:
        modules.append(nn.Linear(shape[0], out_dim))
    return nn.Sequential(*modules)


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
