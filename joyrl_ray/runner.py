"""One run from a merged config: task directory, roles, the driver loop, the summary.

Everything that can be checked is checked before any env or actor starts (config,
checkpoint path, cluster address, resources). Ctrl-C asks every role to stop; the
learner writes its final checkpoint, the summary is written, and the run exits 130.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algos import get_algorithm
from joyrl_ray import modes, ray_cluster
from joyrl_ray.config import RunConfig
from joyrl_ray.data_server import ReplaySpec, StopRule
from joyrl_ray.figures import save_reward_figures
from joyrl_ray.recorder import Recorder
from joyrl_ray.runtimes import LocalRuntime, RayRuntime
from joyrl_ray.task_dir import TaskDir, create_task_dir
from joyrl_ray.video import record_video

EXIT_OK, EXIT_INTERRUPTED = 0, 130
POLL_S = 0.5


@dataclass
class RunResult:
    task_dir: Path
    exit_code: int
    summary: dict[str, Any]


class _Interrupt:
    """Turns the first Ctrl-C into a stop request; a second one aborts at once."""

    def __init__(self) -> None:
        self.requested = False

    def __enter__(self) -> _Interrupt:
        self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc: Any) -> None:
        signal.signal(signal.SIGINT, self.previous)


def _worker_cpus(cfg: RunConfig) -> float:
    """Worker CPU request; by default an even share of what the learner leaves."""
    general = cfg.general
    if general.worker_num_cpus is not None:
        return float(general.worker_num_cpus)
    import ray

    total = ray.cluster_resources().get("CPU", 1.0)
    learner = general.learner_num_cpus if general.mode == "train" else 0.0
    share = (total - learner) / general.n_workers
    return max(min(1.0, round(share, 2)), 0.01)


def run(cfg: RunConfig) -> RunResult:
    started_at = time.time()
    start = modes.prepare(cfg)  # mode checks and the start checkpoint, before anything runs
    cfg, general = start.cfg, start.cfg.general
    for note in start.notes:
        print(f"warning: {note}", file=sys.stderr)
    train = general.mode == "train"
    spec = get_algorithm(general.algo_name)

    ray_mode = None
    worker_cpus = 0.0
    if general.mp_backend == "ray":
        ray_mode = ray_cluster.connect(general.ray_address, num_cpus=general.ray_num_cpus)
    try:
        if ray_mode is not None:
            worker_cpus = _worker_cpus(cfg)
            requests = {
                "CPU": general.n_workers * worker_cpus + (general.learner_num_cpus if train else 0)
            }
            if train and general.learner_num_gpus > 0:
                requests["GPU"] = general.learner_num_gpus
            ray_cluster.check_resources(requests)
        task = create_task_dir(general.tasks_dir, general.mode, cfg.env.id, general.algo_name)
        (task.root / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        return _drive(cfg, task, spec, started_at, start, ray_mode, worker_cpus)
    finally:
        if ray_mode is not None:
            ray_cluster.disconnect(ray_mode)


def _server_kwargs(cfg: RunConfig, spec: Any, counters: dict[str, int] | None) -> dict[str, Any]:
    general = cfg.general
    train = general.mode == "train"
    off_policy = train and not spec.policy_cls.on_policy
    return {
        "stop_rule": StopRule(
            max_env_steps=general.max_env_steps if train else -1,
            max_episode=general.max_episode,
            reward_threshold=general.reward_threshold if train else None,
        ),
        "replay": ReplaySpec.from_algo_cfg(cfg.algo) if off_policy else None,
        "n_workers": general.n_workers,
        "learner_lag_tolerance": general.learner_lag_tolerance,
        "counters": counters,
        "seed": general.seed or None,
    }


def _make_runtime(
    cfg: RunConfig,
    server_kwargs: dict[str, Any],
    learner_kwargs: dict[str, Any] | None,
    ray_mode: str | None,
    worker_cpus: float,
) -> LocalRuntime | RayRuntime:
    if ray_mode is None:
        return LocalRuntime(cfg, server_kwargs, learner_kwargs)
    import ray

    # On a Ray this run started, keep the learner (and its checkpoints) on the driver's node.
    node = ray.get_runtime_context().get_node_id() if ray_mode != "attached" else None
    return RayRuntime(
        cfg, server_kwargs, learner_kwargs, worker_num_cpus=worker_cpus, learner_node=node
    )


def _drive_loop(runtime: LocalRuntime | RayRuntime, recorder: Recorder) -> int:
    """Advance the roles and record their reports until every role is done."""
    exit_code = EXIT_OK
    with _Interrupt() as interrupt:
        while not runtime.advance(POLL_S):
            recorder.ingest(runtime.data_server.call("drain_reports").result())
            if interrupt.requested and exit_code == EXIT_OK:
                runtime.data_server.call("request_stop", "interrupted").result()
                recorder.log("interrupted: stopping every role")
                exit_code = EXIT_INTERRUPTED
    return exit_code


def _drive(
    cfg: RunConfig,
    task: TaskDir,
    spec: Any,
    started_at: float,
    start: modes.Start,
    ray_mode: str | None,
    worker_cpus: float,
) -> RunResult:
    general = cfg.general
    train = general.mode == "train"
    resume, source = start.resume, start.source
    carried = modes.carry_over(start, task)
    counters = dict(resume["counters"]) if resume else None
    learner_kwargs = None
    if train:
        learner_kwargs = {
            "task_dir": str(task.root),
            "started_at": started_at,
            "checkpoint": resume,
            "threads": max(1, int(general.learner_num_cpus)),
        }
    recorder = Recorder(
        task,
        started_at=started_at,
        total_env_steps=general.max_env_steps if train else -1,
        total_episodes=general.max_episode,
        progress=general.progress,
        collect_traj=general.collect_traj,
        counters=counters,
        history=modes.previous_history(source, counters) if resume else {},
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
        runtime = _make_runtime(
            cfg, _server_kwargs(cfg, spec, counters), learner_kwargs, ray_mode, worker_cpus
        )
        try:
            if not train:  # workers act with the checkpoint's weights
                server = runtime.data_server
                server.call("publish_weights", server.share(start.policy.get_weights()), 1).result()
            exit_code = _drive_loop(runtime, recorder)
            roles = runtime.role_stats()
            server_stats = runtime.data_server.call("stats").result()
            recorder.ingest(runtime.data_server.call("drain_reports").result())
        finally:
            runtime.shutdown()

        render: dict[str, Any] = {}
        if not train and cfg.env.render_mode is not None and exit_code == EXIT_OK:
            render = record_video(cfg, start.policy, task, n_episodes=general.render_n_episodes)
            if "render_error" in render:
                recorder.log(f"rendering failed: {render['render_error']}")
                print(f"warning: rendering failed: {render['render_error']}", file=sys.stderr)
        summary = _summary(cfg, recorder, roles, server_stats, started_at, source)
        summary["loaded_checkpoint"] = (
            str(start.checkpoint_file) if start.checkpoint_file is not None else None
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
        recorder.log(f"finished: {summary['stop_reason']}")
    finally:
        recorder.close()
    return RunResult(task.root, exit_code, summary)


def _summary(
    cfg: RunConfig,
    recorder: Recorder,
    roles: dict[str, Any],
    server: dict[str, Any],
    started_at: float,
    source: Path | None,
) -> dict[str, Any]:
    from joyrl_ray.evaluator import summarize_returns

    general = cfg.general
    counters = recorder.counters
    workers = [w for w in roles.get("workers", []) if w]
    episodes = recorder.episode_rows
    summary: dict[str, Any] = {
        "mode": general.mode,
        "algo": general.algo_name,
        "env_id": cfg.env.id,
        "backend": general.mp_backend,
        "n_workers": general.n_workers,
        "env_steps": counters["env_steps"],
        "episodes": counters["episodes"],
        "episodes_this_run": recorder.episodes_this_run,
        "updates": counters["updates"],
        "wall_time_s": round(time.time() - started_at, 3),
        "started_at": round(started_at, 3),  # epoch seconds; eval wall times count from here
        "stop_reason": server["stop_reason"],
        "resumed_from": str(source) if source is not None and general.mode == "train" else None,
        "eval_history": recorder.eval_history,
        "transitions_collected": sum(w["transitions_collected"] for w in workers),
        "transitions_stored": server["transitions_stored"],
        "transitions_dropped": server["transitions_dropped"],
        "weights_versions": server["weights_versions"],
        "time_s": {
            "workers_busy": round(sum(w["busy_s"] for w in workers), 3),
            "workers_wait": round(sum(w["wait_s"] for w in workers), 3),
            "learner_busy": roles.get("learner", {}).get("busy_s", 0.0),
            "learner_wait": roles.get("learner", {}).get("wait_s", 0.0),
            "learner_eval": roles.get("learner", {}).get("eval_s", 0.0),
            "data_server_busy": server["busy_s"],
        },
        "roles": roles,
    }
    if "learner" in roles:
        summary["device"] = roles["learner"]["device"]
    if general.mode == "test":
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
    return summary
