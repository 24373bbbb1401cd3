"""Where the roles run on a Ray cluster, and whether the cluster can hold them at all.

- Learners: one placement group, one bundle per learner (``learner_num_cpus``,
  ``learner_num_gpus``, ``learner_resources``), packed onto one node by default
  (``learner_placement``), so the ranks sit together for their gradient exchange.
- Workers: spread over the nodes by default (``worker_placement``), with
  ``worker_resources`` to pin them to node types.
- The DataServer: on the driver's node (it answers the driver's calls most often), or
  wherever ``data_server_resources`` says.

:func:`check_fits` runs before any actor starts: a request that no node can hold is one
line (what was asked, what the largest node has) and exit code 2, never a silent hang.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joyrl_ray.general_config import GeneralConfig


def node_here() -> tuple[str, str]:
    """(node id, ip) of this process: Ray's view when in Ray, this host otherwise."""
    try:
        import ray

        if ray.is_initialized():
            return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address()
    except Exception:  # not in a Ray process (one-process backend, tests)
        pass
    return "local", "127.0.0.1"


@dataclass
class Node:
    node_id: str
    ip: str
    resources: dict[str, float]


@dataclass
class Requests:
    """Per-actor resource requests of a run."""

    worker: dict[str, float]
    learner: dict[str, float] | None  # None in test mode
    n_workers: int
    n_learners: int


class ClusterFitError(ValueError):
    """A request the cluster can never hold; the message says what and what there is."""


def alive_nodes() -> list[Node]:
    import ray

    return [
        Node(n["NodeID"], n["NodeManagerAddress"], dict(n["Resources"]))
        for n in ray.nodes()
        if n.get("Alive")
    ]


def _fits(request: dict[str, float], resources: dict[str, float]) -> bool:
    return all(resources.get(k, 0.0) + 1e-9 >= v for k, v in request.items() if v > 0)


def _shown(request: dict[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in request.items() if v > 0) or "nothing"


def _largest(nodes: list[Node], request: dict[str, float]) -> str:
    keys = [k for k, v in request.items() if v > 0] or ["CPU"]
    best = max(nodes, key=lambda n: tuple(n.resources.get(k, 0.0) for k in keys))
    have = {k: best.resources.get(k, 0.0) for k in keys}
    return f"the largest node ({best.ip}) has {_shown(have) if any(have.values()) else 'none'}"


def check_fits(requests: Requests, nodes: list[Node]) -> None:
    """Raise ClusterFitError unless every actor fits some node and all fit the cluster."""
    roles = [("worker", requests.worker, requests.n_workers)]
    if requests.learner is not None:
        roles.append(("learner", requests.learner, requests.n_learners))
    for role, request, _ in roles:
        if not any(_fits(request, n.resources) for n in nodes):
            raise ClusterFitError(
                f"each {role} asks for {_shown(request)}, which no node of the Ray cluster "
                f"can hold: {_largest(nodes, request)}; lower general_cfg.{role}_num_cpus"
                f" / {role}_num_gpus / {role}_resources"
            )
    total: dict[str, float] = {}
    for _, request, count in roles:
        for key, value in request.items():
            total[key] = total.get(key, 0.0) + value * count
    have: dict[str, float] = {}
    for node in nodes:
        for key, value in node.resources.items():
            have[key] = have.get(key, 0.0) + value
    for key, wanted in total.items():
        if wanted > have.get(key, 0.0) + 1e-9:
            raise ClusterFitError(
                f"the run asks for {wanted:g} {key} in total but the Ray cluster has "
                f"{have.get(key, 0.0):g}; lower general_cfg.n_workers / n_learners or the "
                "per-role requests (worker_num_cpus, learner_num_cpus, learner_num_gpus)"
            )


def worker_cpus(general: GeneralConfig, nodes: list[Node], train: bool) -> float:
    """CPUs per worker: as configured, or an even share of what the learners leave."""
    if general.worker_num_cpus is not None:
        return float(general.worker_num_cpus)
    total = sum(n.resources.get("CPU", 0.0) for n in nodes)
    learners = general.n_learners * general.learner_num_cpus if train else 0.0
    share = (total - learners) / general.n_workers
    return max(min(1.0, round(share, 2)), 0.01)


def make_requests(general: GeneralConfig, nodes: list[Node], train: bool) -> Requests:
    worker = {"CPU": worker_cpus(general, nodes, train), **general.worker_resources}
    learner = None
    if train:
        learner = {
            "CPU": general.learner_num_cpus,
            "GPU": general.learner_num_gpus,
            **general.learner_resources,
        }
    return Requests(worker, learner, general.n_workers, general.n_learners)


def actor_options(request: dict[str, float]) -> dict[str, Any]:
    """``ray.remote(...).options`` for a resource request."""
    custom = {k: v for k, v in request.items() if k not in ("CPU", "GPU") and v > 0}
    options: dict[str, Any] = {"num_cpus": request.get("CPU", 0.0)}
    if request.get("GPU", 0.0) > 0:
        options["num_gpus"] = request["GPU"]
    if custom:
        options["resources"] = custom
    return options


def worker_strategy(general: GeneralConfig) -> str:
    return "SPREAD" if general.worker_placement == "spread" else "DEFAULT"


def data_server_options(general: GeneralConfig) -> dict[str, Any]:
    """Pin the DataServer to the driver's node unless resources say where it goes."""
    if general.data_server_resources:
        return {"resources": dict(general.data_server_resources)}
    node_id, _ = node_here()
    if node_id == "local":  # e.g. a Ray Client driver, which is no node of the cluster
        return {}
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}


def learner_group(general: GeneralConfig, request: dict[str, float]) -> Any:
    """A placement group with one bundle per learner."""
    from ray.util.placement_group import placement_group

    bundle = {k: v for k, v in request.items() if v > 0}
    strategy = "PACK" if general.learner_placement == "pack" else "SPREAD"
    return placement_group([bundle] * general.n_learners, strategy=strategy)


def describe(nodes: list[Node]) -> str:
    cpus = sum(n.resources.get("CPU", 0.0) for n in nodes)
    gpus = sum(n.resources.get("GPU", 0.0) for n in nodes)
    return f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}, {cpus:g} CPUs, {gpus:g} GPUs"
