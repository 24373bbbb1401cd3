"""The test session's Ray (``ray_session``): its actors share the cores on equal terms.

Each xdist worker starts one, beside the other workers' tests. At Ray's default worker
priority (nice 15) a run's actors got about 1/30 of the CPU time of each busy test process
at nice 0, and a run on the session Ray stopped as stalled before its first step while its
learner was still being constructed.
"""

from __future__ import annotations

import os


class Niceness:
    """An actor that says the nice value its process runs at (pickled by value)."""

    def niceness(self) -> int:
        return os.nice(0)


def test_the_session_rays_actors_run_at_the_test_processes_priority(ray_session) -> None:
    ray = ray_session
    actor = ray.remote(num_cpus=0)(Niceness).remote()
    try:
        assert ray.get(actor.niceness.remote(), timeout=300) == os.nice(0)
    finally:
        ray.kill(actor)
