"""Evaluation of a multi-agent run's policies: greedy episodes of the game, seat by seat.

A policy is evaluated on a checkpoint's weights in the run's own env, beside learning (the
driver's online evaluator), in one of two ways:

- against each of ``multi_agent.eval_opponents`` (``random``: legal moves at random, or a
  policy of the run: a fixed one as it is, a learning one with its newest checkpoint's
  weights): the policy takes each seat its spaces fit (both seats of a two-player game) and
  the opponent every other seat; per opponent, its mean return and how often it won, drew
  or lost (its return above every other seat's, level with the best, or below it), over
  ``online_eval_episode`` episodes per seat;
- with no opponents named (a cooperative world): every agent acts with its own policy, as
  in training, and the policy's return is the mean of its agents'.

The first opponent's figures are the evaluation's headline (``returns``: what ``best.pt``
and ``reward_threshold`` read unless ``multi_agent.threshold`` names another).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from algos.base import Policy
from algos.scripted import RandomPolicy, legal_actions
from envs.multi_agent import MultiAgentEnv, make_multi_agent_env
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.roles.acting import Observations, acting_policy
from joyrl_ray.roles.evaluator.config import EvaluatorConfig
from joyrl_ray.roles.evaluator.results import EvalEpisodes, EvalResult, summarize_returns
from joyrl_ray.seeding import derive_seed

AS_MAPPED = "as_mapped"  # no opponent: every agent with its own policy
RANDOM = "random"
SIDE_BY_SIDE = 8  # episodes played at once (one forward pass per policy per step)


@dataclass
class SeatResults:
    """One policy's episodes against one opponent, over its seats."""

    returns: list[float] = field(default_factory=list)
    wins: int = 0
    draws: int = 0
    losses: int = 0
    illegal_actions: int = 0  # the policy's moves its observations' action masks forbade
    by_seat: dict[str, list[float]] = field(default_factory=dict)

    def add(self, seat: str, mine: float, others: list[float]) -> None:
        self.returns.append(mine)
        self.by_seat.setdefault(seat, []).append(mine)
        best = max(others) if others else mine
        if mine > best:
            self.wins += 1
        elif mine < best:
            self.losses += 1
        else:
            self.draws += 1

    def summary(self, rates: bool) -> dict[str, Any]:
        n = max(len(self.returns), 1)
        out = summarize_returns(self.returns, [0] * len(self.returns))
        out.pop("length_mean", None), out.pop("length_min", None), out.pop("length_max", None)
        if rates:
            out.update(win_rate=self.wins / n, draw_rate=self.draws / n, loss_rate=self.losses / n)
            out["seats"] = {seat: float(np.mean(r)) for seat, r in self.by_seat.items()}
        out["illegal_actions"] = self.illegal_actions
        return out


