"""A worker's vector env, rebuilt after an env error (see ``Worker._recover_from_env_error``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorEnv

from envs.faults import with_step_errors
from envs.registry import make_env_fn
from envs.vector import close_vector_env, make_vector_env
from joyrl_ray.roles.worker.config import WorkerConfig
from joyrl_ray.roles.worker.env_guard import FAILED_REBUILDS_BEFORE_GIVING_UP, guarded
from joyrl_ray.seeding import derive_seed

__all__ = ["FAILED_REBUILDS_BEFORE_GIVING_UP", "WorkerEnvs"]


class WorkerEnvs:
    """The vector env of worker ``worker_id`` and the count of its env errors.

    The error count seeds the injected env errors of each build and the reset streams after
    an error; ``failed_rebuilds`` counts the rebuilds that failed before the env stepped.
    ``guard``: each env outlives its own step errors (:mod:`~joyrl_ray.roles.worker.env_guard`),
    as on-policy flows have it.
    """

    def __init__(self, worker_id: int, cfg: WorkerConfig, *, guard: bool = False) -> None:
        self.worker_id = worker_id
        self.cfg = cfg
        self.guard = guard
        self.n_envs = cfg.n_envs
        self.error_count = 0
        self.failed_rebuilds = 0
        self.vector = self._make(None)

    def _make(self, old: VectorEnv | None) -> VectorEnv:
        """The worker's vector env (``env_cfg.vector_mode``); a rebuild first ends what is
        left of the broken one (an async env's subprocesses)."""
        if old is not None:
            close_vector_env(old, broken=True)
        cfg = self.cfg
        make = make_env_fn(cfg.env, max_episode_steps=cfg.max_step, worker_id=self.worker_id)
        seed = derive_seed(cfg.seed, "faults", self.worker_id, self.error_count)
        makes = with_step_errors(make, cfg.fault_injection.env_error_rate, seed, self.n_envs)
        if self.guard:
            keys = (self.worker_id, self.error_count)
            makes = [
                guarded(m, derive_seed(cfg.seed, "rebuilds", *keys, i)) for i, m in enumerate(makes)
            ]
        env = self.cfg.env
        return make_vector_env(
            makes,
            env.vector_mode,
            step_timeout_s=env.step_timeout_s,
            reset_timeout_s=env.reset_timeout_s,
        )

    def reset(self, global_env_steps: int) -> np.ndarray:
        seed = self.cfg.seed
        # Fresh streams where the run is (a restart, a resume) and after every env error.
        stream: tuple[str | int, ...] = (global_env_steps,) if global_env_steps else ()
        stream += ("error", self.error_count) if self.error_count else ()
        seeds = [derive_seed(seed, "env", self.worker_id, i, *stream) for i in range(self.n_envs)]
        obs, _ = self.vector.reset(seed=seeds if seed else None)
        return obs

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        result = self.vector.step(actions)
        self.failed_rebuilds = 0  # it stepped: an env that fails now and then, not every try
        return result

    def close_broken(self) -> bool:
        """Close the env that raised; False once it has failed again after each of the
        ``FAILED_REBUILDS_BEFORE_GIVING_UP`` rebuilds (then it is not rebuilt)."""
        try:  # an async one's subprocesses are ended at once: one may hang in a call
            close_vector_env(self.vector, broken=True)
        except Exception:  # a broken env may fail to close too: it is replaced either way
            pass
        self.failed_rebuilds += 1
        return self.failed_rebuilds <= FAILED_REBUILDS_BEFORE_GIVING_UP

    def rebuild(self) -> None:
        self.vector = self._make(self.vector)

    def close(self) -> None:
        self.vector.close()
