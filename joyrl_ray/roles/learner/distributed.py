"""The learners' ``torch.distributed`` process group, created inside the learner actors.

Rank 0 names the meeting point (its node's address and a free port, see
:meth:`ProcessGroup.address_here`), the driver hands it to every rank, and each joins with
``init_process_group`` over TCP: gloo on CPU, nccl when the learners have GPUs. A
hand-made TCP rendezvous is all this needs; Ray Train's backend setup does the same
inside its own trainer API, which this runtime does not use.
"""

from __future__ import annotations

import socket
from datetime import timedelta

import torch
import torch.distributed as dist

# A collective that waits longer than this means another learner is gone: fail, so that
# the driver restarts the group, instead of waiting forever.
COLLECTIVE_TIMEOUT_S = 120


class ProcessGroup:
    """Membership of one learner in the group (``torch.distributed``'s default group)."""

    def __init__(self, rank: int, world_size: int) -> None:
        self.rank, self.world_size = rank, world_size

    @staticmethod
    def address_here() -> tuple[str, int]:
        """This node's address and a port free on it now."""
        try:
            import ray

            host = ray.util.get_node_ip_address()
        except Exception:  # outside Ray (tests, one process)
            host = "127.0.0.1"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("", 0))
            port = s.getsockname()[1]
        return host, port

    @classmethod
    def join(
        cls, host: str, port: int, *, rank: int, world_size: int, device: torch.device
    ) -> ProcessGroup:
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend,
            init_method=f"tcp://{host}:{port}",
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S),
        )
        return cls(rank, world_size)

    def leave(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
