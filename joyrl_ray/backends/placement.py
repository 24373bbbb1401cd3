"""Where the roles run on a Ray cluster, and whether the cluster can hold them at all.

- Learners: one placement group, one bundle per learner (``learner_num_cpus``,
  ``learner_num_gpus``, ``learner_resources``), packed onto one node by default
  (``learner_placement``), so the ranks sit together for their gradient exchange.
- Workers: spread over the nodes by default (``worker_placement``), with
  ``worker_resources`` to pin them to node types.
- The data-plane actors (replay shards, rollout queue): on the driver's node (they answer
  the driver's calls most often), or wherever ``data_server_resources`` says. The online
  evaluator sits on the driver's node too (the driver hands it every checkpoint).
- A run started inside a placement group (a Ray Tune trial's, :mod:`joyrl_ray.sweep`)
  keeps every actor in that group: the trial reserved its whole layout
  (:func:`layout_bundles`) before it started, and an actor placed outside it could wait
  forever for CPUs the other trials hold.

:func:`check_fits` runs before any actor starts: a request that no node can hold is one
line (what was asked, what the largest node has) and exit code 2, never a silent hang.
Each role reports where it runs (:class:`~joyrl_ray.wire.messages.Placement`); the run's
"cluster: ..." line and ``summary.json["placement"]`` come from :func:`placement_line` and
:func:`placement_summary`, by node (ip, with a short node id where nodes share an ip).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.wire.messages import Placement
from joyrl_ray.wire.where import node_here

STANDARD = ("CPU", "GPU", "memory", "object_store_memory")


@dataclass
class Node:
    node_id: str
    ip: str
    resources: dict[str, float]
    head: bool = False  # the node the cluster's GCS runs on

    @property
    def custom(self) -> dict[str, float]:
        """User-defined resources (``ray start --resources``), without Ray's own."""
        return {
            k: v
            for k, v in self.resources.items()
            if k not in STANDARD and not k.startswith("node:")
        }


@dataclass
class Requests:
    """Per-actor resource requests of a run."""

    worker: dict[str, float]
    learner: dict[str, float] | None  # None in test mode
    n_workers: int
    n_learners: int
    nodes: list[Node] = field(default_factory=list)  # the cluster's alive nodes at the start


class ClusterFitError(ValueError):
    """A request the cluster can never hold; the message says what and what there is."""


def _gcs_host() -> str | None:
    """The host of the cluster's GCS, which runs on the head node (None if Ray won't say,
    e.g. for a Ray Client driver)."""
    import ray

    try:
        address = ray.get_runtime_context().gcs_address
    except Exception:  # a Ray Client driver has no runtime context of its own
        return None
    return str(address).rpartition(":")[0].strip("[]") or None


def alive_nodes() -> list[Node]:
    import ray

    nodes = [
        Node(n["NodeID"], n["NodeManagerAddress"], dict(n["Resources"]))
        for n in ray.nodes()
        if n.get("Alive")
    ]
    head_host = _gcs_host()
    heads = [n for n in nodes if n.ip == head_host]
    if len(heads) == 1:  # nodes sharing the GCS's ip leave the head unknown
        heads[0].head = True
    return nodes


def fits(request: dict[str, float], resources: dict[str, float]) -> bool:
    return all(resources.get(k, 0.0) + 1e-9 >= v for k, v in request.items() if v > 0)


def _shown(request: dict[str, float]) -> str:
    return ", ".join(f"{v:g} {k}" for k, v in request.items() if v > 0) or "nothing"


