"""JoyRL's network spec (``branch_layers`` / ``merge_layers``, 0.5.1.1 on) as layer lists here.

JoyRL builds a network as one branch of layers per input head, the branches' outputs
concatenated, then the merge layers. With one observation head (every gymnasium env, which
JoyRL's ``MultiHeadObsWrapper`` wraps as a list of one) that is the first branch's layers
followed by the merge layers; JoyRL skips branches beyond its inputs. Its TD3 / DDPG
critics take two heads, the observation and the action, and the critics here read
``concat(observation, action)`` straight into ``critic_layers``, so their branches must be
pass-throughs (``layer_type: none``, as JoyRL's presets write them).

Which lists a network reads follows JoyRL's own classes: a Q network (DQN family)
``branch_layers`` + ``merge_layers``; PPO's actor-critic the same pair for one shared
network unless ``independ_actor`` (then ``actor_*`` and ``critic_*``); TD3 and the other
actor-critics here ``actor_*`` and ``critic_*``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joyrl_ray.config.checks import ConfigError, unknown_message

#: JoyRL's network keys, all of them read (or set aside) here.
NETWORK_KEYS = (
    "branch_layers",
    "merge_layers",
    "actor_branch_layers",
    "actor_merge_layers",
    "critic_branch_layers",
    "critic_merge_layers",
)
PASS_THROUGH = ("none", "flatten")  # none: identity; flatten: done here before a linear layer
LAYER_TYPES = ("linear", "conv2d", *PASS_THROUGH)
#: A JoyRL layer's settings (conv2d: in_channel, out_channel, kernel_size, stride, dilation).
LAYER_KEYS = (
    "layer_type",
    "layer_size",
    "layer_dim",
    "activation",
    "in_channel",
    "out_channel",
    "kernel_size",
    "stride",
    "dilation",
)


def _layer(spec: Any, where: str) -> dict[str, Any] | None:
    """One JoyRL layer as a layer here; None for a pass-through."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be a mapping of layer settings (layer_type, ...)")
    for key in spec:
        if key not in LAYER_KEYS:
            raise ConfigError(unknown_message(str(key), f"{where}.", LAYER_KEYS))
    if "layer_type" not in spec:
        raise ConfigError(f"{where}.layer_type is missing; allowed: {', '.join(LAYER_TYPES)}")
    layer_type = str(spec["layer_type"]).lower()
    if layer_type in PASS_THROUGH:
        return None
    layer: dict[str, Any] = {"layer_type": layer_type}
    if "activation" in spec:
        layer["activation"] = str(spec["activation"]).lower()  # JoyRL lower-cases: ReLU
    if layer_type == "linear":
        size = spec.get("layer_size", spec.get("layer_dim"))
        if size is not None:
            layer["layer_dim"] = [size] if isinstance(size, int) else size
        return layer
    if layer_type != "conv2d":
        raise ConfigError(
            f"{where}.layer_type={spec['layer_type']!r} has no counterpart here; "
            f"allowed: {', '.join(LAYER_TYPES)}"
        )
    # JoyRL's defaults: kernel 4, stride 4; 'same' padding at stride 1, else none.
    kernel, stride = int(spec.get("kernel_size", 4)), int(spec.get("stride", 4))
    if int(spec.get("dilation", 1)) != 1:
        raise ConfigError(f"{where}.dilation={spec['dilation']!r} is not allowed; allowed: 1")
    if stride == 1 and kernel % 2 == 0:
        raise ConfigError(
            f"{where}.kernel_size={kernel} with stride 1 ('same' padding in JoyRL) has no "
            "counterpart here; allowed: an odd kernel_size, or stride > 1"
        )
    if "out_channel" in spec:
        layer["layer_dim"] = [int(spec["out_channel"])]
    layer.update(kernel_size=kernel, stride=stride, padding=(kernel - 1) // 2 if stride == 1 else 0)
    return layer


def _layers(specs: Any, where: str) -> list[dict[str, Any]]:
    if specs is None:
        return []
    if not isinstance(specs, list):
        raise ConfigError(f"{where} must be a list of layers ({{layer_type, layer_size, ...}})")
    layers = (_layer(spec, f"{where}[{i}]") for i, spec in enumerate(specs))
    return [layer for layer in layers if layer is not None]


def _branches(specs: Any, where: str) -> list[list[dict[str, Any]]]:
    """Each branch's layers (pass-throughs dropped)."""
    if specs is None:
        return []
    if not isinstance(specs, list):
        raise ConfigError(f"{where} must be a list of branches ({{name, layers: [...]}})")
    branches = []
    for i, branch in enumerate(specs):
        if not isinstance(branch, dict) or "layers" not in branch:
            raise ConfigError(f"{where}[{i}] must be a mapping with layers: [...] (and a name)")
        extra = [k for k in branch if k not in ("name", "layers")]
        if extra:
            raise ConfigError(unknown_message(str(extra[0]), f"{where}[{i}].", ("name", "layers")))
        branches.append(_layers(branch["layers"], f"{where}[{i}].layers"))
    return branches


def _on_observation(
    body: dict[str, Any], prefix: str, ignore: Callable[[str], None]
) -> list[dict[str, Any]] | None:
    """``{prefix}branch_layers`` + ``{prefix}merge_layers`` for a network of the observation."""
    branch_key, merge_key = f"{prefix}branch_layers", f"{prefix}merge_layers"
    if branch_key not in body and merge_key not in body:
        return None
    branches = _branches(body.pop(branch_key, None), f"algo_cfg.{branch_key}")
    for i in range(1, len(branches)):
        ignore(f"algo_cfg.{branch_key}[{i}]")  # JoyRL skips branches beyond its inputs, too
    first = branches[0] if branches else []
    return first + _layers(body.pop(merge_key, None), f"algo_cfg.{merge_key}")


def _on_observation_and_action(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """``critic_merge_layers`` for a critic of concat(observation, action)."""
    if "critic_branch_layers" not in body and "critic_merge_layers" not in body:
        return None
    where = "algo_cfg.critic_branch_layers"
    for i, branch in enumerate(_branches(body.pop("critic_branch_layers", None), where)):
        if branch:
            raise ConfigError(
                f"{where}[{i}] has layers; the critics here read concat(observation, action) "
                "straight into critic_layers, so each branch must be layer_type none: move its "
                "layers into algo_cfg.critic_merge_layers"
            )
    return _layers(body.pop("critic_merge_layers", None), "algo_cfg.critic_merge_layers")


def translate_networks(
    body: dict[str, Any],
    fields: set[str],
    on_policy: bool,
    independ_actor: bool,
    ignore: Callable[[str], None],
) -> dict[str, list[dict[str, Any]]]:
    """The layer lists here that ``body``'s (one algo_cfg layer's) JoyRL network keys give,
    by key; the JoyRL keys are removed from ``body``, and ``ignore`` gets those the
    algorithm does not read (as JoyRL's would not)."""
    lists: dict[str, list[dict[str, Any]] | None] = {}
    if "actor_layers" not in fields:  # a Q network
        if "value_layers" in fields:
            lists["value_layers"] = _on_observation(body, "", ignore)
    elif on_policy and not independ_actor:  # PPO's one actor-critic network
        shared = _on_observation(body, "", ignore)
        lists["actor_layers"] = shared
        lists["critic_layers"] = None if shared is None else list(shared)
    else:
        lists["actor_layers"] = _on_observation(body, "actor_", ignore)
        if "critic_layers" in fields:
            lists["critic_layers"] = (
                _on_observation(body, "critic_", ignore)
                if on_policy
                else _on_observation_and_action(body)
            )
    for key in NETWORK_KEYS:
        if key in body:
            body.pop(key)
            ignore(f"algo_cfg.{key}")
    return {key: layers for key, layers in lists.items() if layers is not None}
