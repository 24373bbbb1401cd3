"""What limits a run: the share of wall time each role spent working and waiting.

Workers step envs, wait to push (acks, and while throttled because the learners trail the
update-to-data ratio) and wait for weights (on-policy: while the learners learn). Learners
learn, wait for data, and sync gradients. When workers spend their time held back by the
learners, the run is learner-bound and more learners (or a GPU) would help; when learners
spend theirs waiting for data, it is worker-bound and more workers would help.

When the workers' time goes to stepping and each env step costs them much (measured:
their stepping seconds per env step), the env is a slow one, and ``env_cfg.vector_mode:
async`` steps a worker's envs side by side, which more workers (each a process with torch)
would do at a higher price.
"""

from __future__ import annotations

from dataclasses import dataclass

from joyrl_ray.wire.messages import LearnerTimes, WorkerTimes

WAITING_SHARE = 0.3  # a side that waits this much of its time is not the limit
STEPPING_SHARE = 0.5  # workers stepping this much of their time: stepping is their work
# Worker seconds per env step above which the env, not the policy, is the cost: CartPole
# with the policy's forward costs tens of microseconds per step, a simulator milliseconds.
SLOW_ENV_STEP_S = 0.0005
VERDICTS = {
    "worker_bound": "worker-bound: the learners wait for data; more workers would help",
    "learner_bound": "learner-bound: the workers wait for the learners; more learners or a "
    "GPU would help",
    "balanced": "balanced: neither side waits much for the other",
    "no_workers": "no workers: the learners learn from a dataset",
}


@dataclass
class Bottleneck:
    """Shares of wall time (per role instance, averaged) and the verdict."""

    worker_stepping: float
    worker_push_wait: float
    worker_weights_wait: float
    learner_learning: float
    learner_data_wait: float
    learner_sync: float
    learner_checkpoint: float
    verdict: str  # worker_bound, learner_bound, balanced or no_workers
    sentence: str
    env_step_ms: float  # workers' stepping milliseconds per env step (0: no steps counted)
    advice: str  # what to change for a slow env ("" when nothing)

    def as_dict(self) -> dict[str, float | str]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in vars(self).items()}


def judge(
    workers: WorkerTimes,
    learners: LearnerTimes,
    *,
    wall_s: float,
    n_workers: int,
    n_learners: int,
    env_steps: int = 0,
    n_envs_per_worker: int = 1,
    vector_mode: str = "sync",  # env_cfg.vector_mode; in_worker: a multi-agent run's envs
) -> Bottleneck:
    """Shares over ``wall_s`` seconds of ``n_workers`` workers and ``n_learners`` learners,
    who took ``env_steps`` env steps meanwhile.

    A role's measured seconds may start before the window (its start-up): the shares are of
    whichever is larger, so they never add up to more than 1.
    """
    worker_total = workers.step_s + workers.push_wait_s + workers.weights_wait_s
    learner_total = (
        learners.learn_s + learners.data_wait_s + learners.sync_s + learners.checkpoint_s
    )
    w = max(wall_s * max(n_workers, 1), worker_total, 1e-9)
    lr = max(wall_s * max(n_learners, 1), learner_total, 1e-9)
    worker_wait = (workers.push_wait_s + workers.weights_wait_s) / w
    learner_wait = learners.data_wait_s / lr if n_learners else 0.0
    if n_workers == 0:
        verdict = "no_workers"
    elif n_learners and learner_wait >= WAITING_SHARE and learner_wait > worker_wait:
        verdict = "worker_bound"
    elif n_learners and worker_wait >= WAITING_SHARE and worker_wait > learner_wait:
        verdict = "learner_bound"
    else:
        verdict = "balanced"
    step_s = workers.step_s / env_steps if env_steps > 0 else 0.0
    stepping_work = workers.step_s / max(worker_total, 1e-9) >= STEPPING_SHARE
    advice = ""
    if stepping_work and verdict != "learner_bound" and step_s >= SLOW_ENV_STEP_S:
        advice = _slow_env_advice(step_s, n_envs_per_worker, vector_mode)
    return Bottleneck(
        worker_stepping=workers.step_s / w,
        worker_push_wait=workers.push_wait_s / w,
        worker_weights_wait=workers.weights_wait_s / w,
        learner_learning=learners.learn_s / lr if n_learners else 0.0,
        learner_data_wait=learner_wait,
        learner_sync=learners.sync_s / lr if n_learners else 0.0,
        learner_checkpoint=learners.checkpoint_s / lr if n_learners else 0.0,
        verdict=verdict,
        sentence=VERDICTS[verdict],
        env_step_ms=step_s * 1000,
        advice=advice,
    )


def _slow_env_advice(step_s: float, n_envs: int, vector_mode: str) -> str:
    slow = f"the env is slow ({step_s * 1000:.2g} ms of worker time per env step)"
    if vector_mode == "in_worker":  # a multi-agent env steps in the worker's process
        return f"{slow}: more workers (general_cfg.n_workers) step more envs side by side"
    if vector_mode == "async":
        return (
            f"{slow}: more general_cfg.n_envs_per_worker (now {n_envs}) step side by side "
            "with env_cfg.vector_mode: async"
        )
    if n_envs == 1:
        return (
            f"{slow}: env_cfg.vector_mode: async with general_cfg.n_envs_per_worker > 1 "
            "steps a worker's envs side by side"
        )
    return f"{slow}: env_cfg.vector_mode: async steps each worker's {n_envs} envs side by side"


def difference_w(a: WorkerTimes, b: WorkerTimes) -> WorkerTimes:
    return WorkerTimes(**{k: getattr(a, k) - getattr(b, k) for k in vars(a)})


def difference_l(a: LearnerTimes, b: LearnerTimes) -> LearnerTimes:
    return LearnerTimes(**{k: getattr(a, k) - getattr(b, k) for k in vars(a)})


def describe(b: Bottleneck, *, learners: bool) -> str:
    """The report as one line for the console and the log."""
    workers = (
        f"workers stepping {b.worker_stepping:.0%}, waiting to push {b.worker_push_wait:.0%}, "
        f"waiting for weights {b.worker_weights_wait:.0%}"
    )
    advice = f"; {b.advice}" if b.advice else ""
    if not learners:
        return f"what limited the run: {workers}{advice}"
    learning = (
        f"learners learning {b.learner_learning:.0%}, waiting for data "
        f"{b.learner_data_wait:.0%}, syncing {b.learner_sync:.0%}"
    )
    if b.verdict == "no_workers":
        return f"what limited the run: {b.sentence} ({learning})"
    return f"what limited the run: {b.sentence} ({workers}; {learning}){advice}"