def _largest(nodes: list[Node], request: dict[str, float]) -> str:
    """What the node closest to holding ``request`` has of each thing asked for."""
    keys = [k for k, v in request.items() if v > 0] or ["CPU"]
    missing = [k for k in keys if not any(n.resources.get(k, 0.0) > 0 for n in nodes)]
    if any(k not in ("CPU", "GPU") for k in missing):
        custom = sorted({k for n in nodes for k in n.custom})
        return (
            f"no node has {', '.join(repr(k) for k in missing)} (custom resources in the "
            f"cluster: {', '.join(custom) or 'none'}; a node gets one with "
            f"`ray start --resources='{{\"{missing[-1]}\": 1}}'`)"
        )

    def closeness(node: Node) -> tuple[int, int, tuple[float, ...]]:
        have = [node.resources.get(k, 0.0) for k in keys]
        enough = sum(h + 1e-9 >= request[k] for h, k in zip(have, keys, strict=True))
        return enough, sum(h > 0 for h in have), tuple(have)

    best = max(nodes, key=closeness)
    have = ", ".join(f"{best.resources.get(k, 0.0):g} {k}" for k in keys)
    return f"the largest node ({best.ip}) has {have}"


HINTS = {
    "worker": "general_cfg.worker_num_cpus / worker_resources",
    "learner": "general_cfg.learner_num_cpus / learner_num_gpus / learner_resources",
}


def check_fits(requests: Requests, nodes: list[Node]) -> None:
    """Raise ClusterFitError unless every actor fits some node and all fit the cluster."""
    roles = [("worker", requests.worker, requests.n_workers)]
    if requests.learner is not None:
        roles.append(("learner", requests.learner, requests.n_learners))
    for role, request, _ in roles:
        if not any(fits(request, n.resources) for n in nodes):
            raise ClusterFitError(
                f"each {role} asks for {_shown(request)}, which no node of the Ray cluster "
                f"can hold: {_largest(nodes, request)}; adjust {HINTS[role]}"
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
                "per-role requests (worker_num_cpus, learner_num_cpus, learner_num_gpus, "
                "worker_resources, learner_resources)"
            )


def wait_for_death(actors: list[Any], timeout_s: float) -> bool:
    """Wait until Ray reports one of ``actors`` dead; False if none is within ``timeout_s``.

    A role on a lost node looks to its callers like a broken connection well before Ray
    declares the node dead (its health checks take ~15-30 s). Until then Ray still counts
    the node's resources, so a role restarted at once may be placed on the lost node again.
    Ray says an actor is dead by failing a call to it with ``ActorDiedError``; the call is
    ``__ray_ready__``, which Ray gives every actor; a call that cannot reach the actor yet
    (``ActorUnavailableError``, or no answer) means Ray does not know yet.
    """
    import ray
    from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError

    if not actors:
        return True
    deadline = time.monotonic() + timeout_s
    pending = {actor.__ray_ready__.remote(): actor for actor in actors}
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        done, _ = ray.wait(list(pending), num_returns=1, timeout=min(left, 0.5))
        for ref in done:
            actor = pending.pop(ref)
            try:
                ray.get(ref, timeout=0)
            except ActorDiedError:
                return True
            except (ActorUnavailableError, GetTimeoutError):
                pass
            time.sleep(0.2)  # alive, or not reachable yet: ask again
            pending[actor.__ray_ready__.remote()] = actor
    return False


def worker_cpus(general: GeneralConfig, nodes: list[Node], train: bool, policies: int = 1) -> float:
    """CPUs per worker: as configured, or an even share of what the learners leave (each
    of ``policies`` learning policies has ``n_learners``)."""
    if general.worker_num_cpus is not None:
        return float(general.worker_num_cpus)
    total = sum(n.resources.get("CPU", 0.0) for n in nodes)
    learners = policies * general.n_learners * general.learner_num_cpus if train else 0.0
    share = (total - learners) / max(general.n_workers, 1)  # none: a run with no workers
    # Whole hundredths that fit in what the learners leave (the sum never exceeds the
    # cluster); none when the learners ask for every CPU: the workers then share the cores.
    return max(min(1.0, int(share * 100 + 1e-9) / 100), 0.0)


