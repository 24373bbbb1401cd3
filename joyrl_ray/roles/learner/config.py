"""The learner's slice of the run config: what a learner reads, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joyrl_ray.config import RunConfig
from joyrl_ray.multi_agent_plan import PolicyPlan
from joyrl_ray.policies import DEFAULT_POLICY


@dataclass(frozen=True)
class LearnerConfig:
    """Built once by the driver (:meth:`of`); every rank gets the same one."""

    algo_name: str
    algo: Any  # the algorithm's config
    device: str  # cpu, cuda or auto
    seed: int  # 0: unseeded
    model_save_fre: int  # a checkpoint every this many updates
    first_checkpoint_s: float | None  # and one this long after the first update, if none yet
    weights_publish_every: int  # off-policy: publish weights every this many updates
    online_eval: bool  # checkpoints ask to be evaluated
    threads: int  # torch threads
    policy: str = DEFAULT_POLICY  # the policy it trains
    max_updates: int = -1  # learns no further (the coordinator stops the run there); -1: none

    def role(self, rank: int) -> str:
        """How rank ``rank`` of this policy's learners is named (placements, logs)."""
        if self.policy == DEFAULT_POLICY:
            return f"learner {rank}"
        return f"learner {rank} of {self.policy}"

    @classmethod
    def of(cls, cfg: RunConfig, plan: PolicyPlan | None = None) -> LearnerConfig:
        """A single-agent run's learners' config, or (``plan``) a multi-agent run policy's."""
        general = cfg.general
        policy = DEFAULT_POLICY if plan is None else plan.policy_id
        return cls(
            algo_name=general.algo_name if plan is None else str(plan.algo_name),
            algo=cfg.algo if plan is None else plan.algo,
            device=general.device,
            seed=general.seed,
            model_save_fre=general.model_save_fre,
            first_checkpoint_s=general.first_checkpoint_s,
            weights_publish_every=general.weights_publish_every,
            online_eval=general.online_eval,
            threads=max(1, int(general.learner_num_cpus)),
            policy=policy,
            max_updates=general.max_updates,
        )
