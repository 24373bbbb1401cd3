"""R2D2 end to end through ``python main.py`` (single backend, a few thousand env steps):
workers send sequences to two replay shards, the learner samples them and writes each
sequence's priority back, and the accounting stays in env steps: what the shards stored
(each step once, however many overlapping sequences hold it) plus what was dropped is
every env step collected."""

from __future__ import annotations

import pytest

from tests.support.cli_runs import train

MAX_ENV_STEPS = 3000


@pytest.fixture(scope="module")
def summary(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return train(
        tmp_path_factory.mktemp("r2d2"),
        "cartpole_novel_r2d2",
        (
            "general_cfg.mp_backend=single",
            f"general_cfg.max_env_steps={MAX_ENV_STEPS}",
            "general_cfg.online_eval=false",
            "general_cfg.model_save_fre=100000",
            "algo_cfg.learn_start=1000",
            "algo_cfg.updates_per_step=0.05",
        ),
        threshold=None,
        timeout=300,
    )


def test_r2d2_runs_end_to_end_on_sequence_replay(summary: dict) -> None:
    assert summary["stop_reason"] == "max_env_steps", summary.get("error")
    assert summary["algo"] == "R2D2" and summary["data_flow"] == "sequence_replay"
    assert summary["updates"] > 0
    shards = summary["replay_shards"]
    assert len(shards) == 2 and all(s["stored"] > 0 for s in shards), shards
    # Prioritized by sequence: the learner wrote priorities back to both shards.
    assert all(s["priorities_applied"] > 0 for s in shards), shards
    # The buffer holds sequences, far fewer than the env steps they store.
    assert 0 < summary["buffer"]["size"] < summary["transitions_stored"] / 5


def test_accounting_counts_env_steps_not_sequences(summary: dict) -> None:
    stored, dropped = summary["transitions_stored"], summary["transitions_dropped"]
    assert set(dropped) <= {"after_stop", "nstep_unfinished"}, dropped
    assert summary["transitions_collected"] == stored + sum(dropped.values())
    assert MAX_ENV_STEPS <= summary["env_steps"] <= summary["transitions_collected"]
    assert stored == sum(s["stored"] for s in summary["replay_shards"])