def make_requests(
    general: GeneralConfig,
    nodes: list[Node],
    train: bool,
    *,
    cluster_free: bool = False,
    policies: int = 1,
) -> Requests:
    """Each role's resource request; ``cluster_free``: without a cluster to share (inside a
    placement group that reserved the run's layout), a worker takes 1 CPU unless told;
    ``policies``: the learning policies, each with ``n_learners`` learners."""
    if cluster_free or enclosing_group() is not None:
        cpus = 1.0 if general.worker_num_cpus is None else float(general.worker_num_cpus)
    else:
        cpus = worker_cpus(general, nodes, train, policies)
    worker = {"CPU": cpus, **general.worker_resources}
    learner = None
    if train:
        learner = {
            "CPU": general.learner_num_cpus,
            "GPU": general.learner_num_gpus,
            **general.learner_resources,
        }
    n_learners = general.n_learners * policies
    return Requests(worker, learner, general.n_workers, n_learners, list(nodes))


def actor_options(request: dict[str, float]) -> dict[str, Any]:
    """``ray.remote(...).options`` for a resource request."""
    custom = {k: v for k, v in request.items() if k not in ("CPU", "GPU") and v > 0}
    options: dict[str, Any] = {"num_cpus": request.get("CPU", 0.0)}
    if request.get("GPU", 0.0) > 0:
        options["num_gpus"] = request["GPU"]
    if custom:
        options["resources"] = custom
    return options


def enclosing_group() -> Any | None:
    """The placement group this process runs in (a Ray Tune trial's), else None."""
    import ray
    from ray.util import get_current_placement_group

    if not ray.is_initialized():  # asking would start a Ray
        return None
    return get_current_placement_group()


def in_group(group: Any) -> Any:
    """The scheduling strategy that keeps an actor, and whatever it starts, in ``group``."""
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return PlacementGroupSchedulingStrategy(
        placement_group=group, placement_group_capture_child_tasks=True
    )


def worker_strategy(general: GeneralConfig) -> Any:
    group = enclosing_group()
    if group is not None:
        return in_group(group)
    return "SPREAD" if general.worker_placement == "spread" else "DEFAULT"


def layout_bundles(general: GeneralConfig) -> list[dict[str, float]]:
    """One bundle per learner and per worker of a training run, for a placement group that
    holds the whole run (a sweep's trial): the requests :func:`make_requests` makes inside
    one. A worker takes ``worker_num_cpus``, or 1 CPU (there is no cluster share to take)."""
    requests = make_requests(general, [], train=True, cluster_free=True)
    bundles = [requests.learner or {}] * general.n_learners + [requests.worker] * general.n_workers
    return [{k: v for k, v in b.items() if v > 0} for b in bundles]


def driver_node_options() -> dict[str, Any]:
    """Pin an actor to the driver's node (nothing to pin for a Ray Client driver); inside a
    placement group, keep it there instead."""
    group = enclosing_group()
    if group is not None:
        return {"scheduling_strategy": in_group(group)}
    node_id, _ = node_here()
    if node_id == "local":  # e.g. a Ray Client driver, which is no node of the cluster
        return {}
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_id, soft=False)}


def data_server_options(general: GeneralConfig) -> dict[str, Any]:
    """Pin the DataServer to the driver's node unless resources say where it goes."""
    if general.data_server_resources:
        return {"resources": dict(general.data_server_resources)}
    return driver_node_options()


NODE_ID_LABEL = "ray.io/node-id"  # the label Ray gives every node: its id


def learner_group(
    general: GeneralConfig, request: dict[str, float], avoid_node: str | None = None
) -> Any:
    """A placement group with one bundle per learner (inside a placement group: that one);
    ``avoid_node``: a node id none of its bundles may go to (see :func:`can_avoid_nodes`)."""
    from ray.util.placement_group import placement_group

    group = enclosing_group()
    if group is not None:
        return group

    bundle = {k: v for k, v in request.items() if v > 0}
    strategy = "PACK" if general.learner_placement == "pack" else "SPREAD"
    bundles = [bundle] * general.n_learners
    if avoid_node is None:
        return placement_group(bundles, strategy=strategy)
    selector = [{NODE_ID_LABEL: f"!{avoid_node}"}] * general.n_learners
    return placement_group(bundles, strategy=strategy, bundle_label_selector=selector)


