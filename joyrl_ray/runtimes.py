"""The two backends: the same roles as plain objects in one process, or as Ray actors.

Both expose ``data_server`` (a handle), ``advance(timeout_s)`` (make progress; True once
every role has finished) and ``role_stats()``. The driver loop in :mod:`joyrl_ray.runner`
does not know which one it drives.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from joyrl_ray.config import RunConfig
from joyrl_ray.data_server import DataServer
from joyrl_ray.handles import LocalHandle, RayHandle
from joyrl_ray.learner import TRAINED, Learner
from joyrl_ray.worker import STOPPED, Worker


class LocalRuntime:
    """``mp_backend: single``: workers and learner take turns in this process."""

    def __init__(
        self, cfg: RunConfig, server_kwargs: dict[str, Any], learner_kwargs: dict[str, Any] | None
    ) -> None:
        self.server = DataServer(**server_kwargs)
        self.data_server = LocalHandle(self.server)
        self.learner = (
            Learner(cfg, self.data_server, **learner_kwargs) if learner_kwargs is not None else None
        )
        self.workers = [Worker(i, cfg, self.data_server) for i in range(cfg.general.n_workers)]
        self.done = False
        self.stats: dict[str, Any] = {}

    def advance(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self.done and time.monotonic() < deadline:
            statuses = [worker.step_chunk() for worker in self.workers]
            if self.learner is not None:
                while self.learner.train_chunk() == TRAINED:
                    pass
            if all(s == STOPPED for s in statuses) or self.server.should_stop():
                self._finish()
        return self.done

    def _finish(self) -> None:
        self.stats = {"workers": [w.stats() for w in self.workers]}
        if self.learner is not None:
            self.stats["learner"] = self.learner.finish()
        for worker in self.workers:
            worker.close()
        self.done = True

    def role_stats(self) -> dict[str, Any]:
        return self.stats

    def shutdown(self) -> None:
        if not self.done:
            self._finish()


class RayRuntime:
    """``mp_backend: ray``: Worker, Learner and DataServer as actors, each running its loop."""

    def __init__(
        self,
        cfg: RunConfig,
        server_kwargs: dict[str, Any],
        learner_kwargs: dict[str, Any] | None,
        *,
        worker_num_cpus: float,
        learner_node: str | None = None,
    ) -> None:
        import ray

        general = cfg.general
        self.ray = ray
        name = f"joyrl-data-server-{uuid.uuid4().hex[:12]}"
        server_cls = ray.remote(DataServer).options(num_cpus=0, max_concurrency=1, name=name)
        self.server_actor = server_cls.remote(**server_kwargs)
        self.data_server = RayHandle(name, self.server_actor)
        self.learner = None
        if learner_kwargs is not None:
            options: dict[str, Any] = {
                "num_cpus": general.learner_num_cpus,
                "num_gpus": general.learner_num_gpus,
            }
            if learner_node is not None:  # checkpoints land on the driver's filesystem
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    learner_node, soft=False
                )
            self.learner = (
                ray.remote(Learner)
                .options(**options)
                .remote(cfg, self.data_server, **learner_kwargs)
            )
        worker_cls = ray.remote(Worker).options(
            num_cpus=worker_num_cpus, max_restarts=general.max_restarts
        )
        self.workers = [
            worker_cls.remote(i, cfg, self.data_server) for i in range(general.n_workers)
        ]
        self.runs: dict[Any, tuple[str, int]] = {}
        for i, worker in enumerate(self.workers):
            self.runs[worker.run.remote()] = ("worker", i)
        if self.learner is not None:
            self.runs[self.learner.run.remote()] = ("learner", 0)
        self.stats: dict[str, Any] = {"workers": [None] * len(self.workers)}
        self.restarts = 0
        self.max_restarts = general.max_restarts

    def advance(self, timeout_s: float) -> bool:
        if not self.runs:
            return True
        ready, _ = self.ray.wait(list(self.runs), num_returns=len(self.runs), timeout=timeout_s)
        for ref in ready:
            role, index = self.runs.pop(ref)
            try:
                result = self.ray.get(ref)
            except self.ray.exceptions.RayActorError:
                if role == "worker" and self.restarts < self.max_restarts * len(self.workers):
                    # Ray restarts the actor; its loop resumes from the DataServer's state.
                    self.restarts += 1
                    self.runs[self.workers[index].run.remote()] = (role, index)
                    continue
                raise
            if role == "worker":
                self.stats["workers"][index] = result
            else:
                self.stats["learner"] = result
        return not self.runs

    def role_stats(self) -> dict[str, Any]:
        return {**self.stats, "worker_restarts": self.restarts}

    def shutdown(self) -> None:
        for actor in [*self.workers, self.learner, self.server_actor]:
            if actor is not None:
                self.ray.kill(actor)
