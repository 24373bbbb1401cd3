"""Which API an env speaks: PettingZoo's multi-agent ones (turn-based or parallel) or not.

Apart from :mod:`envs.multi_agent` so that the registry, which builds every env, can ask it
without importing the multi-agent wrapper (which builds its envs through the registry).
"""

from __future__ import annotations

import importlib.util
from typing import Any


def is_multi_agent(env: Any) -> bool:
    """Whether ``env`` is a PettingZoo env (turn-based or parallel), wrapped or not."""
    if importlib.util.find_spec("pettingzoo") is None:
        return False
    from pettingzoo import AECEnv, ParallelEnv

    return isinstance(env, AECEnv | ParallelEnv)


def is_turn_based(env: Any) -> bool:
    """Whether ``env`` (a PettingZoo env) is an ``AECEnv``: one agent acts at a time."""
    from pettingzoo import AECEnv

    return isinstance(env, AECEnv)
