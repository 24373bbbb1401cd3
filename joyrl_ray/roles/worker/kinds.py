"""Which worker class a run's workers are: single-agent envs, or multi-agent ones."""

from __future__ import annotations

from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.multi_agent import MultiAgentWorker
from joyrl_ray.roles.worker.worker import Worker


def worker_class(cfg: WorkerConfig) -> type[Worker] | type[MultiAgentWorker]:
    """The class every worker of a run with ``cfg`` is (both take the same arguments)."""
    return Worker if cfg.multi_agent is None else MultiAgentWorker
