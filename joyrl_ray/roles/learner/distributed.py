"""The learners' ``torch.distributed`` process group, created inside the learner actors.

Rank 0 opens the meeting point (a :class:`Rendezvous`: its node's address and a port its
TCP store holds), the driver hands the address to every rank, and each joins with
``init_process_group`` over that store: gloo on CPU, nccl when the learners have GPUs. A
hand-made TCP rendezvous is all this needs; Ray Train's backend setup does the same
inside its own trainer API, which this runtime does not use.
"""

from __future__ import annotations

from datetime import timedelta

import torch
import torch.distributed as dist

# A collective that waits longer than this means another learner is gone: fail, so that
# the driver restarts the group, instead of waiting forever.
COLLECTIVE_TIMEOUT_S = 120


def _node_address() -> str:
    try:
        import ray

        return ray.util.get_node_ip_address()
    except Exception:  # outside Ray (tests, one process)
        return "127.0.0.1"


class Rendezvous:
    """Rank 0's side of the meeting point: a TCP store listening on a port it bound itself
    (port 0) and holds until the group is gone. A port found free, let go and bound again
    later could be taken by another process in between."""

    def __init__(self) -> None:
        host = _node_address()
        self.store = dist.TCPStore(
            host,
            0,
            is_master=True,
            wait_for_workers=False,  # the other ranks join later, through the driver
            timeout=timedelta(seconds=COLLECTIVE_TIMEOUT_S),
        )
        self.address: tuple[str, int] = (host, self.store.port)


class ProcessGroup:
    """Membership of one learner in the group (``torch.distributed``'s default group)."""

    def __init__(self, rank: int, world_size: int, store: dist.Store) -> None:
        self.rank, self.world_size = rank, world_size
        self.store = store  # rank 0's holds the port: kept as long as the group

    @classmethod
    def join(
        cls,
        address: tuple[str, int],
        *,
        rank: int,
        world_size: int,
        device: torch.device,
        rendezvous: Rendezvous | None = None,
    ) -> ProcessGroup:
        """Join the group meeting at ``address``; rank 0 passes the ``rendezvous`` it opened
        there, every other rank connects to it."""
        timeout = timedelta(seconds=COLLECTIVE_TIMEOUT_S)
        if rendezvous is not None:
            store: dist.Store = rendezvous.store
        else:
            store = dist.TCPStore(*address, is_master=False, timeout=timeout)
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(
            backend, store=store, rank=rank, world_size=world_size, timeout=timeout
        )
        return cls(rank, world_size, store)

    def leave(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
