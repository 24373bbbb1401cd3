"""A Ray run whose start fails leaves nothing on a Ray that outlives it.

A run on a Ray it attached to, or borrowed (the test session's), shares that Ray with later
runs: a placement group or an actor its failed start left there would hold CPUs that the
next run's learners and workers wait for. Shown for real: the session Ray's CPUs are held by
a placement group of the test's own, so the run's learners cannot be placed and its start
fails; once the test's group is gone, none of the run's groups or actors may be left.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from joyrl_ray.backends import learner_group
from joyrl_ray.run.runner import run
from joyrl_ray.wire.handles import RoleDied
from tests.support.runs import make_cfg

LEFTOVER_WAIT_S = 60.0  # ray.kill and remove_placement_group take effect in the background


def _groups(ray) -> set[str]:
    """The session Ray's placement groups not removed, by id."""
    from ray.util.placement_group import placement_group_table

    return {gid for gid, group in placement_group_table().items() if group["state"] != "REMOVED"}


def _run_actors(ray) -> set[str]:
    """The run actors alive on the session Ray, by name (each run names its planes' actors)."""
    return {
        actor["name"]
        for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith("joyrl-")
    }


def _left_behind(ray, groups_before: set[str], actors_before: set[str]) -> tuple[set, set]:
    """The run's placement groups and named actors still there once the removals and kills
    it asked for had time to land."""
    deadline = time.monotonic() + LEFTOVER_WAIT_S
    while True:
        groups, actors = _groups(ray) - groups_before, _run_actors(ray) - actors_before
        if not (groups or actors) or time.monotonic() > deadline:
            return groups, actors
        time.sleep(0.5)


@pytest.mark.parametrize("lockstep", [False, True], ids=["free-running", "lockstep"])
def test_a_run_whose_learners_cannot_be_placed_leaves_no_placement_group_or_actor_on_the_ray(
    tmp_path: Path, ray_session, monkeypatch: pytest.MonkeyPatch, lockstep: bool
) -> None:
    ray = ray_session
    from ray.util.placement_group import placement_group, remove_placement_group

    monkeypatch.setattr(learner_group, "PLACEMENT_TIMEOUT_S", 3.0)  # fail in seconds, not 60
    groups_before, actors_before = _groups(ray), _run_actors(ray)
    every_cpu = placement_group([{"CPU": ray.cluster_resources()["CPU"]}])
    ray.get(every_cpu.ready(), timeout=120)
    try:
        with pytest.raises(RoleDied, match="could not be placed"):
            run(
                make_cfg(
                    tmp_path,
                    "general_cfg.mp_backend=ray",
                    f"general_cfg.lockstep={str(lockstep).lower()}",
                    "general_cfg.n_workers=2",
                    "general_cfg.max_env_steps=200",
                )
            )
    finally:
        remove_placement_group(every_cpu)
    # The run's learner group, had it stayed, would now be placed on the CPUs set free.
    groups, actors = _left_behind(ray, groups_before | {every_cpu.id.hex()}, actors_before)
    assert groups == set(), "placement groups left by the failed start"
    assert actors == set(), "actors left by the failed start"
