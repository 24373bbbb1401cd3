"""``general_cfg.lockstep``: a seeded run on Ray takes the single backend's steps, off-policy too.

Free-running, a Ray run's workers act with whichever weights have reached them, and a
learner samples whatever rows its shards hold when its request lands: both depend on the
processes' timing, so two seeded off-policy runs on Ray differ. In lockstep the actors take
the single backend's turns and each call is answered before its caller goes on, so the run
is the single backend's, on Ray actors: R2D2 with two workers and two replay shards
(sequences, priorities written back per sequence) and DQN with prioritized replay end with
the same parameters and the same evaluations as with ``mp_backend: single``; so does APPO
(asynchronous rollouts, whose lag free-running depends on timing as well).

Both runs go through the runner as ``main.py`` calls it, in the test's process: the Ray run
on the test session's Ray (real actors). On an idle machine the calls mostly land in order
even free-running; what lockstep guarantees is shown on a threaded actor that notes its
calls, a slow one made first. On one node a published version is in the worker's
object store by the time an ack names it; on a cluster it reaches the worker's node a moment
later, which a task that returns the weights late stands in for. A worker killed in
lockstep is ``main.py`` on a Ray of its own, the worker's process found and killed by pid
(SIGKILL).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from algos import get_algorithm
from envs import make_env
from joyrl_ray.roles.worker.acting_weights import ActingWeights
from joyrl_ray.wire.handles import RayHandle, RayStore
from joyrl_ray.wire.messages import Weights
from tests.support.cli_runs import config_path, evaluations, summary_of, train_in_process
from tests.support.procs import TrackedRun
from tests.support.runs import make_cfg
from tests.support.watch import (
    env_steps,
    final_checkpoint_updates,
    finish,
    kill,
    log_time,
    role_pids,
    the_task,
    two,
    wait_for,
)

#: case -> (config, overrides, the fewest updates it makes): two workers (on two replay
#: shards off-policy), a few evaluations.
RUNS = {
    "r2d2": (
        "cartpole_novel_r2d2",
        (
            "general_cfg.max_env_steps=3000",
            "algo_cfg.learn_start=500",
            "general_cfg.model_save_fre=40",
        ),
        100,
    ),
    "dqn-per": (
        "cartpole_dqn_per",
        (
            "general_cfg.n_workers=2",
            "general_cfg.n_replay_shards=2",
            "general_cfg.worker_chunk_steps=16",
            "general_cfg.weights_publish_every=8",
            "general_cfg.max_env_steps=3000",
            "algo_cfg.learn_start=500",
            "general_cfg.model_save_fre=200",
        ),
        1000,
    ),
    # Asynchronous rollouts, free-running not reproducible either (V-trace over whatever
    # lag the timing made).
    "appo": (
        "cartpole_appo",
        (
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=4096",
            "general_cfg.model_save_fre=1",
        ),
        4,
    ),
}


@pytest.mark.slow
@pytest.mark.timeout(420)
#: Each commit runs R2D2 (replay shards, priorities written back per sequence) and APPO; DQN
#: with prioritized replay on two shards is the release tier's.
@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=[pytest.mark.release] if c == "dqn-per" else []) for c in RUNS],
)
def test_a_seeded_run_in_lockstep_on_ray_equals_the_single_backend_run(
    ray_session, tmp_path: Path, case: str
) -> None:
    config, overrides, fewest_updates = RUNS[case]
    single = train_in_process(
        tmp_path / "single", config, (*overrides, "general_cfg.mp_backend=single"), None
    )
    lockstep = train_in_process(
        tmp_path / "lockstep",
        config,
        (*overrides, "general_cfg.mp_backend=ray", "general_cfg.lockstep=true"),
        None,
    )
    updates = (lockstep["updates"], single["updates"])
    assert updates[0] == updates[1] >= fewest_updates, updates
    assert lockstep["env_steps"] == single["env_steps"]
    digest = lockstep["learners"][0]["params_digest"]
    assert digest == single["learners"][0]["params_digest"]
    evaluated = evaluations(lockstep)
    assert evaluated == evaluations(single) and len(evaluated) >= 3
    # The same steps, taken by Ray actors: each worker and the learner in a process of its
    # own, as each reported from where it ran (one process, all are the driver's).
    actors = acting_and_learning_pids(lockstep)
    assert len(set(actors.values())) == len(actors) and os.getpid() not in actors.values()
    assert set(acting_and_learning_pids(single).values()) == {os.getpid()}


ROLES = {"worker", "learner"}


def acting_and_learning_pids(summary: dict[str, Any]) -> dict[str, int]:
    """The pid each worker and learner of a run reported from (``summary.json``)."""
    roles = summary["placement"]["roles"]
    pids = {role: where["pid"] for role, where in roles.items() if role.split()[0] in ROLES}
    assert {role.split()[0] for role in pids} == ROLES, sorted(roles)
    return pids


class Log:
    """A threaded actor that notes each call once its wait is over."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def note(self, name: str, wait_s: float) -> None:
        time.sleep(wait_s)
        self.calls.append(name)

    def read(self) -> list[str]:
        return list(self.calls)


