"""The learner's slice of the run config: what a learner reads, and nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joyrl_ray.config import RunConfig


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

    @classmethod
    def of(cls, cfg: RunConfig) -> LearnerConfig:
        general = cfg.general
        return cls(
            algo_name=general.algo_name,
            algo=cfg.algo,
            device=general.device,
            seed=general.seed,
            model_save_fre=general.model_save_fre,
            first_checkpoint_s=general.first_checkpoint_s,
            weights_publish_every=general.weights_publish_every,
            online_eval=general.online_eval,
            threads=max(1, int(general.learner_num_cpus)),
        )
