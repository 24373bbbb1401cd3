"""The worker's slice of the run config: what a worker reads, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envs import EnvConfig
from joyrl_ray.config import RunConfig
from joyrl_ray.config.general import FaultInjectionConfig
from joyrl_ray.multi_agent_plan import MultiAgentPlan


@dataclass(frozen=True)
class WorkerConfig:
    """Built once by the driver (:meth:`of`); every worker gets the same one."""

    algo_name: str
    algo: Any  # the algorithm's config: the acting policy is built from it
    env: EnvConfig
    train: bool  # explore and send transitions (test mode: act greedily, report only)
    seed: int  # 0: unseeded
    n_envs: int
    chunk_steps: int  # vector steps per chunk, unless the flow says (a rollout's length)
    max_pushes_in_flight: int
    lockstep: bool  # newer weights are loaded as they reach the worker, never later
    collect_traj: bool
    random_action_rate: float  # test mode: share of actions drawn at random
    max_step: int  # per episode
    fault_injection: FaultInjectionConfig
    multi_agent: MultiAgentPlan | None = None  # a multi-agent run's agents and policies

    @classmethod
    def of(cls, cfg: RunConfig, plan: MultiAgentPlan | None = None) -> WorkerConfig:
        general = cfg.general
        return cls(
            algo_name=general.algo_name,
            algo=cfg.algo,
            env=cfg.env,
            train=general.mode == "train",
            seed=general.seed,
            n_envs=general.n_envs_per_worker,
            chunk_steps=general.worker_chunk_steps,
            max_pushes_in_flight=general.max_pushes_in_flight,
            lockstep=general.lockstep,
            collect_traj=general.collect_traj,
            random_action_rate=general.random_action_rate,
            max_step=general.max_step,
            fault_injection=general.fault_injection,
            multi_agent=plan,
        )
