"""``general_cfg``: what runs, where, for how long, and what it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MODES = ("train", "test")
BACKENDS = ("single", "ray")
DEVICES = ("auto", "cpu", "cuda")
PLACEMENTS = ("spread", "pack")
TRACKERS = ("mlflow", "wandb")  # general_cfg.tracking; each is also the module it imports
TRACKING_EXTRA = "requirements-tracking.txt"
ENV_THRESHOLD = "env"  # general_cfg.reward_threshold: the env's registered one


@dataclass
class FaultInjectionConfig:
    """Faults caused on purpose, to check that a setup survives them (off by default)."""

    kill_at_env_steps: list[int] = field(default_factory=list)  # SIGKILL a worker at these steps
    kill_worker_ids: list[int] = field(default_factory=lambda: [0])  # workers that kill_at hits
    env_error_rate: float = 0.0  # probability that an env step raises (every worker)
    eval_env_error_rate: float = 0.0  # probability that an online evaluator env step raises


@dataclass
class GeneralConfig:
    """Runtime settings shared by every algorithm. ``-1`` means no limit."""

    algo_name: str = "DQN"  # a registered algorithm (algos/), or "pkg.module:SPEC" of your own
    joyrl_version: str | None = None  # the JoyRL release a preset was written for, as JoyRL's
    # later presets give it: recorded in config.yaml, no other effect
    env_name: str = "gym"  # env family, as in JoyRL; gym, the only one, holds every env_cfg.id
    # form (custom envs too): checked, recorded in config.yaml, no other effect
    device: str = "auto"  # learner device: auto (cuda when visible), cpu, cuda
    mode: str = "train"  # train or test
    collect_traj: bool = False  # write every finished episode to results/trajs_*.pkl
    random_action_rate: float = 0.0  # test mode: share of actions drawn uniformly at random
    # instead of the policy's (with collect_traj: a dataset of a chosen quality)
    dataset: str | None = None  # learn from recorded episodes, with no workers: a task
    # directory written with collect_traj, a trajs_*.pkl file, a folder of either, or a local
    # Minari dataset id; needs max_updates (null: learn online from the workers)
    mp_backend: str = "ray"  # single (one process) or ray (actors); null is read as single
    n_workers: int = 1  # Worker actors stepping envs
    min_workers: int | None = None  # Ray: fewest workers kept when some are shed to make room
    # for the learners (null: 1)
    max_workers: int | None = None  # Ray: the fleet grows onto room that appears (a node
    # joins) up to this many workers (null: n_workers, no growth)
    n_envs_per_worker: int = 1  # envs per worker, one vector env (env_cfg.vector_mode)
    n_learners: int = 1  # data-parallel Learner actors (ray backend), gradients averaged
    lockstep: bool = False  # Ray: the actors take turns as the single backend's roles do,
    # each call answered before the next: a seeded run is reproducible, off-policy too (and
    # slower: nothing runs side by side; a role that dies stops the run); one learner
    ray_address: str | None = None  # null: $RAY_ADDRESS if set, else a local Ray; local, auto,
    # host:port, ray://host:port
    ray_num_cpus: int | None = None  # CPUs for a local Ray (null: all of this machine's)
    worker_num_cpus: float | None = None  # CPUs per Worker (null: share what learners leave)
    learner_num_cpus: float = 1.0  # CPU request per Learner actor
    learner_num_gpus: float = 0.0  # GPU request per Learner actor (set 1 to get a GPU on a cluster)
    worker_placement: str = "spread"  # workers over the nodes: spread, or pack onto few nodes
    learner_placement: str = "pack"  # learners: pack onto one node (default), or spread
    worker_resources: dict[str, float] = field(default_factory=dict)  # extra per worker
    learner_resources: dict[str, float] = field(default_factory=dict)  # extra per learner
    data_server_resources: dict[str, float] = field(default_factory=dict)  # {}: driver's node
    n_replay_shards: int = 1  # off-policy: DataServer replay shards (worker k -> shard k mod n)
    max_worker_restarts: int = 3  # restarts per worker before it is dropped (-1: unlimited)
    max_learner_restarts: int = 3  # restarts of the learner group from its last checkpoint
    learner_lost_after_s: float = 3.0  # a learner cut off (its connection broken) that Ray has
    # not reported dead within this is taken as lost with its node: the group is placed again
    # away from that node, without waiting for Ray's node health check (~15-30 s)
    max_env_errors_per_1000: float = 20.0  # env errors per 1,000 env steps that stop the run
    env_error_window_steps: int = 50_000  # ... counted over this many recent env steps
    stall_timeout_s: float = 120.0  # stop, saying who waits for what, after this long stuck
    worker_silent_after_s: float = 300.0  # no push, waiting on no call: restarted; -1: never
    learner_silent_after_s: float = 300.0  # no report: restarted, off a node cut off; -1: never
    fault_injection: FaultInjectionConfig = field(default_factory=FaultInjectionConfig)
    load_checkpoint: bool = False  # start from a checkpoint (resume in train, required in test)
    load_path: str | None = None  # task directory (under tasks/ or a path) holding models/
    load_model_step: str = "best"  # best (else last; last on resume), last, or an update number
    save_buffer: bool = False  # save the replay buffer beside last.pt; a resume keeps its data
    max_episode: int = -1  # stop after this many episodes (test mode: episodes to run, -1 = 10)
    max_env_steps: int = 100_000  # stop after this many env steps (a total, also when resuming)
    max_updates: int = -1  # stop after this many learner updates (a total; each policy's; -1: none)
    max_step: int = -1  # max steps per episode (-1: the env's own time limit)
    seed: int = 0  # 0: unseeded
    online_eval: bool = True  # evaluate every model_save_fre updates, beside learning
    online_eval_episode: int = 10  # episodes per online evaluation
    eval_timeout_s: float = 300.0  # an online evaluation running longer fails (Ray); -1: never
    model_save_fre: int = 1000  # updates between checkpoints (and online evaluations);
    # an update is one gradient step off-policy (DQN, SAC, TD3) but one whole rollout
    # iteration on-policy (PPO: every epoch and minibatch over one rollout)
    keep_checkpoints: int = 5  # numbered checkpoints kept in models/ (best and last always)
    first_checkpoint_s: float | None = 60.0  # a checkpoint this long after the first update,
    # if model_save_fre has made none yet: a learner lost early restarts from it (null: off)
    save_best_model: bool | None = True  # keep models/best.pt (needs online_eval); null (left
    # blank) keeps it too
    reward_threshold: Any = ENV_THRESHOLD  # stop once an online evaluation averages this;
    # env: the env's registered threshold (gymnasium's spec.reward_threshold, CartPole-v1's
    # 475; none for an env without one, or with online_eval off); null: never, the run takes
    # its whole budget (typed Any: a number, env or null)
    save_fig: bool = True  # write reward curves to figs/
    show_fig: bool = False  # show the reward curves at the end
    render_n_episodes: int = 1  # test mode with rgb_array: episodes recorded to videos/
    weights_publish_every: int = 32  # learner updates between weight publishes (off-policy)
    max_pushes_in_flight: int = 2  # per worker, pushes not yet acknowledged (backpressure)
    worker_chunk_steps: int = 256  # vector-env steps a worker takes per push (off-policy)
    learner_lag_tolerance: int = 64  # updates the learner may trail the ratio before workers wait
    progress: bool = True  # console progress bar
    tracking: list[str] = field(default_factory=list)  # experiment trackers the run logs to:
    # mlflow, wandb (pip install -r requirements-tracking.txt; docs/tracking.md)
    tracking_uri: str | None = None  # MLflow's tracking URI (null: $MLFLOW_TRACKING_URI, else
    # MLflow's default, sqlite:///mlflow.db in the working directory)
    tracking_project: str | None = None  # MLflow experiment / W&B project (null:
    # $MLFLOW_EXPERIMENT_NAME / $WANDB_PROJECT, else the tracker's default)
    tasks_dir: str = "tasks"  # where task directories are created
