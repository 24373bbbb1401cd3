"""Where this process runs, as every role reports it
(:class:`~joyrl_ray.wire.messages.Placement`)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any


def _connected_ray() -> Any:
    """The ray module when this process is connected to Ray, else None (a process that never
    imported ray is not: the one-process backend does not pay for Ray's import here)."""
    ray = sys.modules.get("ray")
    return ray if ray is not None and ray.is_initialized() else None


def node_here() -> tuple[str, str]:
    """(node id, ip) of this process: Ray's view when in Ray, this host otherwise."""
    try:
        ray = _connected_ray()
        if ray is not None:
            return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()
    except Exception:  # not in a Ray process (one-process backend, tests)
        pass
    return "local", "127.0.0.1"


def group_here() -> str:
    """The id of the placement group this process runs in, '' when none (the driver, a
    role placed freely, the one-process backend)."""
    try:
        ray = _connected_ray()
        if ray is not None:
            group = ray.util.get_current_placement_group()
            if group is not None:
                return str(group.id.hex())
    except Exception:  # not in a Ray process
        pass
    return ""


def process_started_at() -> float | None:
    """Epoch seconds this process started (from Linux's /proc, to 10 ms); None elsewhere."""
    try:
        after_name = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started_ticks = int(after_name[19])  # starttime, the stat file's 22nd field
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return time.time() - uptime_s + started_ticks / os.sysconf("SC_CLK_TCK")
