"""The learner actors of a Ray run, as one group (RLlib's ``LearnerGroup``).

The group owns its actors and their restarts: all ranks sit in one placement group
(reserved before any worker, so that workers cannot take its resources), start together
(rank 0 names the address the group meets at), and are restarted together, from the
driver's newest checkpoint, when any of them dies, up to ``max_learner_restarts`` times.

A rank cut off (its connection broken, or silent for ``learner_silent_after_s``: see the
driver) that Ray does not report dead within ``learner_lost_after_s``, on a node whose
raylet does not answer (:mod:`.node_probe`), is taken as lost with its node: the group is
placed again, away from that node, at once; Ray's own health check takes from ~15 s to a
minute or more to declare a node dead, and until then counts its resources as free. (On
a Ray whose placement groups take no label selectors the group waits for Ray's verdict.)

The learners come first when the cluster shrinks: a group that cannot be placed again
within ``ROOM_WAIT_S`` (its node was lost and the others are full, e.g. with workers Ray
restarted there) asks for room (the runtime sheds a worker) and waits again, until it is
placed, nothing is left to shed, or ``PLACEMENT_TIMEOUT_S`` passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from joyrl_ray.backends.node_probe import node_answers
from joyrl_ray.backends.placement import (
    Requests,
    actor_options,
    bundle_nodes,
    can_avoid_nodes,
    enclosing_group,
    learner_group,
    wait_for_death,
)
from joyrl_ray.backends.runtime import LearnerSetup, RoleEvents
from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.roles.learner.client import LearnerClient
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.learner import Learner, LearnerResult
from joyrl_ray.roles.learner.source import LearnerLinks
from joyrl_ray.wire.handles import Call, RayHandle, RoleDied
from joyrl_ray.wire.where import node_here

PLACEMENT_TIMEOUT_S = 60.0
ROOM_WAIT_S = 3.0  # a restarted group waits this long for its placement before asking for room
NODE_DEATH_WAIT_S = 90.0  # Ray's node health checks: 5 misses, 3 s apart, 10 s timeouts
RENDEZVOUS_TIMEOUT_S = 120.0


class LearnerGroup:
    """``n_learners`` learner actors in one placement group; their restarts."""

    def __init__(
        self,
        cfg: LearnerConfig,
        general: GeneralConfig,
        links: LearnerLinks,
        setup: LearnerSetup,
        requests: Requests,
    ) -> None:
        import ray

        self.ray = ray
        self.cfg, self.general, self.links, self.setup = cfg, general, links, setup
        self.request = requests.learner or {}
        self.group = learner_group(general, self.request)
        # Inside a trial's placement group the learners take any of its bundles, and the
        # group is the trial's to remove.
        self.own_group = enclosing_group() is None
        self.generation = 0
        self.restarts = 0
        self.actors: list[Any] = []
        self.nodes: dict[int, str] = {}  # node id by rank (bundle), once placed

    def create(
        self, start_state: bytes | None, make_room: Callable[[], bool] | None = None
    ) -> None:
        """The learner actors, in the group's placement group (RoleDied if it cannot be
        placed). ``make_room``: frees resources for the group (False when it cannot), asked
        each ``ROOM_WAIT_S`` the group waits; only for a group of its own (a trial's group
        holds its whole layout)."""
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        general = self.general
        self.generation += 1
        self._wait_placed(make_room if self.own_group else None)
        if self.own_group:
            self.nodes = bundle_nodes(self.group)
        state_ref = self.ray.put(start_state) if start_state is not None else None
        options = actor_options(self.request)
        world = general.n_learners
        self.actors = [
            self.ray.remote(Learner)
            .options(
                **options,
                max_restarts=0,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=self.group,
                    placement_group_bundle_index=rank if self.own_group else -1,
                ),
            )
            .remote(
                self.cfg,
                self.links,
                self.setup.spaces,
                rank=rank,
                world_size=world,
                generation=self.generation,
                start_state=state_ref,
            )
            for rank in range(world)
        ]

    def _wait_placed(self, make_room: Callable[[], bool] | None) -> None:
        deadline = time.monotonic() + PLACEMENT_TIMEOUT_S
        ready_ref = self.group.ready()
        while True:
            left = deadline - time.monotonic()
            wait = min(left, ROOM_WAIT_S) if make_room is not None else left
            ready, _ = self.ray.wait([ready_ref], timeout=max(wait, 0.0))
            if ready:
                return
            if time.monotonic() >= deadline:
                raise RoleDied(
                    f"the learners' placement group ({self.general.n_learners} x "
                    f"{self.request}) could not be placed within {PLACEMENT_TIMEOUT_S:g} s"
                )
            if make_room is not None and not make_room():
                make_room = None  # nothing more to free: wait out the rest

    def run(self) -> list[Call[LearnerResult]]:
        """Start every rank's loop (rank 0 first names the address the group meets at);
        each rank's call, by rank."""
        clients = [
            LearnerClient(RayHandle(self.cfg.role(rank), actor=a))
            for rank, a in enumerate(self.actors)
        ]
        address = None
        if len(clients) > 1:
            address = clients[0].rendezvous().result(timeout_s=RENDEZVOUS_TIMEOUT_S)
        return [client.run(address) for client in clients]

    def restart(
        self,
        why: str,
        events: RoleEvents,
        make_room: Callable[[], bool] | None = None,
        rank: int = 0,
    ) -> list[Call[LearnerResult]]:
        """After rank ``rank`` died or went silent (``why``: which, for the log): end the
        others and start the group again from the newest checkpoint, within the restart
        budget (``make_room``: see :meth:`create`); away from the rank's node when that node
        does not answer (:mod:`.node_probe`). The new ranks' calls (none when it could not
        restart: ``events`` then says why the run stops)."""
        general = self.general
        lost_node = None
        if not wait_for_death(self.actors, general.learner_lost_after_s):
            cut_off = [n for n in self._nodes_from(rank) if not node_answers(n)]
            if cut_off:  # the rank is cut off with its node (or another rank is)
                lost_node = self._avoidable(cut_off[0])
                if lost_node is None:  # wait for Ray to know: it may place the group there
                    wait_for_death(self.actors, NODE_DEATH_WAIT_S)
        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        if self.restarts >= general.max_learner_restarts:
            events.failure = (
                f"the learner group failed {self.restarts + 1} times "
                f"(general_cfg.max_learner_restarts={general.max_learner_restarts}); last: {why}"
            )
            events.failure_reason = "learner_failed"
            return []
        self.restarts += 1
        state = self.setup.latest_state() or self.setup.start_state
        group = "" if self.cfg.policy == DEFAULT_POLICY else f" of {self.cfg.policy}"
        events.log.append(
            f"{why}; restarting the learner group{group} from "
            f"{'its last checkpoint' if state else 'scratch (no checkpoint yet)'} "
            f"(restart {self.restarts} of {general.max_learner_restarts})"
        )
        if lost_node is not None:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.group)
            self.group = learner_group(general, self.request, avoid_node=lost_node)
            events.log.append(
                f"learner {rank} cut off and not reported dead within "
                f"{general.learner_lost_after_s:g} s: taken as lost with its node "
                f"({lost_node[:8]}), which the group now avoids"
            )
        try:
            self.create(state, make_room)
            return self.run()
        except RoleDied as exc:  # e.g. its pinned node was lost and no other node can hold it
            events.failure = f"the learner group could not be restarted: {exc}"
            events.failure_reason = "learner_failed"
            return []

    def _nodes_from(self, rank: int) -> list[str]:
        """The nodes the ranks sit on, rank ``rank``'s first, each once."""
        ranks = [rank, *sorted(self.nodes)]
        return list(dict.fromkeys(self.nodes[r] for r in ranks if r in self.nodes))

    def _avoidable(self, node: str) -> str | None:
        """``node``, lost, if the group can be placed away from it: not the driver's own
        (were it lost, the driver would be too), nor in a trial's group (it holds the
        trial's layout), nor where Ray cannot avoid a node."""
        if node == node_here()[0] or not self.own_group:
            return None
        return node if can_avoid_nodes() else None

    def shutdown(self) -> None:
        from ray.util.placement_group import remove_placement_group

        for actor in self.actors:
            self.ray.kill(actor, no_restart=True)
        if self.own_group:
            remove_placement_group(self.group)
