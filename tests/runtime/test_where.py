"""Where a role says it runs (its Placement): Ray's node and placement group inside Ray, this
host in a process that never imported ray, without importing it there."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.support.procs import ROOT, main_env


def test_a_role_in_a_placement_group_reports_its_node_group_and_process_start(ray_session):
    ray = ray_session
    from ray.util.placement_group import placement_group, remove_placement_group
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    @ray.remote(num_cpus=0)
    def placed():
        from joyrl_ray.wire.messages import Placement
        from joyrl_ray.wire.where import node_here

        return Placement("worker 0", *node_here(), 1)

    group = placement_group([{"CPU": 0.01}])
    ray.get(group.ready(), timeout=60)
    try:
        strategy = PlacementGroupSchedulingStrategy(group)
        where = ray.get(placed.options(scheduling_strategy=strategy).remote(), timeout=60)
    finally:
        remove_placement_group(group)
    assert where.node_id == ray.get_runtime_context().get_node_id()
    assert where.group == group.id.hex()
    assert where.process_started_at is not None
    assert where.process_started_at <= where.ready_at <= time.time()


def test_a_process_that_never_imported_ray_reports_this_host_without_importing_it() -> None:
    code = (
        "import sys, time\n"
        "from joyrl_ray.wire.messages import Placement\n"
        "from joyrl_ray.wire.where import node_here\n"
        "where = Placement('coordinator', *node_here(), 1)\n"
        "assert (where.node_id, where.ip, where.group) == ('local', '127.0.0.1', ''), where\n"
        "assert 0 <= where.ready_at - where.process_started_at < 60, where\n"
        "assert 'ray' not in sys.modules, 'ray was imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=main_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
