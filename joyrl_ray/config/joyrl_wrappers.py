"""JoyRL's ``env_cfg.wrappers`` (a list of ``{wrapper_name: ..., <its settings>}``, 0.5.1.1
on) as this project's wrapper names and env_cfg settings.

Each of JoyRL's wrappers (``joyrl/envs/gym/wrappers.py``) is one of four kinds here:

- built in: what it does is what this project does anyway (JoyRL's multi-head lists of
  one, LazyFrames to arrays, actions clipped to the space): dropped;
- a counterpart: mapped onto a wrapper of ``envs.wrappers.WRAPPERS`` or an env_cfg key;
- no counterpart, runs correctly without it: named in the run's one warning line (reward
  shaping, which changes what is learnt from but not the env's score; rendering);
- no counterpart, does not: refused (frame skipping and cropping change what the agent
  sees and how often it acts, which the preset's network and budgets are made for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joyrl_ray.config.checks import ConfigError

#: Dropped: done here without a wrapper (the first three are JoyRL's list-of-one heads,
#: CartPoleActionWrapper and GymDiscreteActionWrapper the older names of the action one).
BUILT_IN = (
    "MultiHeadObsWrapper",
    "MultiHeadActionWrapper",
    "GymDiscreteActionWrapper",
    "CartPoleActionWrapper",
    "FrameStack2Numpy",
    "ClipAction",
)
#: JoyRL's wrapper -> (wrappers here, {its setting: env_cfg key here}).
COUNTERPARTS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "GrayScaleObservation": (("grayscale",), {}),
    "ResizeObservation": (("resize",), {"shape": "resize"}),
    "FrameStack": (("frame_stack",), {"num_stack": "frame_stack"}),
    "ReshapeImageObsWrapper": (("channels_first",), {}),  # uint8 images are scaled here
    "ClipRewardEnv": ((), {}),  # env_cfg.clip_rewards
}
#: Runs correctly without it: named in the warning line.
WARNED = (
    "EpisodicLifeEnv",
    "BipedalWalkerV3TFReward",
    "ReacherDistReward",
    "InfoRewardFrame",
    "CliffWalkingWapper",
)
#: Does not: refused.
REFUSED = ("BaseSkipFrame", "SkipFrame", "CarV2SkipFrame", "CropFrame")
KNOWN = (*BUILT_IN, *COUNTERPARTS, *WARNED, *REFUSED)


def _setting(key: str, value: Any, where: str) -> Any:
    """A wrapper setting (a whole number) as the env_cfg key here takes it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}={value!r} is not allowed; allowed: a whole number >= 1")
    return [value, value] if key == "shape" else value  # ResizeObservation: a square


def translate_wrappers(
    wrappers: list[Any], where: str, ignore: Callable[[str], None]
) -> tuple[list[str], dict[str, Any]]:
    """The wrapper names here and the env_cfg settings that a JoyRL list gives; names of
    this project's own in the list are kept as they are."""
    names: list[str] = []
    settings: dict[str, Any] = {}
    for i, item in enumerate(wrappers):
        if not isinstance(item, dict):
            names.append(item)
            continue
        name = item.get("wrapper_name")
        if name not in KNOWN:
            raise ConfigError(
                f"{where}[{i}].wrapper_name={name!r} is not one of JoyRL's wrappers known here "
                f"({', '.join(KNOWN)}); this project's own are named as strings"
            )
        extra = {k: v for k, v in item.items() if k != "wrapper_name"}
        if name in REFUSED:
            raise ConfigError(
                f"{where}[{i}]: JoyRL's {name} has no counterpart here and the preset does not "
                "run as written without it (it changes what the agent sees or how often it "
                f"acts); allowed JoyRL wrappers: {', '.join((*BUILT_IN, *COUNTERPARTS))}"
            )
        if name in WARNED:
            ignore(f"{where}: {name}")
        if name not in COUNTERPARTS:
            continue
        wrapped, keys = COUNTERPARTS[name]
        for key, value in extra.items():
            if key not in keys:
                allowed = ", ".join(keys) or "none"
                raise ConfigError(
                    f"{where}[{i}].{key}: {name} takes no such setting here; allowed: {allowed}"
                )
            settings[keys[key]] = _setting(key, value, f"{where}[{i}].{key}")
        names += wrapped
        if name == "ClipRewardEnv":
            settings["clip_rewards"] = True
    return names, settings