class GameEvaluator:
    """Plays greedy episodes of a multi-agent env: a policy against its opponents."""

    def __init__(self, cfg: EvaluatorConfig, render_mode: str | None = None) -> None:
        torch.set_num_threads(1)
        assert cfg.multi_agent is not None
        self.cfg = cfg
        self.render_mode = render_mode  # test mode's rendered games (run/video.py)
        self.plan: MultiAgentPlan = cfg.multi_agent
        self.policies: dict[str, Policy] = {
            pid: acting_policy(plan, worker_id="eval", seed=cfg.seed)
            for pid, plan in self.plan.policies.items()
        }
        self.observations = {
            pid: Observations(plan.obs_space) for pid, plan in self.plan.policies.items()
        }
        self.random: dict[str, RandomPolicy] = {}
        self.envs: list[MultiAgentEnv] = []
        self.episodes = cfg.episodes
        self.interrupted = threading.Event()
        self.env_errors = 0
        self.last_error = ""

    # ----- the driver's calls -----
    def evaluate_policy(
        self,
        policy: str,
        weights: dict[str, np.ndarray],
        updates: int,
        env_steps: int,
        others: dict[str, dict[str, np.ndarray]] | None = None,
    ) -> EvalResult:
        """``policy`` on ``weights`` against each opponent (the others learning policies on
        ``others``, their newest checkpoints' weights)."""
        self.policies[policy].set_weights(weights)
        for other, other_weights in (others or {}).items():
            if other != policy and other in self.policies:
                self.policies[other].set_weights(other_weights)
        opponents = list(self.plan.eval_opponents) or [AS_MAPPED]
        results: dict[str, dict[str, Any]] = {}
        episodes = EvalEpisodes(self.episodes)
        for opponent in opponents:
            seat_results = self._against(policy, opponent)
            results[opponent] = seat_results.summary(rates=opponent != AS_MAPPED)
            if opponent == opponents[0]:
                episodes.returns = list(seat_results.returns)
                episodes.lengths = [0] * len(seat_results.returns)
        headline = results[opponents[0]]
        returns = {k: v for k, v in headline.items() if k != "seats"}
        result = EvalResult(updates, env_steps, returns, 0, self.env_errors, self.last_error)
        result.policy, result.opponents = policy, results
        return result

    def play_game(
        self, policies: dict[str, Policy], index: int, on_step: Callable[[Any], None]
    ) -> dict[str, float]:
        """Game ``index`` with every agent acting greedily with its own policy (``policies``:
        the learning ones' acting policies; the fixed ones act as they are), ``on_step``
        called with the env after its reset and after each step; each agent's return. A
        game whose env raises is played again."""
        self.policies.update(policies)
        mapping = self.plan.mapping
        seats = {a: (mapping[a], self.policies[mapping[a]]) for a in self.plan.agents}
        if not self.envs:
            self.envs.append(self._make_env())
        judged = (next(iter(policies)), SeatResults())
        while True:
            env = self.envs[0]
            seed = derive_seed(self.cfg.seed, "render", index, self.env_errors)
            if not self._guarded(self.envs, 0, lambda e=env, s=seed: e.reset(s)):
                continue
            returns = {a: 0.0 for a in self.plan.agents}
            running: dict[int, dict[str, float]] = {0: returns}
            finished: list[dict[str, float]] = []
            on_step(self.envs[0].env)
            while running:
                if self._step_all(self.envs, running, seats, finished, judged):
                    break  # the env raised: the game is played again on a rebuilt env
                on_step(self.envs[0].env)
            if finished:
                return finished[0]

    def interrupt(self) -> None:
        self.interrupted.set()

    def close(self) -> None:
        for env in self.envs:
            env.close()

    # ----- episodes -----
    def _seats(self, policy: str) -> list[str]:
        """The agents whose spaces ``policy``'s fit (every seat it can take)."""
        mine = self.plan.policies[policy]
        return [
            a
            for a in self.plan.agents
            if self.plan.policies[self.plan.mapping[a]].obs_space == mine.obs_space
            and self.plan.policies[self.plan.mapping[a]].action_space == mine.action_space
        ]

    def _opponent_for(self, opponent: str, agent: str) -> tuple[str, Policy]:
        """The acting policy of ``opponent`` for ``agent``'s seat, and its key."""
        if opponent == RANDOM:
            if agent not in self.random:
                plan = self.plan.policies[self.plan.mapping[agent]]
                self.random[agent] = RandomPolicy(plan.obs_space, plan.action_space)
                self.random[agent].seed(derive_seed(self.cfg.seed, "eval", "random", agent))
            return f"random/{agent}", self.random[agent]
        return opponent, self.policies[opponent]

    def _against(self, policy: str, opponent: str) -> SeatResults:
        results = SeatResults()
        if opponent == AS_MAPPED:
            mapping = self.plan.mapping
            seats = {a: (mapping[a], self.policies[mapping[a]]) for a in self.plan.agents}
            mine = self.plan.agents_of(policy)
            for returns in self._play(seats, self.episodes, (policy, opponent), results):
                results.add("all", float(np.mean([returns[a] for a in mine])), [])
            return results
        for seat in self._seats(policy):
            seats = {a: self._opponent_for(opponent, a) for a in self.plan.agents}
            seats[seat] = (policy, self.policies[policy])
            for returns in self._play(seats, self.episodes, (policy, opponent, seat), results):
                others = [r for a, r in returns.items() if a != seat]
                results.add(seat, returns[seat], others)
        return results

    def _play(
        self,
        seats: dict[str, tuple[str, Policy]],
        n: int,
        stream: tuple[str, ...],
        results: SeatResults,
    ) -> list[dict[str, float]]:
        """``n`` greedy episodes with each agent acting as ``seats`` says; each episode's
        return per agent. An env that raises loses its episode, which is played again."""
        while len(self.envs) < min(n, SIDE_BY_SIDE):
            self.envs.append(self._make_env())
        envs = self.envs[: min(n, SIDE_BY_SIDE)]
        finished: list[dict[str, float]] = []
        started = 0
        running: dict[int, dict[str, float]] = {}
        while len(finished) < n:
            if self.interrupted.is_set():
                raise RuntimeError("the evaluation was interrupted: the run is ending")
            for i, env in enumerate(envs):
                if i not in running and started < n:
                    seed = derive_seed(self.cfg.seed, "eval", *stream, started)
                    started += 1
                    if self._guarded(envs, i, lambda e=env, s=seed: e.reset(s)):
                        running[i] = {a: 0.0 for a in self.plan.agents}
                    else:
                        started -= 1
            if not running:
                continue
            started -= self._step_all(envs, running, seats, finished, (stream[0], results))
        return finished[:n]

    def _step_all(
        self,
        envs: list[MultiAgentEnv],
        running: dict[int, dict[str, float]],
        seats: dict[str, tuple[str, Policy]],
        finished: list[dict[str, float]],
        judged: tuple[str, SeatResults],
    ) -> int:
        """One step of every running episode; how many were lost to env errors. The moves
        of the policy ``judged`` names that its action masks forbid are counted there."""
        groups: dict[str, tuple[Policy, str, list[int], list[str], list[Any]]] = {}
        for i in running:
            for agent, obs in envs[i].deciding.items():
                key, policy = seats[agent]
                obs_key = self.plan.mapping[agent]
                group = groups.setdefault(key, (policy, obs_key, [], [], []))
                group[2].append(i)
                group[3].append(agent)
                group[4].append(obs)
        actions: dict[int, dict[str, Any]] = {i: {} for i in running}
        for policy, obs_key, env_ids, agents, observations in groups.values():
            obs = self.observations[obs_key].many(observations)
            chosen, _ = policy.act(obs, explore=False, env_steps=0)
            legal = legal_actions(policy.obs_space, obs)
            if legal is not None and policy is self.policies.get(judged[0]):
                picked = legal[np.arange(len(chosen)), np.asarray(chosen, np.int64)]
                judged[1].illegal_actions += int((~picked).sum())
            for i, agent, action in zip(env_ids, agents, policy.env_action(chosen), strict=True):
                actions[i][agent] = action
        lost = 0
        for i in list(running):
            env, returns = envs[i], running[i]
            if not self._guarded(
                envs, i, lambda e=env, a=actions[i], r=returns: self._step(e, a, r)
            ):
                del running[i]
                lost += 1
                continue
            if envs[i].over:
                finished.append(running.pop(i))
        return lost

    @staticmethod
    def _step(env: MultiAgentEnv, actions: dict[str, Any], returns: dict[str, float]) -> None:
        for outcome in env.step(actions):
            returns[outcome.agent] += outcome.reward

    def _guarded(self, envs: list[MultiAgentEnv], i: int, call: Any) -> bool:
        """Run ``call``; an env error rebuilds env ``i`` (its episode is lost): False."""
        try:
            call()
            return True
        except Exception as exc:  # the episode is played again on a rebuilt env
            self.env_errors += 1
            self.last_error = f"evaluator: env raised {type(exc).__name__}: {exc}"
            if self.env_errors > 10 * self.episodes:
                raise
            try:
                envs[i].close()
            except Exception:  # a broken env may fail to close: replaced either way
                pass
            envs[i] = self.envs[i] = self._make_env()
            return False

    def _make_env(self) -> MultiAgentEnv:
        return make_multi_agent_env(
            self.cfg.env, max_steps=self.cfg.max_step, render_mode=self.render_mode
        )
