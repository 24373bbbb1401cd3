"""The online evaluator's slice of the run config: what it reads, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envs import EnvConfig
from joyrl_ray.config import RunConfig
from joyrl_ray.multi_agent_plan import MultiAgentPlan


@dataclass(frozen=True)
class EvaluatorConfig:
    """Built once by the driver (:meth:`of`)."""

    algo_name: str
    algo: Any  # the algorithm's config: the acting policy is built from it
    env: EnvConfig
    seed: int  # 0: unseeded
    episodes: int  # per evaluation (general_cfg.online_eval_episode)
    max_step: int  # per episode
    env_error_rate: float  # injected (general_cfg.fault_injection.eval_env_error_rate)
    multi_agent: MultiAgentPlan | None = None  # a multi-agent run's policies and agents

    @classmethod
    def of(cls, cfg: RunConfig, plan: MultiAgentPlan | None = None) -> EvaluatorConfig:
        general = cfg.general
        return cls(
            algo_name=general.algo_name,
            algo=cfg.algo,
            env=cfg.env,
            seed=general.seed,
            episodes=general.online_eval_episode,
            max_step=general.max_step,
            env_error_rate=general.fault_injection.eval_env_error_rate,
            multi_agent=plan,
        )
