"""Replay shards in real runs (``mp_backend: single``, the same classes as on Ray): worker k
inserts into shard k mod n, learners sample every shard and send priorities back to the
shard each row came from, ``save_buffer`` keeps every shard and a resume restores them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joyrl_ray.config import ConfigError
from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg

PER = str(ROOT / "configs" / "cartpole_dqn_per.yaml")
BATCH_SIZE = 64  # the yaml's
RUN = (
    "general_cfg.mp_backend=single",
    "general_cfg.n_workers=3",
    "general_cfg.n_replay_shards=2",
    "general_cfg.seed=2",
    "general_cfg.max_env_steps=3000",
    "general_cfg.worker_chunk_steps=64",
    "general_cfg.online_eval=false",
    "general_cfg.save_fig=false",
    "general_cfg.model_save_fre=500",
    "general_cfg.save_buffer=true",
    "algo_cfg.learn_start=500",
)


def summary_of(task: Path) -> dict:
    return json.loads((task / "results" / "summary.json").read_text())


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("shards")
    result = run(make_cfg(tmp, *RUN, yaml_path=PER))
    assert result.exit_code == 0
    return result.task_dir


def test_workers_fill_shard_k_mod_n_and_each_shard_gets_its_priorities(sharded: Path) -> None:
    summary = summary_of(sharded)
    shards = {s["shard"]: s for s in summary["replay_shards"]}
    assert sorted(shards) == [0, 1]
    # Workers 0 and 2 push to shard 0, worker 1 to shard 1: shard 0 holds about twice as much.
    assert 1.6 < shards[0]["stored"] / shards[1]["stored"] < 2.4, shards
    assert summary["updates"] > 500
    for shard in shards.values():  # the learner sampled both and wrote priorities to each
        assert shard["priorities_applied"] > 0, shards
    # No slot was overwritten (3000 rows in 100k), so every sampled row's priority came back.
    applied = sum(shard["priorities_applied"] for shard in shards.values())
    assert applied == summary["updates"] * BATCH_SIZE, (applied, summary["updates"])
    assert summary["transitions_stored"] == shards[0]["stored"] + shards[1]["stored"]
    dropped = sum(summary["transitions_dropped"].values())
    assert summary["transitions_collected"] == summary["transitions_stored"] + dropped


def test_save_buffer_keeps_every_shard_and_a_resume_restores_them(
    sharded: Path, tmp_path: Path
) -> None:
    first = summary_of(sharded)
    resumed = run(
        make_cfg(
            tmp_path,
            *RUN,
            "general_cfg.max_env_steps=4000",
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={sharded}",
            yaml_path=PER,
        )
    )
    assert resumed.exit_code == 0
    after = summary_of(resumed.task_dir)
    # Both shards came back with what they held, and the new rows went on top.
    assert after["buffer"]["size"] == first["transitions_stored"] + after["transitions_stored"]


def test_a_resume_into_another_shard_count_is_refused_in_one_line(
    sharded: Path, tmp_path: Path
) -> None:
    cfg = make_cfg(
        tmp_path,
        *RUN,
        "general_cfg.n_replay_shards=1",
        "general_cfg.max_env_steps=4000",
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={sharded}",
        yaml_path=PER,
    )
    with pytest.raises(ConfigError, match=r"n_replay_shards=1, but the replay saved in .* has 2"):
        run(cfg)
