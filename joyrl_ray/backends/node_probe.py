"""Whether a Ray node still answers, asked of its raylet directly.

Ray takes a node as dead only after its GCS's health checks of it fail several times in a
row (by default 5 misses 3 s apart, each waiting up to 10 s). A node cut off without its
processes dying (a network partition, a frozen host, a raylet stopped) stays alive in
Ray's view all that while, its resources counted free: a role restarted at once could be
placed there again, and a restart Ray makes of a role there waits for Ray's verdict. A
role that went silent (see :mod:`joyrl_ray.run.driver`) is re-placed away from its node
at once when the node's raylet does not answer one gRPC call within
``PROBE_TIMEOUT_S``; a raylet that answers at all (even "unimplemented") is alive, and
the role is merely stuck.
"""

from __future__ import annotations

from typing import Any

HEALTH_CHECK = "/grpc.health.v1.Health/Check"  # the standard gRPC health service
PROBE_TIMEOUT_S = 2.0  # a raylet answers in milliseconds; a stopped one never


def grpc_health(hostport: str, timeout_s: float) -> Any:
    """One standard gRPC health call: None when it answered, else the grpc status code."""
    import grpc

    with grpc.insecure_channel(hostport) as channel:
        check = channel.unary_unary(HEALTH_CHECK)  # raw bytes: an empty HealthCheckRequest
        try:
            check(b"", timeout=timeout_s)
            return None
        except grpc.RpcError as exc:
            return exc.code()


def raylet_address(node_id: str) -> str | None:
    """``host:port`` of the raylet of node ``node_id``, while Ray counts the node alive."""
    import ray

    for node in ray.nodes():
        if node.get("NodeID") == node_id and node.get("Alive"):
            return f"{node['NodeManagerAddress']}:{node['NodeManagerPort']}"
    return None


def node_answers(node_id: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether node ``node_id``'s raylet answers a call within ``timeout_s``; False for a
    node Ray already counts dead (or never knew)."""
    import grpc

    address = raylet_address(node_id)
    if address is None:
        return False
    code = grpc_health(address, timeout_s)
    return code not in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE)
