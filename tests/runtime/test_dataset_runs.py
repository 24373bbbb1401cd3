"""``general_cfg.dataset``: a run with no workers learns from recorded episodes, on either
backend, stops at ``max_updates``, checkpoints and evaluates as any run, resumes offline
or online, and a replay shard killed on Ray reads its part of the dataset again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from joyrl_ray.config import ConfigError
from tests.support.cli_runs import TINY_DQN, train_in_process
from tests.support.procs import task_dirs
from tests.support.recorded_episodes import random_episodes, write_task_dir
from tests.support.runs import needs_extra

SMALL = ("general_cfg.online_eval_episode=2", "general_cfg.model_save_fre=100", *TINY_DQN)


def random_cartpole(path: Path, steps: int) -> Path:
    """A task directory holding ``steps`` steps of CartPole played at random."""
    return write_task_dir(path, random_episodes("CartPole-v1", steps))


def test_a_dataset_run_in_one_process_has_no_workers_and_stops_at_max_updates(
    tmp_path: Path,
) -> None:
    data = random_cartpole(tmp_path / "data", 2_000)
    summary = train_in_process(
        tmp_path / "tasks",
        "cartpole_dqn",
        (
            "general_cfg.mp_backend=single",
            f"general_cfg.dataset={data}",
            "general_cfg.max_updates=300",
            *SMALL,
        ),
        None,
    )
    assert summary["stop_reason"] == "max_updates" and summary["updates"] == 300
    assert summary["n_workers"] == 0 and summary["env_steps"] == 0
    assert summary["dataset"]["transitions"] == 2_000
    assert summary["dataset"]["source"].endswith("trajs_0.pkl")
    assert summary["time_s"]["startup"] > 0 and summary["time_s"]["run"] >= 0  # to the 1st update
    assert summary["bottleneck"]["verdict"] == "no_workers"
    assert len(summary["eval_history"]) >= 3  # every 100 updates, as in any run
    (task,) = task_dirs(tmp_path / "tasks")
    assert {"100.pt", "300.pt", "last.pt", "best.pt"} <= {p.name for p in task.glob("models/*")}
    config = (task / "config.yaml").read_text()
    assert "n_workers: 0" in config and f"dataset: {data}" in config


@pytest.mark.timeout(400)
def test_two_learners_on_two_shards_learn_from_a_dataset_on_ray_and_a_resume_counts_on(
    tmp_path: Path, ray_session
) -> None:
    data = random_cartpole(tmp_path / "data", 3_001)
    common = (
        f"general_cfg.dataset={data}",
        "general_cfg.n_learners=2",
        "general_cfg.n_replay_shards=2",
        *SMALL,
    )
    first = train_in_process(
        tmp_path / "first", "cartpole_dqn", (*common, "general_cfg.max_updates=200"), None
    )
    assert first["backend"] == "ray" and first["stop_reason"] == "max_updates"
    assert first["updates"] == 200 and first["n_workers"] == 0
    assert [shard["shard"] for shard in first["replay_shards"]] == [0, 1]
    assert first["dataset"]["transitions"] == 3_001
    (task,) = task_dirs(tmp_path / "first")
    resume = ("general_cfg.load_checkpoint=true", f"general_cfg.load_path={task}")
    resumed = train_in_process(
        tmp_path / "resumed",
        "cartpole_dqn",
        (*common, *resume, "general_cfg.max_updates=400"),
        None,
    )
    assert resumed["stop_reason"] == "max_updates" and resumed["updates"] == 400
    (again,) = task_dirs(tmp_path / "resumed")
    last = torch.load(again / "models" / "last.pt", weights_only=False)
    assert last["counters"]["updates"] == 400


def test_a_checkpoint_learnt_from_a_dataset_resumes_online_with_workers(tmp_path: Path) -> None:
    data = random_cartpole(tmp_path / "data", 2_000)
    one_process = ("general_cfg.mp_backend=single", *SMALL)
    train_in_process(
        tmp_path / "offline",
        "cartpole_dqn",
        (*one_process, f"general_cfg.dataset={data}", "general_cfg.max_updates=200"),
        None,
    )
    (offline,) = task_dirs(tmp_path / "offline")
    online = train_in_process(
        tmp_path / "online",
        "cartpole_dqn",
        (
            *one_process,
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={offline}",
            "general_cfg.max_env_steps=600",
            "general_cfg.max_updates=-1",
        ),
        None,
    )
    assert online["n_workers"] == 1 and online["env_steps"] >= 600
    assert online["updates"] > 200 and "dataset" not in online
    assert json.loads((offline / "results" / "summary.json").read_text())["updates"] == 200


def test_a_minari_dataset_the_export_wrote_is_learnt_from_by_id_and_one_of_other_spaces_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_extra("minari", "requirements-minari.txt")
    from joyrl_ray.export_minari import export

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    cartpole = random_cartpole(tmp_path / "cartpole", 1_000)
    export(cartpole, "joyrl/cartpole-random-v0")
    pendulum = write_task_dir(
        tmp_path / "pendulum",
        random_episodes("Pendulum-v1", 400),
        "env_cfg.id=Pendulum-v1",
        "general_cfg.algo_name=SAC",
    )
    export(pendulum, "joyrl/pendulum-random-v0")
    one_process = ("general_cfg.mp_backend=single", "general_cfg.max_updates=100", *SMALL)
    summary = train_in_process(
        tmp_path / "tasks",
        "cartpole_dqn",
        (*one_process, "general_cfg.dataset=joyrl/cartpole-random-v0"),
        None,
    )
    assert summary["updates"] == 100 and summary["n_workers"] == 0
    assert summary["dataset"]["source"] == "Minari dataset joyrl/cartpole-random-v0"
    assert summary["dataset"]["transitions"] == 1_000
    with pytest.raises(ConfigError) as refused:
        train_in_process(
            tmp_path / "refused",
            "cartpole_dqn",
            (*one_process, "general_cfg.dataset=joyrl/pendulum-random-v0"),
            None,
        )
    line = str(refused.value)
    assert "\n" not in line and "its observations are float32 rows of shape (3,)" in line, line
    assert not (tmp_path / "refused").exists() or not list((tmp_path / "refused").iterdir())


#: Each offline algorithm, its config and the env its dataset is recorded on.
OFFLINE = {
    "BC": ("cartpole_bc", "CartPole-v1"),
    "DiscreteCQL": ("cartpole_discrete_cql", "CartPole-v1"),
    "CQL": ("pendulum_cql", "Pendulum-v1"),
    "IQL": ("pendulum_iql", "Pendulum-v1"),
}
LAYER = "[{layer_type: linear, layer_dim: [32]}]"
SMALL_NETS = {
    "cartpole_bc": (f"algo_cfg.actor_layers={LAYER}",),
    "cartpole_discrete_cql": (f"algo_cfg.value_layers={LAYER}",),
    "pendulum_cql": (f"algo_cfg.actor_layers={LAYER}", f"algo_cfg.critic_layers={LAYER}"),
    "pendulum_iql": (
        f"algo_cfg.actor_layers={LAYER}",
        f"algo_cfg.critic_layers={LAYER}",
        f"algo_cfg.value_layers={LAYER}",
    ),
}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("algo", sorted(OFFLINE))
def test_each_offline_algorithm_updates_in_step_on_two_learners_from_a_dataset_and_resumes(
    algo: str, tmp_path: Path, ray_session
) -> None:
    config, env_id = OFFLINE[algo]
    data = write_task_dir(tmp_path / "data", random_episodes(env_id, 2_000))
    common = (
        f"env_cfg.id={env_id}",
        f"general_cfg.dataset={data}",
        "general_cfg.n_learners=2",
        "general_cfg.n_replay_shards=2",
        "general_cfg.model_save_fre=50",
        "general_cfg.online_eval_episode=1",
        "algo_cfg.batch_size=32",
        *SMALL_NETS[config],
    )
    first = train_in_process(
        tmp_path / "first", config, (*common, "general_cfg.max_updates=100"), None
    )
    assert first["algo"] == algo and first["updates"] == 100 and first["n_workers"] == 0
    assert {learner["updates"] for learner in first["learners"]} == {100}
    assert len({learner["params_digest"] for learner in first["learners"]}) == 1  # in step
    (task,) = task_dirs(tmp_path / "first")
    resume = ("general_cfg.load_checkpoint=true", f"general_cfg.load_path={task}")
    resumed = train_in_process(
        tmp_path / "resumed", config, (*common, *resume, "general_cfg.max_updates=150"), None
    )
    assert resumed["updates"] == 150 and resumed["resumed_from"]
