"""The layer lists of ``algo_cfg`` (``value_layers`` and friends), without torch.

A layer list reads like JoyRL's: ``[{layer_type: linear, layer_dim: [256], activation: relu}]``.
Config classes and validation use this module only, so checking a config never imports
torch; :mod:`algos.networks` turns the lists into modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Recurrent layers: one per network at most, acting on the features of the layers before it,
#: step by step, with a state carried across an episode (see :mod:`algos.recurrent`).
RECURRENT_TYPES = ("lstm", "gru")
LAYER_TYPES = ("linear", "conv2d", *RECURRENT_TYPES)
ACTIVATION_NAMES = ("relu", "tanh", "sigmoid", "leakyrelu", "elu", "none")


@dataclass
class LayerConfig:
    """One hidden layer. ``layer_dim`` is ``[units]`` for linear, ``[out_channels]`` for conv2d,
    ``[hidden_size]`` for lstm and gru (their activation applies to the output, usually none)."""

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


def recurrent_index(layers: Sequence[Any]) -> int | None:
    """Where the network's recurrent layer sits in ``layers`` (None: a feed-forward network)."""
    for i, layer in enumerate(layers):
        if str(layer_field(layer, "layer_type")).lower() in RECURRENT_TYPES:
            return i
    return None


def check_recurrent_layers(cfg: Any, allowed: Sequence[str]) -> None:
    """Raise ValueError for a recurrent layer outside the layer lists of ``allowed``, or more
    than one in a list: the algorithm has no sequence learning for the others."""
    for key, layers in vars(cfg).items():
        if not key.endswith("_layers") or not layers:
            continue
        found = [
            i
            for i, layer in enumerate(layers)
            if str(layer_field(layer, "layer_type")).lower() in RECURRENT_TYPES
        ]
        if not found:
            continue
        where = f"algo_cfg.{key}[{found[0]}].layer_type"
        if key not in allowed:
            lists = ", ".join(f"algo_cfg.{k}" for k in allowed) or "none of its layer lists"
            raise ValueError(
                f"{where}: this algorithm learns no recurrent layers here; it takes lstm / gru "
                f"in: {lists}"
            )
        if len(found) > 1:
            raise ValueError(
                f"algo_cfg.{key} has {len(found)} recurrent layers; allowed: one lstm or gru"
            )
