"""Waiting until Ray knows an actor is dead, through public Ray APIs only.

A learner restarted before Ray has declared the old one dead may land on a lost node
again (placement.wait_for_death). Shown with real actors: one killed with SIGKILL, one
that lives on.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from joyrl_ray.backends.placement import wait_for_death

pytestmark = pytest.mark.ray_compat


def _actor(ray):
    """A real actor that tells its process id (defined here: pickled by value)."""

    class Pid:
        def pid(self) -> int:
            return os.getpid()

    return ray.remote(num_cpus=0)(Pid).remote()


def test_an_actor_killed_with_sigkill_is_known_dead_within_seconds(ray_session):
    ray = ray_session
    victim, bystander = _actor(ray), _actor(ray)
    os.kill(ray.get(victim.pid.remote()), signal.SIGKILL)
    t0 = time.monotonic()
    assert wait_for_death([bystander, victim], timeout_s=30)
    assert time.monotonic() - t0 < 15
    assert ray.get(bystander.pid.remote()) > 0  # the live one was only asked, not harmed
    ray.kill(bystander)


def test_live_actors_are_not_reported_dead(ray_session):
    ray = ray_session
    actors = [_actor(ray), _actor(ray)]
    ray.get([a.pid.remote() for a in actors])
    t0 = time.monotonic()
    assert not wait_for_death(actors, timeout_s=2)
    assert 2 <= time.monotonic() - t0 < 5
    for actor in actors:
        ray.kill(actor)
