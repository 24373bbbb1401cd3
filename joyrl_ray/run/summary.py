"""``results/summary.json``: what a run did, in one file, from the roles' closing figures.

The accounting identity holds in it through every failure:
``transitions_collected == transitions_stored + sum(transitions_dropped)``.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from joyrl_ray.backends.runtime import RoleResults
from joyrl_ray.config import RunConfig
from joyrl_ray.control.coordinator import CoordinatorStats
from joyrl_ray.flows.base import DataPlaneStats
from joyrl_ray.roles.evaluator.results import summarize_returns
from joyrl_ray.roles.learner.learner import learner_seconds
from joyrl_ray.run import modes
from joyrl_ray.run.bottleneck import describe as describe_bottleneck
from joyrl_ray.run.bottleneck import judge
from joyrl_ray.run.driver import DriveOutcome
from joyrl_ray.run.evaluations import threshold_of
from joyrl_ray.run.recorder import Recorder
from joyrl_ray.run.startup_parts import startup_parts, teardown_parts
from joyrl_ray.wire.messages import Placement

# Stops that a resume from the last checkpoint gets past (an env that fails, or workers that
# cannot start, would fail again: no resume command for those).
RESUMABLE_STOPS = (
    "coordinator_failed",
    "data_server_failed",
    "learner_failed",
    "stalled",
    "interrupted",
)


@dataclass
class PlaneStats:
    """The coordinator's and the data plane's closing figures (a multi-agent run's data
    planes' each, by policy)."""

    coordinator: CoordinatorStats
    data: DataPlaneStats | None
    data_by_policy: dict[str, DataPlaneStats] | None = None


def build_summary(
    cfg: RunConfig,
    recorder: Recorder,
    outcome: DriveOutcome,
    results: RoleResults,
    planes: PlaneStats | None,
    started_at: float,
    start: modes.Start,
    *,
    ray_ready_at: float | None = None,
) -> dict[str, Any]:
    general = cfg.general
    train = general.mode == "train"
    counters = recorder.counters
    episodes = recorder.episode_rows
    now = time.monotonic()
    wall = time.time() - started_at
    startup = wall - (now - outcome.first_data_at) if outcome.first_data_at else None
    run_s = None
    if outcome.first_data_at is not None:
        run_s = (outcome.stopped_at or now) - outcome.first_data_at
    coordinator = planes.coordinator if planes else None
    data = planes.data if planes else None
    learners = results.learner_stats()
    workers_t, learners_t = recorder.worker_times, recorder.learner_times
    n_learners = general.n_learners if train else 0
    bottleneck = judge(
        workers_t,
        learners_t,
        wall_s=max(run_s or wall, 1e-9),
        n_workers=general.n_workers,
        n_learners=n_learners,
        env_steps=counters["env_steps"] - recorder.start_counters["env_steps"],
        n_envs_per_worker=general.n_envs_per_worker,
        vector_mode=cfg.env.vector_mode if cfg.multi_agent is None else "in_worker",
    )
    summary: dict[str, Any] = {
        "mode": general.mode,
        "algo": run_algorithms(cfg),
        "env_id": cfg.env.id,
        "backend": general.mp_backend,
        "n_workers": general.n_workers,
        "n_learners": n_learners,
        "env_steps": counters["env_steps"],
        "episodes": counters["episodes"],
        "episodes_this_run": recorder.episodes_this_run,
        "updates": counters["updates"],
        "wall_time_s": round(wall, 3),
        "started_at": round(started_at, 3),  # epoch seconds; eval wall times count from here
        "stop_reason": outcome.stop_reason or (coordinator.stop_reason if coordinator else None),
        "error": outcome.error,
        "resumed_from": str(start.source) if start.source is not None and train else None,
        "loaded_checkpoint": str(start.checkpoint_file) if start.checkpoint_file else None,
        "eval_history": recorder.eval_history,
        "worker_restarts": sum(outcome.worker_restarts.values()),
        "worker_restarts_by_worker": {str(k): v for k, v in outcome.worker_restarts.items()},
        "workers_dropped": results.workers_dropped,
        "workers_hung": results.workers_hung,  # restarted: silent, waiting on no call
        "evals_skipped": outcome.evals_skipped,
        "evals_failed": outcome.evals_failed,
        "eval_env_errors": outcome.eval_env_errors,
        "learner_restarts": results.learner_restarts,
        "env_errors": recorder.env_errors,
        "env_timeouts": recorder.env_timeouts,
        "first_env_error": recorder.first_env_error,
        "bottleneck": bottleneck.as_dict(),
        "bottleneck_line": describe_bottleneck(bottleneck, learners=n_learners > 0),
        "time_s": {
            "startup": round(startup, 3) if startup is not None else None,
            "run": round(run_s, 3) if run_s is not None else None,
            "teardown": None,
            "startup_parts": startup_parts(
                started_at,
                outcome.first_placements.values(),
                ray_ready_at=ray_ready_at,
                roles_requested_at=outcome.roles_requested_at,
                first_weights_at=coordinator.first_weights_at if coordinator else None,
                first_env_step_s=startup,
            ),
            "teardown_parts": teardown_parts(outcome.stopped_at, outcome.roles_ended_at, None),
            "workers_stepping": round(workers_t.step_s, 3),
            "workers_push_wait": round(workers_t.push_wait_s, 3),
            "workers_weights_wait": round(workers_t.weights_wait_s, 3),
            "learner_learning": round(learners_t.learn_s, 3),
            "learner_data_wait": round(learners_t.data_wait_s, 3),
            "learner_sync": round(learners_t.sync_s, 3),
            "learner_checkpoint": round(learners_t.checkpoint_s, 3),
            "data_server_busy": data.busy_s if data else None,
            "coordinator_busy": coordinator.busy_s if coordinator else None,
        },
        "learners": [vars(s) | {"times": vars(s.times)} for s in learners],
    }
    if learners:
        summary["device"] = learners[0].device
        summary["learner_seconds"] = learner_seconds(learners)
    if coordinator is not None and cfg.multi_agent is not None:
        summary["policies"] = policy_summaries(recorder, planes, results)
        summary["episodes_dropped"] = coordinator.episodes_dropped
        if coordinator.league is not None:
            summary["league"] = {k: v for k, v in coordinator.league.items() if k != "rows"}
    elif coordinator is not None:
        dropped = Counter(coordinator.transitions_dropped)
        if data is not None:
            dropped.update(data.transitions_dropped)
            dropped["lost_with_shard"] += held_by_lost_shards(coordinator, data)
        summary.update(
            transitions_collected=coordinator.transitions_collected,
            transitions_stored=data.transitions_stored if data else 0,
            transitions_dropped={k: v for k, v in dropped.items() if v},
            weights_versions=coordinator.weights_versions,
            weights_rejected=coordinator.weights_rejected,
            episodes_dropped=coordinator.episodes_dropped,
            buffer=data.buffer if data else {},
            replay_shards=data.shards if data else [],
        )
        if coordinator.normalization is not None:
            summary["normalization"] = coordinator.normalization
    if not train and cfg.multi_agent is None:
        summary.update(
            summarize_returns([e["return"] for e in episodes], [e["length"] for e in episodes])
        )
        summary["episode_lengths"] = [e["length"] for e in episodes]
    if recorder.trajs is not None:
        summary["trajectories"] = recorder.trajs.total
    summary["solved"] = outcome.stop_reason == "reward_threshold" or solved(cfg, recorder)
    if train and summary["stop_reason"] in RESUMABLE_STOPS:
        summary["resume_command"] = resume_command(recorder.task.root)
    return summary


def solved(cfg: RunConfig, recorder: Recorder) -> bool:
    """Whether an evaluation reached ``reward_threshold`` (the figure it is for)."""
    threshold = threshold_of(cfg)
    if threshold.value is None:
        return False
    for row in recorder.eval_history:
        if threshold.policy is not None and row.get("policy") != threshold.policy:
            continue
        if threshold.opponent is not None and row.get("opponent") != threshold.opponent:
            continue
        value = row.get(threshold.metric)
        if value is not None and float(value) >= threshold.value:
            return True
    return False


def run_algorithms(cfg: RunConfig) -> str:
    """What trains: the algorithm, or a multi-agent run's policies with each one's algorithm
    or fixed behaviour (``shared=PPO``, ``learner=DQN, opponent=random``)."""
    if cfg.multi_agent is None:
        return cfg.general.algo_name
    return ", ".join(
        f"{name}={policy.fixed or policy.algo_name or cfg.general.algo_name}"
        for name, policy in cfg.multi_agent.policies.items()
    )


def policy_summaries(
    recorder: Recorder, planes: PlaneStats | None, results: RoleResults
) -> dict[str, dict[str, Any]]:
    """A multi-agent run's figures per learning policy: its transitions (the accounting
    identity holds per policy), updates, weights versions, its agents' episodes and its
    evaluations' best headline return."""
    out: dict[str, dict[str, Any]] = {}
    if planes is None or planes.coordinator.policies is None:
        return out
    data = planes.data_by_policy or {}
    for policy, figures in planes.coordinator.policies.items():
        plane = data.get(policy)
        dropped = Counter(figures.transitions_dropped)
        if plane is not None:
            dropped.update(plane.transitions_dropped)
            shards = PolicyShards(figures.rows_sent)
            dropped["lost_with_shard"] += held_by_lost_shards(shards, plane)
        returns = [e["return"] for e in recorder.episode_rows if e.get("policy") == policy]
        learners = [r.stats for (p, _), r in sorted(results.learners.items()) if p == policy]
        out[policy] = {
            "transitions_collected": figures.transitions_collected,
            "transitions_stored": plane.transitions_stored if plane else 0,
            "transitions_dropped": {k: v for k, v in dropped.items() if v},
            "updates": figures.updates,
            "weights_versions": figures.weights_versions,
            "weights_rejected": figures.weights_rejected,
            "agent_episodes": len(returns),
            "return_mean_last_100": float(np.mean(returns[-100:])) if returns else None,
            "best_eval_return": _finite(recorder.best_eval(policy)),
            "params_digest": learners[0].params_digest if learners else None,
            "replay_shards": plane.shards if plane else [],
        }
    return out


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


@dataclass
class PolicyShards:
    """The rows a policy's workers sent its replay shards (what ``held_by_lost_shards``
    reads)."""

    rows_sent: dict[int, int]


def held_by_lost_shards(coordinator: Any, data: DataPlaneStats) -> int:
    """Rows replay shards held when they died: what their workers sent them, less what the
    restarted shards hold and dropped themselves."""
    lost = 0
    for shard in data.shards:
        sent = coordinator.rows_sent.get(shard["shard"], 0)
        lost += max(sent - shard["stored"] - shard["dropped"], 0)
    return lost


def resume_command(task_root: Path) -> str:
    return (
        f"python main.py --yaml {task_root / 'config.yaml'} general_cfg.load_checkpoint=true "
        f"general_cfg.load_path={task_root}"
    )


def fleet_changes(
    results: RoleResults, placements: dict[str, Placement], started_at: float
) -> dict[str, list[dict[str, Any]]]:
    """``summary.json``'s workers shed (to make room for the learner group, or gone with
    their node past ``n_workers``), returned (shed ones started again) and added (past
    ``n_workers``, as room appeared), each with the seconds into the run and the node's ip."""

    def at_s(entry: dict[str, Any]) -> float:
        return round(entry["at"] - started_at, 1)

    def node_now(worker: int) -> str | None:
        return getattr(placements.get(f"worker {worker}"), "ip", None)

    return {
        "workers_shed": [
            {
                "worker": shed["worker"],
                "at_s": at_s(shed),
                "node": shed["node"],
                "env_steps_lost": shed["lost"],
            }
            for shed in results.workers_shed
        ],
        "workers_returned": [
            {"worker": back["worker"], "at_s": at_s(back), "node": node_now(back["worker"])}
            for back in results.workers_returned
        ],
        "workers_added": [
            {"worker": new["worker"], "at_s": at_s(new), "node": node_now(new["worker"])}
            for new in results.workers_added
        ],
    }
