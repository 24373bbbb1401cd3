"""Starting a local Ray or attaching to a running cluster, with clear errors.

``ray_address: null`` starts a local Ray that the run owns and shuts down. Any other
address attaches: the project code travels as the job's ``runtime_env`` working_dir,
and on exit the run only disconnects, leaving the cluster and its other jobs running.
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
UPLOAD_EXCLUDES = [
    "tasks/",
    ".git/",
    "**/__pycache__/",
    ".pytest_cache/",
    ".ruff_cache/",
    "*.pt",
    "*.pkl",
    "*.gif",
    "events.out.tfevents.*",
    ".venv/",
    ".whl/",
    ".gl/",
]
CONNECT_TIMEOUT_S = 10.0


class ClusterError(RuntimeError):
    """The cluster cannot be reached or cannot hold the run; the message says which."""


def _tcp_reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _check_address(address: str) -> None:
    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterError(
            f"general_cfg.ray_address={address!r} is not allowed; allowed: null, auto, "
            "host:port or ray://host:port"
        )
    if not _tcp_reachable(host, int(port), CONNECT_TIMEOUT_S):
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: no Ray cluster answers at {host}:{port} "
            "(start one with `ray start --head`, or use ray_address=null for a local Ray)"
        )


def connect(address: str | None, *, num_cpus: int | None = None) -> str:
    """Start or attach to Ray: "owned" (started here), "attached", or "borrowed" (already up)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if ray.is_initialized():  # e.g. a test session's Ray: use it, leave it running
        return "borrowed"
    common: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    if address is None:
        ray.init(num_cpus=num_cpus, include_dashboard=False, **common)
        return "owned"
    _check_address(address)
    runtime_env = {"working_dir": str(PROJECT_ROOT), "excludes": UPLOAD_EXCLUDES}
    try:
        ray.init(address=address, runtime_env=runtime_env, **common)
    except ConnectionError as exc:
        raise ClusterError(f"general_cfg.ray_address={address!r}: {exc}".splitlines()[0]) from None
    except Exception as exc:  # auth failures and version mismatches come as various types
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: cannot attach ({type(exc).__name__}: {exc})".splitlines()[
                0
            ]
        ) from None
    return "attached"


def disconnect(how: str) -> None:
    """Stop a Ray this run started; for an attached driver ``ray.shutdown`` only disconnects."""
    import ray

    if how in ("owned", "attached") and ray.is_initialized():
        ray.shutdown()


def check_resources(requests: dict[str, float]) -> None:
    """Fail fast when the run asks for more than the whole cluster has."""
    import ray

    have = ray.cluster_resources()
    for name, wanted in requests.items():
        if wanted > have.get(name, 0.0) + 1e-9:
            raise ClusterError(
                f"the run asks for {wanted:g} {name} in total but the Ray cluster has "
                f"{have.get(name, 0.0):g}; lower general_cfg.worker_num_cpus / learner_num_cpus / "
                "learner_num_gpus or n_workers"
            )