def can_avoid_nodes() -> bool:
    """Whether this Ray's placement groups take label selectors, so that one can be placed
    away from a node (``bundle_label_selector``)."""
    import inspect

    from ray.util.placement_group import placement_group

    return "bundle_label_selector" in inspect.signature(placement_group).parameters


def avoiding(node_id: str) -> dict[str, Any]:
    """Actor options that keep an actor off node ``node_id``; none where this Ray cannot
    avoid a node (the actor then goes where Ray has room, perhaps there)."""
    if not can_avoid_nodes():
        return {}
    return {"label_selector": {NODE_ID_LABEL: f"!{node_id}"}}


def bundle_nodes(group: Any) -> dict[int, str]:
    """The node id each bundle of a placed ``group`` sits on, by bundle index."""
    from ray.util.placement_group import placement_group_table

    return dict(placement_group_table(group).get("bundles_to_node_id", {}))


def describe(nodes: list[Node]) -> str:
    """``2 nodes, 3 CPUs, 0 GPUs``, and for a cluster this run attached to, which one
    (``, joined 10.0.0.5:6379 (from RAY_ADDRESS)``)."""
    from joyrl_ray.backends.ray_cluster import joined_cluster

    cpus = sum(n.resources.get("CPU", 0.0) for n in nodes)
    gpus = sum(n.resources.get("GPU", 0.0) for n in nodes)
    line = f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}, {cpus:g} CPUs, {gpus:g} GPUs"
    joined = joined_cluster()
    return f"{line}, joined {joined}" if joined else line


def _labels(node_ids: dict[str, str]) -> dict[str, str]:
    """node id -> its ip, with a short node id added where several nodes share an ip."""
    by_ip: dict[str, set[str]] = {}
    for node_id, ip in node_ids.items():
        by_ip.setdefault(ip, set()).add(node_id)
    return {
        node_id: ip if len(by_ip[ip]) == 1 else f"{ip} ({node_id[:8]})"
        for node_id, ip in node_ids.items()
    }


def placement_line(nodes_line: str, placements: dict[str, Placement]) -> str:
    """``cluster: 2 nodes, 3 CPUs, 0 GPUs; 10.0.0.5: data server, worker 0; 10.0.0.6: ...``"""
    labels = _labels({p.node_id: p.ip for p in placements.values()})
    where: dict[str, list[str]] = {}
    for role, place in sorted(placements.items()):
        where.setdefault(labels[place.node_id], []).append(role)
    roles = "; ".join(f"{node}: {', '.join(names)}" for node, names in where.items())
    return f"cluster: {nodes_line}; {roles}"


def placement_summary(
    nodes_line: str, nodes: list[Node], placements: dict[str, Placement]
) -> dict[str, Any]:
    """``summary.json["placement"]``: the cluster, its nodes (those at the start, lost or not,
    and those that joined since) with the roles each held at the end, and where each role
    runs (after any restarts)."""
    now = alive_nodes() if nodes else []
    alive_now = {n.node_id for n in now}
    started = {n.node_id for n in nodes}
    nodes_out = []
    for node in [*nodes, *(n for n in now if n.node_id not in started)]:
        nodes_out.append(
            {
                "node_id": node.node_id,
                "ip": node.ip,
                "head": node.head,
                "CPU": node.resources.get("CPU", 0.0),
                "GPU": node.resources.get("GPU", 0.0),
                "resources": node.custom,
                "roles": sorted(r for r, p in placements.items() if p.node_id == node.node_id),
                "lost": node.node_id not in alive_now,
                "joined": node.node_id not in started,
            }
        )
    return {
        "cluster": nodes_line,
        "nodes": nodes_out,
        "nodes_lost": [n["ip"] for n in nodes_out if n["lost"]],
        "roles": {role: vars(p) for role, p in sorted(placements.items())},
    }
