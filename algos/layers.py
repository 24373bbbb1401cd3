"""The layer lists of ``algo_cfg`` (``value_layers`` and friends), without torch.

A layer list reads like JoyRL's: ``[{layer_type: linear, layer_dim: [256], activation: relu}]``.
Config classes and validation use this module only, so checking a config never imports
torch; :mod:`algos.networks` turns the lists into modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

LAYER_TYPES = ("linear", "conv2d")
ACTIVATION_NAMES = ("relu", "tanh", "sigmoid", "leakyrelu", "elu", "none")


@dataclass
class LayerConfig:
    """One hidden layer. ``layer_dim`` is ``[units]`` for linear, ``[out_channels]`` for conv2d."""

    layer_type: str = "linear"
    layer_dim: list[int] = field(default_factory=lambda: [256])
    activation: str = "relu"
    kernel_size: int = 3
    stride: int = 1
    padding: int = 0


def mlp_layers(*dims: int, activation: str = "relu") -> list[LayerConfig]:
    """Shorthand for a default: ``mlp_layers(256, 256)``."""
    return [LayerConfig("linear", [d], activation) for d in dims]


def layers_field(*dims: int, activation: str = "relu") -> Any:
    """A dataclass field defaulting to an MLP: ``value_layers: ... = layers_field(256, 256)``."""
    return field(default_factory=lambda: mlp_layers(*dims, activation=activation))


def layer_field(layer: Any, name: str) -> Any:
    """One setting of a layer given as a dict (from yaml) or a :class:`LayerConfig`."""
    return layer[name] if isinstance(layer, dict) else getattr(layer, name)


def validate_layers(layers: Sequence[Any], key: str) -> None:
    """Raise ValueError naming ``key`` when a layer type or activation is not known."""
    for i, layer in enumerate(layers):
        layer_type = str(layer_field(layer, "layer_type")).lower()
        if layer_type not in LAYER_TYPES:
            raise ValueError(
                f"{key}[{i}].layer_type={layer_type!r} is not known; "
                f"allowed: {', '.join(LAYER_TYPES)}"
            )
        activation = str(layer_field(layer, "activation")).lower()
        if activation not in ACTIVATION_NAMES:
            raise ValueError(
                f"{key}[{i}].activation={activation!r} is not known; "
                f"allowed: {', '.join(ACTIVATION_NAMES)}"
            )
