"""Multi-agent runs on Ray: a trained policy beside a fixed one, and the accounting per policy
through a killed worker and a killed learner.

The env is :class:`envs.agent_toys.RelayWorld`: three agents that leave after 4, 7 and 10
steps, so an episode is 10 env steps and agent ``agent_0`` makes 4 decisions in it. A
policy's transitions therefore say whose rows reached it: ``agent_0``'s policy gets 4 per 10
env steps, and 21 if the others' rows leaked into its data.
"""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pytest

from tests.support.cli_runs import config_path, summary_of, train_in_process
from tests.support.procs import TrackedRun, task_dirs
from tests.support.watch import (
    interrupt,
    kill,
    log_text,
    role_pids,
    the_task,
    two,
    wait_for,
)

RELAY = (
    "env_cfg.id=envs.agent_toys:RelayWorld",
    "general_cfg.online_eval=false",
    "algo_cfg.rollout_len=20",
    "algo_cfg.n_epochs=2",
)
CONFIG = "cartpole_ppo"  # PPO's settings; RELAY swaps the env


def per_agent_rows(task: Path) -> dict[str, set[str]]:
    """Each agent's policies, as episodes.csv names them."""
    seen: dict[str, set[str]] = {}
    with (task / "results" / "episodes.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            seen.setdefault(row["agent"], set()).add(row["policy"])
    return seen


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_fixed_checkpoint_policy_acts_beside_a_trained_one_and_only_the_trained_one_learns(
    tmp_path: Path, ray_session
) -> None:
    # A policy to freeze: a short run of one shared policy, in one process.
    first = train_in_process(
        tmp_path / "first",
        CONFIG,
        (
            *RELAY,
            "general_cfg.mp_backend=single",
            "general_cfg.max_env_steps=2000",
            "multi_agent.policies={learner: {}}",
            "multi_agent.policy_mapping={'*': learner}",
        ),
        None,
    )
    (first_task,) = task_dirs(tmp_path / "first")
    frozen_file = first_task / "models" / "learner" / "last.pt"
    frozen_bytes = hashlib.sha256(frozen_file.read_bytes()).hexdigest()
    assert first["policies"]["learner"]["updates"] > 0

    # agent_0 learns with a fresh policy; agent_1 and agent_2 act with the frozen one.
    summary = train_in_process(
        tmp_path / "second",
        CONFIG,
        (
            *RELAY,
            "general_cfg.mp_backend=ray",
            "general_cfg.n_workers=2",
            "general_cfg.max_env_steps=4000",
            "multi_agent.policies={learner: {}, frozen: {fixed: checkpoint, "
            f"load_path: '{first_task}', load_policy: learner}}}}",
            "multi_agent.policy_mapping={agent_0: learner, '*': frozen}",
        ),
        None,
    )
    (task,) = task_dirs(tmp_path / "second")
    # Only the trained policy has learners, checkpoints and data.
    assert list(summary["policies"]) == ["learner"]
    roles = summary["placement"]["roles"]
    assert [r for r in roles if r.startswith("learner")] == ["learner 0 of learner"]
    assert sorted(p.name for p in (task / "models").iterdir()) == ["learner"]
    learner = summary["policies"]["learner"]
    assert learner["updates"] > 0
    assert learner["params_digest"] != first["policies"]["learner"]["params_digest"]
    # Its rows are agent_0's alone: 4 per 10 env steps (with the others' it would be 21),
    # give or take the chunks in flight when the run stopped.
    per_env_step = learner["transitions_collected"] / summary["env_steps"]
    assert 0.35 <= per_env_step <= 0.45, (per_env_step, summary["env_steps"], learner)
    stored, dropped = learner["transitions_stored"], learner["transitions_dropped"]
    assert learner["transitions_collected"] == stored + sum(dropped.values()), learner
    # The episodes written are the learning policy's agent's (a fixed policy reports none).
    assert per_agent_rows(task) == {"agent_0": {"learner"}}
    # The frozen policy's checkpoint is read, never written.
    assert hashlib.sha256(frozen_file.read_bytes()).hexdigest() == frozen_bytes


TWO_POLICIES = (
    "multi_agent.policies={first: {}, second: {}}",
    "multi_agent.policy_mapping={agent_0: first, '*': second}",
)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_each_policys_accounting_holds_through_a_killed_worker_and_a_killed_learner(
    tmp_path: Path,
) -> None:
    run = TrackedRun(
        (
            "--yaml",
            config_path(CONFIG),
            *RELAY,
            *TWO_POLICIES,
            "general_cfg.n_workers=2",
            "general_cfg.n_envs_per_worker=2",
            "general_cfg.learner_num_cpus=0.5",
            "general_cfg.max_env_steps=100000000",
            "general_cfg.model_save_fre=5",
            "general_cfg.progress=false",
            "general_cfg.save_fig=false",
            f"general_cfg.tasks_dir={tmp_path}",
        ),
        log_dir=tmp_path,
    )
    try:
        workers = wait_for(
            run, "two workers", lambda: two(role_pids(run, "ray::MultiAgentWorker")), 120
        )
        task = wait_for(run, "a task directory", lambda: task_dirs(tmp_path), 60)[0]
        checkpoint = task / "models" / "second" / "5.pt"
        wait_for(run, "second's checkpoint 5", checkpoint.is_file, 180)
        kill(min(workers))
        wait_for(run, "the worker's restart", lambda: "(restart 1)" in log_text(task), 120)
        learners = role_pids(run, "ray::Learner")
        assert len(learners) == 2, learners
        kill(max(learners))
        restarted = "restarting the learner group of "
        wait_for(run, "a learner's restart", lambda: restarted in log_text(task), 120)
        after = task / "models"
        wait_for(
            run,
            "both policies' checkpoints past the restart",
            lambda: all(
                max((int(p.stem) for p in (after / name).glob("[0-9]*.pt")), default=0) >= 15
                for name in ("first", "second")
            ),
            240,
        )
        code = interrupt(run, 60)
        summary = summary_of(the_task(tmp_path))
        assert code == 130, run.stderr[-3000:]
        assert summary["worker_restarts"] == 1 and summary["learner_restarts"] == 1
        for name, policy in summary["policies"].items():
            collected, stored = policy["transitions_collected"], policy["transitions_stored"]
            dropped = policy["transitions_dropped"]
            assert collected == stored + sum(dropped.values()), (name, policy)
            assert policy["updates"] >= 15, (name, policy)
    finally:
        run.kill()


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_seeded_multi_agent_run_in_lockstep_on_ray_equals_the_single_backend_run(
    tmp_path: Path, ray_session
) -> None:
    overrides = (
        *RELAY,
        *TWO_POLICIES,
        "general_cfg.n_workers=2",
        "general_cfg.n_envs_per_worker=2",
        "general_cfg.max_env_steps=3000",
    )
    single = train_in_process(
        tmp_path / "single", CONFIG, (*overrides, "general_cfg.mp_backend=single"), None
    )
    lockstep = train_in_process(
        tmp_path / "lockstep",
        CONFIG,
        (*overrides, "general_cfg.mp_backend=ray", "general_cfg.lockstep=true"),
        None,
    )
    assert lockstep["env_steps"] == single["env_steps"]
    for name in ("first", "second"):
        ours, theirs = lockstep["policies"][name], single["policies"][name]
        assert ours["updates"] == theirs["updates"] >= 5, (name, ours, theirs)
        assert ours["transitions_collected"] == theirs["transitions_collected"]
        assert ours["params_digest"] == theirs["params_digest"], name
    # On Ray actors: each worker and learner reported from a process of its own.
    roles = lockstep["placement"]["roles"]
    pids = [
        where["pid"] for role, where in roles.items() if role.split()[0] in ("worker", "learner")
    ]
    assert len(pids) == 4 and len(set(pids)) == 4
