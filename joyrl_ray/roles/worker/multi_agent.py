"""The worker of a multi-agent run: steps PettingZoo envs, acting for every agent.

Each agent acts with its policy (``multi_agent.policy_mapping``): the worker gathers, at each
vector step, the observations of the agents that must act now (every live agent of a
parallel env, the agent to move in a turn-based one), acts for them with one forward pass
per policy, and steps each env with its agents' actions. A policy that learns has a
:class:`~joyrl_ray.roles.worker.channel.PolicyChannel` (its sender, its acting weights, its
sends in flight) and an :class:`~joyrl_ray.roles.worker.agent_rows.AgentRows` (its agents'
transitions as their outcomes come in, cut into chunks for its flow); a fixed one (random,
scripted, a checkpoint's) only acts.

A report goes with each policy's chunk: the transitions, finished episodes (each agent's)
and trajectories of that policy's agents; the env steps and the env's finished episodes go
in the first report sent after they happen, and so do env errors and the worker's times.
An env that raises is rebuilt alone: its agents' decisions still without an outcome are
dropped (never counted: they were not transitions yet) and what they completed before is
kept, cut there as a truncated episode, as a time limit would cut it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from envs.multi_agent import MultiAgentEnv, make_multi_agent_env
from envs.rewards import learning_rewards
from joyrl_ray.batch import REWARDS, Batch, batch_rows
from joyrl_ray.heap import freeze_startup_heap
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.roles.acting import Observations, acting_policy
from joyrl_ray.roles.worker.agent_rows import AgentRows
from joyrl_ray.roles.worker.channel import ACK_TIMEOUT_S, PolicyChannel
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.envs import FAILED_REBUILDS_BEFORE_GIVING_UP
from joyrl_ray.roles.worker.kill_schedule import KillSchedule
from joyrl_ray.roles.worker.league_play import LEAGUE_EVERY, LeaguePlay
from joyrl_ray.roles.worker.normalizer import WorkerNormalizer
from joyrl_ray.roles.worker.sender import Payload, SenderSetup, WorkerSender
from joyrl_ray.roles.worker.worker import WorkerLoop, WorkerStats
from joyrl_ray.seeding import derive_seed
from joyrl_ray.wire.handles import ObjectStore, first_line
from joyrl_ray.wire.messages import (
    EpisodeColumns,
    Placement,
    WorkerReport,
    WorkerTimes,
)

TRAJECTORY_KEYS = ("obs", "actions", "rewards", "terminated", "truncated", "next_obs")


@dataclass
class SlotEpisodes:
    """A policy's agents' running episodes (one per slot), and those that ended."""

    returns: np.ndarray
    lengths: np.ndarray
    ended: list[tuple[float, int, str, int]] = field(default_factory=list)  # ret, len, agent, at

    @classmethod
    def of(cls, slots: int) -> SlotEpisodes:
        return cls(np.zeros(slots), np.zeros(slots, np.int64))

    def add(self, slot: int, reward: float, done: bool, agent: str, env_steps: int) -> None:
        self.returns[slot] += reward
        self.lengths[slot] += 1
        if done:
            self.ended.append(
                (float(self.returns[slot]), int(self.lengths[slot]), agent, env_steps)
            )
            self.returns[slot] = 0.0
            self.lengths[slot] = 0

    def forget(self, slot: int) -> None:
        self.returns[slot] = 0.0
        self.lengths[slot] = 0


@dataclass
class PendingRun:
    """What the worker reports of the run, with whichever of its reports goes next."""

    env_steps: int = 0
    env_episodes: int = 0
    env_errors: list[str] = field(default_factory=list)
    fatal_env_error: str | None = None


#: While some policies wait for their turn, the others' collection asks after them every this
#: many vector steps (a call to the coordinator each).
POLL_EVERY = 8
#: How long the policies whose turn came wait for the others' (seconds), see _turn_grace:
#: while a chunk is begun, TURN_GRACE_S; otherwise GRACE_PER_GAP times the widest gap seen
#: between a round's first turn and its last (MAX_TURN_GRACE_S until one is seen), within
#: [TURN_GRACE_S, MAX_TURN_GRACE_S].
TURN_GRACE_S = 0.5
MAX_TURN_GRACE_S = 10.0
GRACE_PER_GAP = 4.0


class MultiAgentWorker(WorkerLoop):
    """Collects experience in multi-agent envs for one run; a Ray actor or a plain object."""

    def __init__(
        self,
        worker_id: int,
        cfg: WorkerConfig,
        senders: dict[str, WorkerSender],
        store: ObjectStore,
    ) -> None:
        self.loaded_at = time.time()  # its modules are in: the constructor begins
        torch.set_num_threads(1)
        assert cfg.multi_agent is not None
        self.worker_id = worker_id
        self.cfg = cfg
        self.plan: MultiAgentPlan = cfg.multi_agent
        self.train = cfg.train
        self.n_envs = cfg.n_envs
        self.envs = [self._make_env() for _ in range(self.n_envs)]
        self.env_resets = [0] * self.n_envs  # episodes started, per env (their seeds)
        self.env_failures = [0] * self.n_envs  # rebuilds in a row that failed again
        self.error_count = 0
        self.policies = {
            pid: acting_policy(plan, worker_id=worker_id, seed=cfg.seed)
            for pid, plan in self.plan.policies.items()
        }
        self.observations = {
            pid: Observations(plan.obs_space) for pid, plan in self.plan.policies.items()
        }
        # A slot per (env, agent): its index among its policy's. In a league any learning
        # policy may take any seat, so each has a slot for every seat of every env.
        self.slot_of: dict[tuple[int, str], int] = {}
        slots: dict[str, int] = dict.fromkeys(self.plan.policies, 0)
        for i in range(self.n_envs):
            for agent in self.plan.agents:
                pid = self.plan.mapping[agent]
                self.slot_of[(i, agent)] = slots[pid]
                slots[pid] += 1
        if self.plan.league is not None:
            for pid in self.plan.trained:
                slots[pid] = self.n_envs * len(self.plan.agents)
        self.global_env_steps = 0
        self.stop = False
        self.times = WorkerTimes()
        self.kills = KillSchedule()
        self.norm: WorkerNormalizer | None = None
        self.channels: dict[str, PolicyChannel] = {}
        self.rows: dict[str, AgentRows] = {}
        self.episodes: dict[str, SlotEpisodes] = {}
        self.trajectories: dict[tuple[str, int], list[dict[str, np.ndarray]]] = {}
        # collect_traj: each slot's decision awaiting its outcome (observation, action).
        self.deciding: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}
        for pid, sender in senders.items():
            policy = self.policies[pid]
            sender.bind(
                SenderSetup(
                    n_envs=slots[pid],
                    gamma=policy.gamma,
                    obs_space=self.plan.policies[pid].obs_space,
                    frame_stacked=False,
                    chunk_steps=cfg.chunk_steps,
                    max_pushes_in_flight=cfg.max_pushes_in_flight,
                )
            )
            self.channels[pid] = PolicyChannel(
                worker_id, policy, sender, store, self, lockstep=cfg.lockstep
            )
            self.episodes[pid] = SlotEpisodes.of(slots[pid])
            if self.train:
                self.rows[pid] = AgentRows(slots[pid], sender.chunk_len)
        self.lockstep = cfg.lockstep
        self.collecting: set[str] = set(self.channels)  # the policies whose rows are kept
        self.lost: dict[str, int] = {}  # transitions dropped here since the policy's last report
        self.widest_turn_gap_s: float | None = None  # of the rounds whose turns all came in time
        self.run_pending = PendingRun()
        self.own_env_steps = 0  # since the last report went (the run's count adds them)
        self.vector_steps = 0  # since the last chunk (test mode: a report every chunk_steps)
        self.total_env_steps = 0
        self.stream_steps = 0
        self.incarnation = 0
        self.store = store
        # A league run: the league deals each game's seats.
        self.league = LeaguePlay.of(self.plan, self.n_envs, store, train=self.train)
        freeze_startup_heap()

    def _make_env(self) -> MultiAgentEnv:
        return make_multi_agent_env(self.cfg.env, max_steps=self.cfg.max_step)

    # ----- the run -----
    def start(self) -> None:
        """Register with the coordinator: the global step count and every policy's weights."""
        where = Placement.here(f"worker {self.worker_id}", loaded_at=self.loaded_at)
        first = next(iter(self.channels.values()))
        start = first.sender.register(self.worker_id, where).result(ACK_TIMEOUT_S)
        self.global_env_steps = start.env_steps
        self.incarnation = start.incarnation
        self.stop = start.stop
        for pid, channel in self.channels.items():
            channel.report.incarnation = start.incarnation
            weights = start.weights_by_policy.get(pid)
            if weights is not None:
                self.times.weights_wait_s += channel.weights.take(weights, now=True)
        seed = self.cfg.seed
        self.stream_steps = start.stream_steps
        stream = (start.stream_steps,) if start.stream_steps else ()
        for pid, policy in self.policies.items():
            policy.seed(derive_seed(seed, "policy", self.worker_id, pid, *stream))
        if seed:
            torch.manual_seed(derive_seed(seed, "torch", self.worker_id, *stream))
        if self.league is not None:
            self.league.seats.seed(derive_seed(seed, "league", self.worker_id, *stream))
            self._league_exchange(wait=True)
        self.kills.arm(self.cfg.fault_injection, self.worker_id, self.global_env_steps)

    def step(self, wait_s: float) -> bool:
        """Collect until a policy's chunk is full (test mode: ``chunk_steps`` vector steps)
        and push it; False once the run has stopped."""
        if self.stop:
            return False
        if not self._take_turns(wait_s):
            return not self.stop
        for channel in self.channels.values():
            self.times.weights_wait_s += channel.weights.take(None, now=False)
        versions = {pid: channel.weights.version for pid, channel in self.channels.items()}
        t0 = time.monotonic()
        while not self._chunk_ready() and not self.stop:
            self._vector_step()
            if len(self.collecting) < len(self.channels) and not self.vector_steps % POLL_EVERY:
                versions.update(self._join_ready())
            if self.league is not None and not self.vector_steps % LEAGUE_EVERY:
                self._league_exchange(wait=False, if_answered=True)
        self.times.step_s += time.monotonic() - t0
        self._push_ready(versions)
        return not self.stop

    def _join_ready(self) -> dict[str, int]:
        """The policies whose turn came while the others collected: they collect from now on
        (what their agents did before is forgotten); their weights versions."""
        joined = {}
        for pid, channel in self.channels.items():
            if pid not in self.collecting and channel.wait_for_turn(0.0):
                self.times.weights_wait_s += channel.weights.take(None, now=False)
                self._forget_waiting_rows(pid)
                self.collecting.add(pid)
                joined[pid] = channel.weights.version
        return joined

    def _take_turns(self, wait_s: float) -> bool:
        """Which policies may collect now (``self.collecting``); False when none may yet.

        One env holds every policy's agents, so the worker waits without bound only when no
        policy may collect: a policy whose learner waits for this worker's next rollout must
        not wait long behind another's newer weights (their learners could each wait for the
        other's worker). Once one policy may collect, the others get a bounded wait
        (:meth:`_turn_grace`). A policy that may not collect yet acts with the weights it has,
        and what its agents do meanwhile is not kept (:meth:`AgentRows.discard`). Lockstep
        takes every policy's turn in order, as a single-agent worker does.
        """
        channels = self.channels
        if self.lockstep:
            for channel in channels.values():
                if not channel.wait_for_turn(wait_s):
                    return False
            self.collecting = set(channels)
            return True
        ready = {pid for pid, channel in channels.items() if channel.wait_for_turn(0.0)}
        if not ready:
            if not next(iter(channels.values())).wait_for_turn(wait_s):
                return False
            ready = {pid for pid, channel in channels.items() if channel.wait_for_turn(0.0)}
        # Learners fed at the same time publish at about the same time: a wait for the others
        # keeps policies whose agents decide equally often collecting side by side.
        opened = time.monotonic()
        deadline = opened + self._turn_grace(wait_s)
        for pid, channel in channels.items():
            while pid not in ready and not self.stop:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if channel.wait_for_turn(min(left, wait_s)):
                    ready.add(pid)
        if ready == set(channels) and wait_s > 0:
            gap_s = time.monotonic() - opened
            self.widest_turn_gap_s = max(gap_s, self.widest_turn_gap_s or 0.0)
        for pid in ready - self.collecting:
            self._forget_waiting_rows(pid)  # collected with weights older than its turn's
        self.collecting = ready
        return True

    def _turn_grace(self, wait_s: float) -> float:
        """How long the policies whose turn came wait for the others' (seconds).

        Policies whose agents decide equally often (a parallel env's) push their chunks
        together, and their learners publish about together: waiting for the last one keeps
        them in step, where starting without it would lose what its agents do until its
        turn. So when no chunk is begun the wait is a few times the widest gap seen between
        a round's turns. A policy midway through a chunk may have a learner waiting for this
        worker, so then the wait is short. Every wait is bounded: workers whose policies'
        learners wait on each other's workers go on after it (no deadlock).
        """
        if wait_s <= 0:  # one process: the learners take their turns when the worker returns
            return 0.0
        begun = any(self.rows[pid].held for pid in self.collecting if pid in self.rows)
        if begun:
            return min(TURN_GRACE_S, wait_s)
        if self.widest_turn_gap_s is None:
            return MAX_TURN_GRACE_S
        return min(MAX_TURN_GRACE_S, max(TURN_GRACE_S, GRACE_PER_GAP * self.widest_turn_gap_s))

    def _chunk_ready(self) -> bool:
        if self.train:
            return any(self.rows[pid].full for pid in self.collecting if pid in self.rows)
        return self.vector_steps >= self.cfg.chunk_steps

    def _push_ready(self, versions: dict[str, int]) -> None:
        """Push every policy's full chunk (test mode: every policy's report)."""
        self.vector_steps = 0
        pushed = False
        for pid in self.channels:
            rows = self.rows.get(pid)
            if pid not in self.collecting:
                if rows is not None and rows.full:
                    # Its turn has not come: its learner has this worker's last chunk.
                    self._forget_waiting_rows(pid)
                continue
            if rows is not None and rows.full:
                self._push(pid, rows.take(), versions[pid])
                pushed = True
            elif rows is None:
                self._push(pid, None, versions[pid])
                pushed = True
        if not pushed or self.run_pending.fatal_env_error:
            self._push(next(iter(self.channels)), None, versions[next(iter(self.channels))])
        if self.league is not None:
            self._league_exchange(wait=False)

    def finish(self) -> WorkerStats:
        """At the stop: settle the acks and report what is left to report (the transitions
        of chunks begun, and the decisions still without an outcome, as dropped)."""
        for pid, channel in self.channels.items():
            channel.wait_for_acks(0)
            unfinished = channel.sender.unfinished()
            if unfinished:
                channel.report.dropped["nstep_unfinished"] = unfinished
            rows = self.rows.get(pid)
            if rows is not None and (held := rows.held + rows.open_decisions):
                self._lost(pid, "unsent_at_stop", held)
            lost = self.lost.get(pid, 0)
            if unfinished or lost or channel.report.episodes or self.run_pending.env_steps:
                self._push(pid, None, channel.weights.version)
                channel.wait_for_acks(0)
        if self.league is not None:
            self._league_exchange(wait=True)
        return self.stats()

    @property
    def env_error_count(self) -> int:
        return self.error_count

    def close(self) -> None:
        for env in self.envs:
            env.close()

    # ----- stepping -----
    def _env_steps_now(self) -> int:
        return self.global_env_steps + self.own_env_steps

    def _reset(self, i: int) -> None:
        seed = self.cfg.seed
        stream: tuple[str | int, ...] = (self.stream_steps,) if self.stream_steps else ()
        stream += ("error", self.error_count) if self.env_failures[i] else ()
        first = self.env_resets[i] == 0
        self.envs[i].reset(derive_seed(seed, "env", self.worker_id, i, *stream) if first else None)
        self.env_resets[i] += 1
        if self.league is not None:
            self.league.seats.deal(i)

    def _vector_step(self) -> None:
        """One step of every env: its deciding agents act, each with its policy."""
        for i, env in enumerate(self.envs):
            if env.over:
                self._guarded(i, self._reset, i)
        groups: dict[str, tuple[list[int], list[str], list[object]]] = {}
        for i, env in enumerate(self.envs):
            for agent, obs in env.deciding.items():
                player = (
                    self._player(i, agent) if self.league is None else self.league.acting(i, agent)
                )
                group = groups.setdefault(player, ([], [], []))
                group[0].append(i)
                group[1].append(agent)
                group[2].append(obs)
        actions: list[dict[str, object]] = [{} for _ in self.envs]
        env_steps = self._env_steps_now()
        for pid, (env_ids, agents, observations) in groups.items():
            policy = self.policies.get(pid) or self.league.snapshots[pid]  # type: ignore[union-attr]
            obs = self.observations[self._plan_of(pid)].many(observations)
            planned = self.plan.policies.get(pid)
            explore = self.train and (planned is None or planned.trained)  # snapshots sample
            chosen, extras = policy.act(obs, explore=explore, env_steps=env_steps)
            rows = self.rows.get(pid)
            if rows is not None or self.cfg.collect_traj:
                slots = np.array([self.slot_of[k] for k in zip(env_ids, agents, strict=True)])
            if rows is not None:
                rows.decide(slots, obs, chosen, extras)
            if self.cfg.collect_traj and pid in self.channels:
                for k, slot in enumerate(slots.tolist()):
                    self.deciding[(pid, slot)] = (obs[k].copy(), np.asarray(chosen[k]).copy())
            for i, agent, action in zip(env_ids, agents, policy.env_action(chosen), strict=True):
                actions[i][agent] = action
        for i in range(len(self.envs)):
            if actions[i]:
                self._guarded(i, self._step_env, i, actions[i])
        self.vector_steps += 1

    def _step_env(self, i: int, actions: dict[str, object]) -> None:
        env = self.envs[i]
        outcomes = env.step(actions)
        self.env_failures[i] = 0
        self.run_pending.env_steps += 1
        self.own_env_steps += 1
        self.total_env_steps += 1
        at = self._env_steps_now()
        for outcome in outcomes:
            agent = outcome.agent
            pid = self._player(i, agent)
            if self.league is not None:
                self.league.seats.rewarded(i, agent, outcome.reward)
            if pid not in self.channels:
                continue
            slot = self.slot_of[(i, agent)]
            done = outcome.terminated or outcome.truncated
            next_obs = self.observations[pid].one(outcome.next_obs)
            rows = self.rows.get(pid)
            if rows is not None and rows.is_open(slot):
                rows.complete(slot, outcome.reward, outcome.terminated, outcome.truncated, next_obs)
            decided = self.deciding.pop((pid, slot), None)
            if decided is not None:
                step = (*decided, outcome.reward, outcome.terminated, outcome.truncated, next_obs)
                self._keep_step(pid, slot, step, agent, done)
            self.episodes[pid].add(slot, outcome.reward, done, agent, at)
        if env.over:
            self.run_pending.env_episodes += 1
            if self.league is not None:
                self.league.seats.game_over(i)
        self.kills.strike(at)

    def _guarded(self, i: int, call: object, *args: object) -> None:
        """Run ``call`` on env ``i``; an error rebuilds that env (see the module doc)."""
        try:
            call(*args)  # type: ignore[operator]
        except Exception as exc:  # any env failure: rebuild and go on
            self._env_failed(i, exc)

    def _env_failed(self, i: int, exc: Exception) -> None:
        self.error_count += 1
        text = f"worker {self.worker_id}: env {i} raised {first_line(exc)}"
        self.run_pending.env_errors.append(text)
        for agent in self.plan.agents:
            pid = self._player(i, agent)
            if pid not in self.channels:
                continue
            slot = self.slot_of[(i, agent)]
            rows = self.rows.get(pid)
            if rows is not None and rows.drop_open(slot):
                self._lost(pid, "env_error", 1)  # the decision whose outcome never came
            self.episodes[pid].forget(slot)
            self.trajectories.pop((pid, slot), None)
            self.deciding.pop((pid, slot), None)
        self.env_failures[i] += 1
        try:
            self.envs[i].close()
        except Exception:  # a broken env may fail to close too: it is replaced either way
            pass
        if self.env_failures[i] > FAILED_REBUILDS_BEFORE_GIVING_UP:
            self.run_pending.fatal_env_error = (
                f"{text}, and failed again each of the {FAILED_REBUILDS_BEFORE_GIVING_UP} "
                "times it was rebuilt"
            )
            self.stop = True
            return
        self.envs[i] = self._make_env()

    # ----- the league -----
    def _player(self, i: int, agent: str) -> str:
        """Who acts for ``agent`` in env ``i``: its policy, or (a league) a snapshot."""
        return (
            self.plan.mapping[agent] if self.league is None else self.league.seats.player(i, agent)
        )

    def _plan_of(self, player: str) -> str:
        """The policy ``player`` is (in a league, a snapshot is its main policy)."""
        return player if self.league is None else self.league.plan_of(player)

    def _league_exchange(self, *, wait: bool, if_answered: bool = False) -> None:
        assert self.league is not None
        coordinator = next(iter(self.channels.values())).sender.coordinator
        self.league.exchange(
            coordinator, self.worker_id, self.incarnation, wait=wait, if_answered=if_answered
        )

    def _keep_step(
        self, pid: str, slot: int, step: tuple[Any, ...], agent: str, done: bool
    ) -> None:
        """Add the transition just completed (``TRAJECTORY_KEYS``' values) to its agent's
        trajectory (``collect_traj``, in either mode)."""
        steps = self.trajectories.setdefault((pid, slot), [])
        steps.append(dict(zip(TRAJECTORY_KEYS, step, strict=True)))
        if done:
            trajectory = {key: np.stack([s[key] for s in steps]) for key in TRAJECTORY_KEYS}
            trajectory["agent"] = np.array(agent)
            trajectory["policy"] = np.array(pid)
            self.channels[pid].report.trajectories.append(trajectory)
            del self.trajectories[(pid, slot)]

    # ----- reports -----
    def _push(self, pid: str, chunk: Batch | None, version: int) -> None:
        """Send ``pid``'s chunk (collected with weights ``version``), or only its report."""
        channel = self.channels[pid]
        transitions = self.lost.pop(pid, 0)  # those it dropped itself count as collected
        if chunk:
            transitions += batch_rows(chunk) * chunk[REWARDS].shape[1]
            chunk[REWARDS] = learning_rewards(chunk[REWARDS], self.cfg.env)
            payload = channel.sender.prepare(chunk, version)
        else:
            payload = Payload(None, 0, version)
        report = self._take_report(pid, payload.rows, transitions)
        channel.send(payload, report, collected=bool(chunk))

    def _forget_waiting_rows(self, pid: str) -> None:
        """Forget what ``pid``'s agents did while its turn had not come (see _take_turns)."""
        rows = self.rows.get(pid)
        if rows is not None:
            self._lost(pid, "waiting_for_turn", rows.discard())

    def _lost(self, pid: str, reason: str, transitions: int) -> None:
        """Count ``transitions`` of ``pid``'s that this worker dropped, for its next report."""
        if transitions:
            dropped = self.channels[pid].report.dropped
            dropped[reason] = dropped.get(reason, 0) + transitions
            self.lost[pid] = self.lost.get(pid, 0) + transitions

    def _take_report(self, pid: str, rows: int, transitions: int) -> WorkerReport:
        channel = self.channels[pid]
        self._add_episodes(pid, channel.report)
        run, self.run_pending = self.run_pending, PendingRun()
        report = channel.report
        report.env_steps = run.env_steps
        report.env_errors.extend(run.env_errors)
        report.fatal_env_error = run.fatal_env_error
        report = channel.take_report(rows, transitions)
        report.env_episodes = run.env_episodes
        report.times = WorkerTimes(**vars(self.times))
        self.times = WorkerTimes()
        self.global_env_steps += run.env_steps
        self.own_env_steps = 0
        return report

    def _add_episodes(self, pid: str, report: WorkerReport) -> None:
        ended = self.episodes[pid].ended
        if not ended:
            return
        self.episodes[pid].ended = []
        returns, lengths, agents, at = zip(*ended, strict=True)
        policy = self.policies[pid]
        stats = [policy.exploration_stats(s) for s in at]
        explore = {key: np.array([s[key] for s in stats]) for key in stats[0]}
        version = self.channels[pid].weights.version
        columns = EpisodeColumns(
            np.array(returns, np.float64),
            np.array(lengths, np.int64),
            np.array(at, np.int64),
            np.full(len(returns), version, np.int64),
            explore,
            np.array(agents, dtype=object),
        )
        report.episodes = report.episodes.extend(columns)
