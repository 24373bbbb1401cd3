"""One run from a merged config: checks, task directory, roles, the driver loop, the summary.

Everything that can be checked is checked before any actor starts (config, env and its
packages, the algorithm's fit to the env's spaces, checkpoint path, cluster address, and
whether the cluster can hold the roles). A local Ray starts in the background meanwhile,
so its start-up overlaps the driver's own work. The result line and the task directory
are printed before Ray is torn down.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from algos import get_algorithm
from envs.multi_agent import AgentSpaces
from envs.probe import probe_spaces
from joyrl_ray.backends.local import LocalRuntime
from joyrl_ray.backends.lockstep import LockstepRuntime
from joyrl_ray.backends.placement import (
    ClusterFitError,
    Node,
    alive_nodes,
    check_fits,
    describe,
    make_requests,
    placement_line,
    placement_summary,
)
from joyrl_ray.backends.planes import PlaneSetup
from joyrl_ray.backends.ray_cluster import ClusterError, RaySession, job_notes, start_session
from joyrl_ray.backends.ray_runtime import RayRuntime
from joyrl_ray.backends.runtime import (
    LearnerSetup,
    LearnerSetups,
    RoleConfigs,
    RoleResults,
    Runtime,
)
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.data.dataset_rows import DatasetSource
from joyrl_ray.data_needs import DataNeeds
from joyrl_ray.flows.base import DataFlow
from joyrl_ray.flows.joined import JoinedPlanes, join_stats
from joyrl_ray.flows.registry import flow_for
from joyrl_ray.heap import freeze_startup_heap, thaw_heap
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.normalization import CHECKPOINT_KEY, NormSettings, unnormalizable
from joyrl_ray.policies import DEFAULT_POLICY
from joyrl_ray.run import modes, signals
from joyrl_ray.run.agents import prepare_agents, refuse_section
from joyrl_ray.run.checkpoint import CheckpointStore
from joyrl_ray.run.dataset import DatasetRun, prepare_dataset
from joyrl_ray.run.driver import DriveOutcome, Driver
from joyrl_ray.run.figures import save_reward_figures
from joyrl_ray.run.league_files import (
    carry_snapshots,
    league_at_checkpoint,
    league_start,
    read_snapshot,
    snapshot_names,
    write_league,
)
from joyrl_ray.run.recorder import Recorder
from joyrl_ray.run.startup_parts import teardown_parts
from joyrl_ray.run.summary import PlaneStats, build_summary, fleet_changes
from joyrl_ray.run.task_dir import TaskDir, create_task_dir
from joyrl_ray.run.tracking import RunTracking, start_tracking
from joyrl_ray.run.video import record_video
from joyrl_ray.wire.handles import RoleError
from joyrl_ray.wire.messages import Counters, Placement

EXIT_OK = 0
EXIT_FAILED = 1


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
    refused = unnormalizable(spaces[0]) if cfg.env.normalize_obs else None
    if refused is not None:
        raise ConfigError(f"env_cfg.normalize_obs=true: {refused}")


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


def _needs(cfg: RunConfig) -> DataNeeds | None:
    """What the algorithm asks of the data path (None in test mode: nothing is stored)."""
    general = cfg.general
    if general.mode != "train":
        return None
    return get_algorithm(general.algo_name).policy_cls.data_needs(cfg.algo)


def _policy_needs(cfg: RunConfig, plan: MultiAgentPlan) -> dict[str, DataNeeds | None]:
    """What each learning policy of a multi-agent run asks of the data path (test mode:
    nothing, each policy only reports)."""
    needs: dict[str, DataNeeds | None] = {}
    for policy in plan.trained:
        if cfg.general.mode != "train":
            needs[policy] = None
            continue
        algo_name, algo = plan.policies[policy].algo_name, plan.policies[policy].algo
        needs[policy] = get_algorithm(str(algo_name)).policy_cls.data_needs(algo)
    return needs


def _flow(cfg: RunConfig, plan: MultiAgentPlan | None) -> DataFlow:
    """How data moves in this run (a multi-agent run's: its first learning policy's)."""
    if plan is None:
        return flow_for(_needs(cfg))
    return flow_for(next(iter(_policy_needs(cfg, plan).values())))


def run(
    cfg: RunConfig,
    *,
    started_at: float | None = None,
    announce: Callable[[RunResult], None] | None = None,
    session: RaySession | None = None,
    on_eval: Callable[[dict[str, Any], Path], None] | None = None,
) -> RunResult:
    """Run ``cfg``; ``announce`` sees the result before Ray is torn down, ``on_eval`` each
    online evaluation's row (``results/evals.csv``) as it is written, with the task
    directory (a sweep's trial reports it to Ray Tune, with the checkpoint beside it).

    ``session`` is Ray already starting for this run (:func:`start_session`); without one,
    a Ray run starts its own here. Either way the run closes it.
    """
    started_at = started_at or time.time()
    general = cfg.general
    if session is None:
        session = start_session(general)
    try:
        probed = probe_spaces(cfg.env, max_episode_steps=general.max_step)
        plan: MultiAgentPlan | None = None
        spaces: Any = None
        if isinstance(probed, AgentSpaces):
            plan = prepare_agents(cfg, probed)
        else:
            refuse_section(cfg)
            spaces = probed
            _check_spaces(cfg, spaces)
        start = modes.prepare(cfg, spaces, plan)
        cfg = start.cfg
        flow = _flow(cfg, plan)  # how data moves in this run, decided once
        dataset = prepare_dataset(cfg, flow, spaces, plan)
        if plan is not None and cfg.general.random_action_rate > 0:
            raise ConfigError(
                f"general_cfg.random_action_rate={cfg.general.random_action_rate}: a "
                "multi-agent env's agents act by their policies; allowed with multi_agent: 0"
            )
        if start.resume and cfg.general.save_buffer:  # the kept data must fit this run's
            flow.check_resume(cfg.general, modes.saved_buffer(start), str(start.source))
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
            policies = len(plan.trained) if plan is not None else 1
            train = cfg.general.mode == "train"
            requests = make_requests(cfg.general, nodes, train, policies=policies)
            try:
                check_fits(requests, nodes)
            except ClusterFitError as exc:
                raise ClusterError(str(exc)) from None
        task = create_task_dir(
            cfg.general.tasks_dir, cfg.general.mode, cfg.env.id, cfg.general.algo_name
        )
        (task.root / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
        # general_cfg.tracking: each tracker in a thread of its own, never holding the run up
        tracking = start_tracking(cfg, task, start.source if start.resume else None)
        try:
            result = _run_in(
                cfg,
                flow,
                task,
                dataset,
                start,
                spaces,
                plan,
                requests,
                started_at,
                announce,
                session,
                on_eval,
                tracking,
            )
        except BaseException:
            tracking.finish(EXIT_FAILED)
            raise
        tracking.finish(result.exit_code)  # after the summary's last write (teardown time)
        return result
    finally:
        thaw_heap()  # the roles froze what they started with (freeze_startup_heap)
        if session is not None:
            session.close()


def plane_setup(
    cfg: RunConfig,
    needs: DataNeeds | None,
    counters: Counters | None,
    buffer: Any,
    plan: MultiAgentPlan | None = None,
    dataset: DatasetSource | None = None,
) -> PlaneSetup:
    """What the coordinator and the data plane start from (``buffer``: a saved replay; a
    multi-agent run's ``plan``: a data plane for each of its learning policies)."""
    general = cfg.general
    train = general.mode == "train"
    return PlaneSetup(
        stop_rule=StopRule(
            max_env_steps=general.max_env_steps if train else -1,
            max_episode=general.max_episode,
            max_updates=general.max_updates if train else -1,
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
        saved_replay=buffer,
        dataset=dataset,
        normalization=NormSettings.of(cfg.env),
        policies=_policy_needs(cfg, plan) if plan is not None else None,
        league=plan.league if plan is not None and (train or plan.league_test) else None,
    )


def _run_in(
    cfg: RunConfig,
    flow: DataFlow,
    task: TaskDir,
    dataset: DatasetRun | None,
    start: modes.Start,
    spaces: Any,
    plan: MultiAgentPlan | None,
    requests: Any,
    started_at: float,
    announce: Callable[[RunResult], None] | None,
    session: RaySession | None,
    on_eval: Callable[[dict[str, Any], Path], None] | None,
    tracking: RunTracking,
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
        total_env_steps=general.max_env_steps if train and dataset is None else -1,
        total_updates=general.max_updates if train else -1,
        total_episodes=general.max_episode,
        progress=general.progress,
        collect_traj=general.collect_traj,
        counters=vars(counters) if counters else None,
        history=history,
        n_workers=general.n_workers,
        n_learners=general.n_learners if train else 0,
        update_unit=flow.update_unit,
        on_eval=on_eval,
        tracking=tracking,
        policies=plan.trained if plan is not None else None,
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
        if dataset is not None:
            recorder.log(dataset.line())
            if general.progress:
                recorder.note(dataset.line())
        stores = checkpoint_stores(task, general.keep_checkpoints, plan)
        buffer = modes.saved_buffer(start) if resume and general.save_buffer else None
        outcome, results, plane_stats, nodes_line = _drive(
            cfg,
            recorder,
            stores,
            start,
            spaces,
            plan,
            requests,
            counters,
            buffer,
            session,
            dataset.source if dataset is not None else None,
        )
        render: dict[str, Any] = {}
        if not train and cfg.env.render_mode is not None and outcome.exit_code == EXIT_OK:
            render = record_video(
                cfg,
                start.policy if plan is None else start.acting,
                task,
                n_episodes=general.render_n_episodes,
                normalization=(start.checkpoint or {}).get(CHECKPOINT_KEY),
                plan=plan,
            )
            if "render_error" in render:
                recorder.log(f"rendering failed: {render['render_error']}")
                print(f"warning: rendering failed: {render['render_error']}", file=sys.stderr)
        summary = build_summary(
            cfg,
            recorder,
            outcome,
            results,
            plane_stats,
            started_at,
            start,
            ray_ready_at=session.ready_at if session is not None else None,
        )
        league = plane_stats.coordinator.league if plane_stats is not None else None
        if league is None and train and plan is not None and plan.league is not None:
            # The coordinator died with the live league: the last checkpoint's is kept.
            league = league_at_checkpoint(task.root, plan.league)
            if league is not None:
                summary["league"] = {k: v for k, v in league.items() if k != "rows"}
                summary["league"]["from_checkpoint"] = True
                league["games"] = {}
        if league is not None and train:
            write_league(task, league, outcome.league_ratings, general.save_fig)
            recorder.log(f"league: strongest {league['strongest']}; {task.results / 'league.csv'}")
        elif league is not None:  # test mode's games: only what this run played counts
            summary["league"] = {"games": league["games"]}
            for pair, counts in league["games"].items():
                shown = ", ".join(f"{k} {v}" for k, v in counts.items())
                recorder.log(f"league games {pair}: {shown}")
        summary["data_flow"] = flow.name  # replay, rollouts, async_rollouts or none
        if dataset is not None:
            summary["dataset"] = dataset.summary()
        nodes = requests.nodes if requests is not None else []
        summary["placement"] = placement_summary(nodes_line, nodes, outcome.placements)
        summary.update(fleet_changes(results, outcome.placements, started_at))
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
        summary["time_s"]["teardown_parts"] = teardown_parts(
            outcome.stopped_at, outcome.roles_ended_at, session.closed_at
        )
        recorder.write_summary(summary)
    return result


def checkpoint_stores(
    task: TaskDir, keep: int, plan: MultiAgentPlan | None
) -> dict[str, CheckpointStore]:
    """Where each policy's checkpoints go: ``models/`` (a single-agent run's one policy), or
    ``models/<policy>/`` for each learning policy of a multi-agent run."""
    if plan is None:
        return {DEFAULT_POLICY: CheckpointStore(task.models, keep=keep)}
    return {p: CheckpointStore(task.models / p, keep=keep) for p in plan.trained}


def _learner_setups(
    start: modes.Start, spaces: Any, plan: MultiAgentPlan | None, driver: Any
) -> LearnerSetups:
    """What each learning policy's learners start from (a resume: its checkpoint) and
    restart from (the driver's newest checkpoint of that policy)."""

    def latest(policy: str) -> Callable[[], bytes | None]:
        return lambda: driver[0].latest_states.get(policy) if driver else None

    if plan is None:
        state = start.checkpoint_bytes() if start.resume else None
        return {DEFAULT_POLICY: LearnerSetup(spaces, state, latest(DEFAULT_POLICY))}
    setups: LearnerSetups = {}
    for policy in plan.trained:
        state = start.policy_bytes(policy) if start.resume else None
        both = (plan.policies[policy].obs_space, plan.policies[policy].action_space)
        setups[policy] = LearnerSetup(both, state, latest(policy))
    return setups


def _drive(
    cfg: RunConfig,
    recorder: Recorder,
    stores: dict[str, CheckpointStore],
    start: modes.Start,
    spaces: Any,
    plan: MultiAgentPlan | None,
    requests: Any,
    counters: Counters | None,
    buffer: Any,
    session: RaySession | None,
    dataset: DatasetSource | None,
) -> tuple[DriveOutcome, RoleResults, Any, str]:
    general = cfg.general
    train = general.mode == "train"
    driver: list[Driver] = []  # the driver, once made: learners restart from its checkpoints
    setups = _learner_setups(start, spaces, plan, driver) if train else {}
    needs = _needs(cfg) if plan is None else None
    planes = plane_setup(cfg, needs, counters, buffer, plan, dataset)
    if start.checkpoint is not None:  # resume and test mode: the checkpoint's statistics
        planes.start_normalization = start.checkpoint.get(CHECKPOINT_KEY)
    if plan is not None and start.resume:
        planes.start_updates = start.policy_updates()
    if planes.league is not None and start.source is not None:  # a resume, or a test game
        main = start.policy_checkpoints[planes.league.main]
        planes.start_league = league_start(start.source, main.state)
        if train:
            carry_snapshots(start.source, recorder.task.models)
    if plan is not None and plan.league_test is not None and start.source is not None:
        player = plan.league_test[0]
        if player in snapshot_names(start.source):  # a snapshot in main's place
            weights = read_snapshot(start.source / "models", player)
            start.acting[plan.trained[0]].set_weights(weights)
    roles = RoleConfigs.of(cfg, plan)  # each role's own slice, built once
    nodes_line = "one process"
    runtime: Runtime
    roles_requested_at = time.time()
    if session is None:
        runtime = LocalRuntime(general, roles, planes, setups, spaces)
    else:
        nodes_line = describe(alive_nodes())
        backend = LockstepRuntime if general.lockstep else RayRuntime
        runtime = backend(general, roles, planes, setups, spaces, requests)
    freeze_startup_heap()  # the driver's own libraries and roles are all loaded by now
    try:
        if not train:  # workers act with the checkpoint's weights
            for policy, acting in start.acting_policies(plan).items():
                coordinator = runtime.coordinator.for_policy(policy)
                coordinator.publish_weights(acting.get_weights(), 1).result(60)
        # The coordinator, the data plane, the workers and the learners.
        n_roles = 1 + len(runtime.data.clients) + general.n_workers
        n_roles += general.n_learners * len(setups)

        def announce_placement(placements: dict[str, Placement]) -> None:
            line = placement_line(nodes_line, placements)
            recorder.log(line)
            if general.progress:
                recorder.note(line)

        driver.append(
            Driver(
                cfg,
                runtime,
                recorder,
                stores,
                expected_roles=n_roles,
                announce_placement=announce_placement,
                roles_requested_at=roles_requested_at,
            )
        )
        outcome = driver[0].drive()
        return outcome, runtime.results, _plane_stats(driver[0], runtime, recorder), nodes_line
    finally:
        runtime.shutdown()


def _plane_stats(driver: Driver, runtime: Runtime, recorder: Recorder) -> PlaneStats | None:
    """The closing stats; None when the coordinator died (the summary goes without)."""
    if not driver.coordinator_alive:
        return None
    try:
        coordinator = runtime.coordinator.stats().result(60)
    except RoleError as exc:  # it died after the run's end: the run's results stand
        recorder.log(f"the coordinator died at the end of the run: {exc}")
        return None
    by_policy = None
    try:
        if isinstance(runtime.data, JoinedPlanes):
            by_policy = runtime.data.stats_by_policy()
            data = join_stats(list(by_policy.values()))
        else:
            data = runtime.data.stats()
    except RoleError as exc:
        recorder.log(f"the data plane's stats are missing: {exc}")
        data = None
    return PlaneStats(coordinator, data, by_policy)