def test_calls_through_a_lockstep_handle_reach_a_threaded_actor_in_the_order_made(
    ray_session,
) -> None:
    import ray

    def calls(lockstep: bool) -> list[str]:
        actor = ray.remote(Log).options(max_concurrency=4).remote()
        handle = RayHandle("log", actor=actor, lockstep=lockstep)
        handle.invoke("read").result(60)  # the actor is up
        made = [handle.invoke("note", "slow", 0.5), handle.invoke("note", "quick", 0.0)]
        for call in made:
            call.result(30)
        return handle.invoke("read").result(30)

    # A shard is such an actor: a learner's sample request, then its priority write, then
    # a worker's insert must land in the order they were made, as in one process.
    assert calls(lockstep=False) == ["quick", "slow"]  # free-running: both run at once
    assert calls(lockstep=True) == ["slow", "quick"]


def test_a_lockstep_worker_waits_for_newer_weights_still_on_their_way_and_acts_with_them(
    ray_session, tmp_path: Path
) -> None:
    import ray

    cfg = make_cfg(tmp_path, "env_cfg.id=CartPole-v1")
    env = make_env(cfg.env)
    spec = get_algorithm("DQN")

    def policy():
        return spec.policy_cls(
            cfg.algo, env.observation_space, env.action_space, torch.device("cpu")
        )

    newer = {k: np.full_like(v, 0.5) for k, v in policy().get_weights().items()}

    @ray.remote
    def arriving(weights, delay_s: float):
        time.sleep(delay_s)
        return weights

    free, lockstep = policy(), policy()
    on_time = ActingWeights(RayStore(), free, 60.0)
    on_time.take(Weights(2, [arriving.remote(newer, 1.0)]), now=False)
    assert on_time.version == 0  # free-running: acts on with what it has meanwhile
    waiting = ActingWeights(RayStore(), lockstep, 60.0, always_wait=True)
    waiting.take(Weights(2, [arriving.remote(newer, 1.0)]), now=False)
    assert waiting.version == 2
    acting = lockstep.get_weights()
    assert all(np.array_equal(acting[k], newer[k]) for k in newer)


def _start(tmp_path: Path, *overrides: str) -> TrackedRun:
    """DQN on two workers in lockstep, ``main.py`` on a Ray of its own, until stopped."""
    return TrackedRun(
        (
            "--yaml",
            config_path("cartpole_dqn"),
            "general_cfg.n_workers=2",
            "general_cfg.lockstep=true",
            "general_cfg.seed=1",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            "general_cfg.reward_threshold=null",
            "general_cfg.max_env_steps=100000000",
            "algo_cfg.learn_start=200",
            f"general_cfg.tasks_dir={tmp_path}",
            *overrides,
        ),
        log_dir=tmp_path,
    )


def _stopped_keeping_what_was_learned(run: TrackedRun, tmp_path: Path) -> dict:
    """The run's summary, once it stopped on its own (exit 1) with the learner's final
    checkpoint: a worker's failure costs nothing learned."""
    code = finish(run, 120)
    assert code == 1, run.stderr[-3000:]
    task = the_task(tmp_path)
    summary = summary_of(task)
    assert final_checkpoint_updates(task) == summary["updates"] > 0
    return summary


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_worker_killed_in_lockstep_stops_the_run_naming_it_and_keeps_what_was_learned(
    tmp_path: Path,
) -> None:
    run = _start(tmp_path)
    try:
        pids = wait_for(run, "two workers", lambda: two(role_pids(run, "ray::Worker")), 120)
        wait_for(run, "500 env steps", lambda: env_steps(tmp_path) >= 500, 120)
        kill(min(pids))
        summary = _stopped_keeping_what_was_learned(run, tmp_path)
        assert summary["stop_reason"] == "worker_error", summary["stop_reason"]
        assert re.search(r"^worker failed: worker \d died during step", summary["error"]), summary
        assert summary["env_steps"] >= 500
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_env_that_hangs_in_lockstep_stops_the_run_as_stalled_on_time(tmp_path: Path) -> None:
    # In lockstep the driver waits inside the worker's turn: the turn's deadline is the
    # watchdog (no turn of a chunk or a round of updates comes near 10 s).
    stall_timeout_s = 10
    mark = tmp_path / "hung"
    run = _start(
        tmp_path,
        "env_cfg.id=tests.support.faulty_envs:HangingEnv",
        f"env_cfg.kwargs={{hang_after: 500, mark: {mark}}}",
        f"general_cfg.stall_timeout_s={stall_timeout_s}",
    )
    try:
        wait_for(run, "an env that hangs", mark.is_file, 180)
        summary = _stopped_keeping_what_was_learned(run, tmp_path)
        assert summary["stop_reason"] == "stalled", summary["stop_reason"]
        expected = rf"^worker stalled: worker 0\.step gave no answer within {stall_timeout_s} s"
        assert re.search(expected, summary["error"]), summary["error"]
        hung_at = float(mark.read_text().split()[1])
        took = log_time(the_task(tmp_path), "stopping: worker stalled") - hung_at
        assert stall_timeout_s <= took <= 2 * stall_timeout_s, took
    finally:
        run.kill()
