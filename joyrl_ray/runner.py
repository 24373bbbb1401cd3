"""One run from a merged config: checks, task directory, roles, the driver loop, the summary.

Everything that can be checked is checked before any actor starts (config, env and its
packages, the algorithm's fit to the env's spaces, checkpoint path, cluster address, and
whether the cluster can hold the roles). A local Ray starts in the background meanwhile,
so its start-up overlaps the driver's own work. The result line and the task directory
are printed before Ray is torn down.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algos import get_algorithm
from envs.probe import probe_env
from joyrl_ray import modes, signals
from joyrl_ray.bottleneck import describe as describe_bottleneck
from joyrl_ray.bottleneck import judge
from joyrl_ray.checkpoint import CheckpointStore
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.control.coordinator import CoordinatorStats, StopRule
from joyrl_ray.driver import DriveOutcome, Driver
from joyrl_ray.figures import save_reward_figures
from joyrl_ray.handles import RoleError
from joyrl_ray.heap import freeze_startup_heap, thaw_heap
from joyrl_ray.learner import learner_seconds
from joyrl_ray.messages import Counters, Placement
from joyrl_ray.placement import (
    ClusterFitError,
    Node,
    alive_nodes,
    check_fits,
    describe,
    make_requests,
    placement_line,
    placement_summary,
)
from joyrl_ray.planes import PlaneSetup, split_shard_states
from joyrl_ray.ray_cluster import ClusterError, RaySession, job_notes, start_session
from joyrl_ray.recorder import Recorder, update_unit
from joyrl_ray.runtimes import (
    DataPlaneStats,
    LearnerSetup,
    LocalRuntime,
    RayRuntime,
    RoleResults,
    Runtime,
)
from joyrl_ray.task_dir import TaskDir, create_task_dir
from joyrl_ray.video import record_video

EXIT_OK = 0
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
class RunResult:
    task_dir: Path
    exit_code: int
    summary: dict[str, Any]


def _check_spaces(cfg: RunConfig, spaces: Any) -> None:
    policy_cls = get_algorithm(cfg.general.algo_name).policy_cls
    try:
        policy_cls.check_spaces(*spaces)
    except ValueError as exc:
        raise ConfigError(f"general_cfg.algo_name={cfg.general.algo_name} {exc}") from None


def _check_device(cfg: RunConfig, nodes: list[Node] | None) -> None:
    """``device: cuda`` needs a GPU where the learners run: this process (``nodes`` None,
    mp_backend single) or some node of the Ray cluster."""
    general = cfg.general
    if general.device != "cuda" or general.mode != "train":
        return
    if nodes is None:
        import torch

        if torch.cuda.is_available():
            return
        where = "torch sees no GPU in this process (mp_backend=single)"
    else:
        if any(node.resources.get("GPU", 0.0) > 0 for node in nodes):
            return
        where = f"no node of the Ray cluster has a GPU ({describe(nodes)})"
    raise ConfigError(
        f"general_cfg.device=cuda: {where}; allowed here: auto (cuda when visible) or cpu"
    )


def _check_saved_shards(cfg: RunConfig, start: modes.Start) -> None:
    """A kept replay goes back into as many shards, of the same size, as it was saved from."""
    general = cfg.general
    if not (start.resume and general.save_buffer):
        return
    saved = modes.saved_buffer(start)
    if saved is None:
        return
    shards = split_shard_states(saved)
    count = len(shards)
    if count != general.n_replay_shards:
        raise ConfigError(
            f"general_cfg.n_replay_shards={general.n_replay_shards}, but the replay saved in "
            f"{start.source} has {count} shard(s); allowed: {count} (or "
            "general_cfg.save_buffer=false to start with an empty replay)"
        )
    size = getattr(cfg.algo, "buffer_size", None)
    capacities = {int(shard["ring"][3]) for shard in shards if "ring" in shard}
    if size is not None and capacities and capacities != {math.ceil(size / count)}:
        saved_size = max(capacities) * count
        raise ConfigError(
            f"algo_cfg.buffer_size={size}, but the replay saved in {start.source} was "
            f"saved with buffer_size={saved_size}; allowed: {saved_size} (or "
            "general_cfg.save_buffer=false to start with an empty replay)"
        )


def run(
    cfg: RunConfig,
    *,
    started_at: float | None = None,
    announce: Callable[[RunResult], None] | None = None,
    session: RaySession | None = None,
) -> RunResult:
    """Run ``cfg``; ``announce`` sees the result before Ray is torn down.

    ``session`` is Ray already starting for this run (:func:`start_session`); without one,
    a Ray run starts its own here. Either way the run closes it.
    """
    started_at = started_at or time.time()
    general = cfg.general
    if session is None:
        session = start_session(general)
    try:
        spaces = probe_env(cfg.env, max_episode_steps=general.max_step)
        _check_spaces(cfg, spaces)
        start = modes.prepare(cfg, spaces)
        _check_saved_shards(cfg, start)
        cfg = start.cfg
        if session is not None:
            start.notes.extend(job_notes(cfg.general.tasks_dir))
        for note in start.notes:
            print(f"warning: {note}", file=sys.stderr)
        requests = None
        if session is None:
            _check_device(cfg, None)
        else:
            session.wait()
            signals.reinstall()  # ray.init set a SIGTERM handler that aborts the process
            nodes = alive_nodes()
            _check_device(cfg, nodes)
            requests = make_requests(cfg.general, nodes, cfg.general.mode == "train")
            try:
                check_fits(requests, nodes)
            except ClusterFitError as exc:
                raise ClusterError(str(exc)) from None
        task = create_task_dir(
            cfg.general.tasks_dir, cfg.general.mode, cfg.env.id, cfg.general.algo_name
        )
        (task.root / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        return _run_in(cfg, task, start, spaces, requests, started_at, announce, session)
    finally:
        thaw_heap()  # the roles froze what they started with (freeze_startup_heap)
        if session is not None:
            session.close()


def plane_setup(cfg: RunConfig, counters: Counters | None, buffer: Any) -> PlaneSetup:
    """What the coordinator and the data plane start from (``buffer``: a saved replay)."""
    general = cfg.general
    train = general.mode == "train"
    needs = get_algorithm(general.algo_name).policy_cls.data_needs(cfg.algo) if train else None
    return PlaneSetup(
        stop_rule=StopRule(
            max_env_steps=general.max_env_steps if train else -1,
            max_episode=general.max_episode,
            max_env_errors_per_1000=general.max_env_errors_per_1000,
            env_error_window_steps=general.env_error_window_steps,
        ),
        needs=needs,
        n_workers=general.n_workers,
        n_learners=general.n_learners if train else 1,
        n_shards=general.n_replay_shards,
        learner_lag_tolerance=general.learner_lag_tolerance,
        counters=counters,
        seed=general.seed or None,
        buffer_states=list(split_shard_states(buffer)) if buffer is not None else [],
    )


@dataclass
class PlaneStats:
    """The coordinator's and the data plane's closing figures."""

    coordinator: CoordinatorStats
    data: DataPlaneStats | None


def _run_in(
    cfg: RunConfig,
    task: TaskDir,
    start: modes.Start,
    spaces: Any,
    requests: Any,
    started_at: float,
    announce: Callable[[RunResult], None] | None,
    session: RaySession | None,
) -> RunResult:
    general = cfg.general
    train = general.mode == "train"
    resume = start.resume
    carried = modes.carry_over(start, task)
    counters = Counters(**resume["counters"]) if resume else None
    history = modes.previous_history(start.source, resume["counters"]) if resume else {}
    recorder = Recorder(
        task,
        started_at=started_at,
        total_env_steps=general.max_env_steps if train else -1,
        total_episodes=general.max_episode,
        progress=general.progress,
        collect_traj=general.collect_traj,
        counters=vars(counters) if counters else None,
        history=history,
        n_workers=general.n_workers,
        n_learners=general.n_learners if train else 0,
        update_unit=update_unit(
            get_algorithm(general.algo_name).policy_cls.data_needs(cfg.algo) if train else None
        ),
    )
    try:
        recorder.log(
            f"task directory {task.root}; backend {general.mp_backend}; mode {general.mode}"
        )
        if start.checkpoint_file is not None:
            what = "resuming from" if resume else "testing"
            recorder.log(
                f"{what} {start.checkpoint_file}; carried over: {', '.join(carried) or '-'}"
            )
        for note in start.notes:
            recorder.log(f"warning: {note}")
        store = CheckpointStore(task.models, keep=general.keep_checkpoints)
        buffer = modes.saved_buffer(start) if resume and general.save_buffer else None
        outcome, results, server_stats, nodes_line = _drive(
            cfg, recorder, store, start, spaces, requests, counters, buffer, session
        )
        render: dict[str, Any] = {}
        if not train and cfg.env.render_mode is not None and outcome.exit_code == EXIT_OK:
            render = record_video(cfg, start.policy, task, n_episodes=general.render_n_episodes)
            if "render_error" in render:
                recorder.log(f"rendering failed: {render['render_error']}")
                print(f"warning: rendering failed: {render['render_error']}", file=sys.stderr)
        summary = _summary(cfg, recorder, outcome, results, server_stats, started_at, start)
        nodes = requests.nodes if requests is not None else []
        summary["placement"] = placement_summary(nodes_line, nodes, outcome.placements)
        if session is not None:  # the last Ray call was the one above
            session.begin_close()  # Ray stops while the summary and figures are written
        summary["nodes_lost"] = len(summary["placement"]["nodes_lost"])
        if summary["nodes_lost"]:
            recorder.log(
                f"nodes lost during the run: {', '.join(summary['placement']['nodes_lost'])}"
            )
        summary.update(render)
        recorder.write_summary(summary)
        if general.save_fig or general.show_fig:
            save_reward_figures(
                task,
                recorder.episode_rows,
                recorder.eval_history,
                mode=general.mode,
                save=general.save_fig,
                show=general.show_fig,
            )
        recorder.log(summary["bottleneck_line"])
        recorder.log(f"finished: {summary['stop_reason']}")
    finally:
        recorder.close()
    result = RunResult(task.root, outcome.exit_code, summary)
    if announce is not None:
        announce(result)
    if session is not None:
        session.close()
        summary["time_s"]["teardown"] = session.teardown_s
        recorder.write_summary(summary)
    return result


def _drive(
    cfg: RunConfig,
    recorder: Recorder,
    store: CheckpointStore,
    start: modes.Start,
    spaces: Any,
    requests: Any,
    counters: Counters | None,
    buffer: Any,
    session: RaySession | None,
) -> tuple[DriveOutcome, RoleResults, Any, str]:
    general = cfg.general
    train = general.mode == "train"
    driver: Driver | None = None
    setup = None
    if train:
        state = start.checkpoint_bytes() if start.resume else None
        setup = LearnerSetup(spaces, state, lambda: driver.latest_state if driver else None)
    planes = plane_setup(cfg, counters, buffer)
    nodes_line = "one process"
    runtime: Runtime
    if session is None:
        runtime = LocalRuntime(cfg, planes, setup, spaces)
    else:
        nodes_line = describe(alive_nodes())
        runtime = RayRuntime(cfg, planes, setup, spaces, requests)
    freeze_startup_heap()  # the driver's own libraries and roles are all loaded by now
    try:
        if not train:  # workers act with the checkpoint's weights
            runtime.coordinator.publish_weights(start.policy.get_weights(), 1).result(60)
        best = max((e["return_mean"] for e in recorder.eval_history), default=-math.inf)
        # The coordinator, the data plane, the workers and the learners.
        n_roles = 1 + len(runtime.data_plane) + general.n_workers
        n_roles += general.n_learners if train else 0

        def announce_placement(placements: dict[str, Placement]) -> None:
            line = placement_line(nodes_line, placements)
            recorder.log(line)
            if general.progress:
                recorder.note(line)

        driver = Driver(
            cfg,
            runtime,
            recorder,
            store,
            expected_roles=n_roles,
            best_return=best,
            announce_placement=announce_placement,
        )
        outcome = driver.drive()
        return outcome, runtime.results, _server_stats(driver, runtime, recorder), nodes_line
    finally:
        runtime.shutdown()


def _server_stats(driver: Driver, runtime: Runtime, recorder: Recorder) -> PlaneStats | None:
    """The closing stats; None when the coordinator died (the summary goes without)."""
    if not driver.server_alive:
        return None
    try:
        coordinator = runtime.coordinator.stats().result(60)
    except RoleError as exc:  # it died after the run's end: the run's results stand
        recorder.log(f"the coordinator died at the end of the run: {exc}")
        return None
    try:
        data = runtime.data_plane_stats()
    except RoleError as exc:
        recorder.log(f"the data plane's stats are missing: {exc}")
        data = None
    return PlaneStats(coordinator, data)


def _summary(
    cfg: RunConfig,
    recorder: Recorder,
    outcome: DriveOutcome,
    results: RoleResults,
    planes: PlaneStats | None,
    started_at: float,
    start: modes.Start,
) -> dict[str, Any]:
    from joyrl_ray.evaluator import summarize_returns

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
        vector_mode=cfg.env.vector_mode,
    )
    summary: dict[str, Any] = {
        "mode": general.mode,
        "algo": general.algo_name,
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
        "evals_skipped": outcome.evals_skipped,
        "learner_restarts": results.learner_restarts,
        "env_errors": recorder.env_errors,
        "first_env_error": recorder.first_env_error,
        "bottleneck": bottleneck.as_dict(),
        "bottleneck_line": describe_bottleneck(bottleneck, learners=n_learners > 0),
        "time_s": {
            "startup": round(startup, 3) if startup is not None else None,
            "run": round(run_s, 3) if run_s is not None else None,
            "teardown": None,
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
    if coordinator is not None:
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
    if not train:
        summary.update(
            summarize_returns([e["return"] for e in episodes], [e["length"] for e in episodes])
        )
        summary["episode_lengths"] = [e["length"] for e in episodes]
    if recorder.trajs is not None:
        summary["trajectories"] = recorder.trajs.total
    threshold = general.reward_threshold
    summary["solved"] = bool(
        threshold is not None
        and recorder.eval_history
        and max(e["return_mean"] for e in recorder.eval_history) >= threshold
    )
    if train and summary["stop_reason"] in RESUMABLE_STOPS:
        summary["resume_command"] = resume_command(recorder.task.root)
    return summary


def held_by_lost_shards(coordinator: CoordinatorStats, data: DataPlaneStats) -> int:
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
