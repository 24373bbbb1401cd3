"""JoyRL's quick-start yaml, byte for byte as JoyRL prints it (tests/data/joyrl_quick_start.yaml),
run by ``python main.py``: it trains, and the quick start's load_checkpoint snippets (test,
resume) go on from that run. What each of its keys means here: docs/config.md, "Coming from
JoyRL", which this file checks names every key of the yaml."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from joyrl_ray.config import ConfigError, RunConfig, load_config
from joyrl_ray.config.docs import joyrl_section
from joyrl_ray.run.trajectories import load as load_trajectories
from tests.support.cli_runs import summary_of
from tests.support.procs import task_dirs
from tests.support.runs import ROOT, run_main

QUICK_START = ROOT / "tests" / "data" / "joyrl_quick_start.yaml"
RUN_TIMEOUT_S = 120  # each run measured 5-8 s on 2 shared cores


def quick_start_keys() -> list[str]:
    data = yaml.safe_load(QUICK_START.read_text())
    return [f"{section}.{key}" for section, body in data.items() for key in body]


@pytest.fixture(scope="module")
def quick_start_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quick start's task directory: the yaml as it is, only tasks_dir set."""
    tasks = tmp_path_factory.mktemp("joyrl_tasks")
    done = run_main(
        "--yaml", str(QUICK_START), f"general_cfg.tasks_dir={tasks}", timeout=RUN_TIMEOUT_S
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    (task,) = task_dirs(tasks)
    return task


def run_snippet(source: Path, tasks: Path, *overrides: str) -> tuple[Path, dict[str, Any]]:
    """The quick start's yaml with a snippet's keys on top, ``load_path`` naming ``source``
    by its name under tasks_dir, as JoyRL's snippets do; returns the new task's summary."""
    shutil.copytree(source, tasks / source.name)
    done = run_main(
        "--yaml",
        str(QUICK_START),
        f"general_cfg.tasks_dir={tasks}",
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={source.name}",
        *overrides,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-3000:]}"
    (task,) = [t for t in task_dirs(tasks) if t.name != source.name]
    return task, summary_of(task)


@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
def test_the_quick_start_yaml_trains_as_joyrl_prints_it(quick_start_run: Path) -> None:
    task = quick_start_run
    summary = summary_of(task)
    # algo_name DQN_new runs DQN, under that name; mp_backend single; max_episode 100.
    assert task.name.startswith("Train_CartPole-v1_DQN_"), task.name
    assert (summary["mode"], summary["algo"], summary["backend"]) == ("train", "DQN", "single")
    assert summary["stop_reason"] == "max_episode" and summary["episodes"] == 100
    assert summary["env_steps"] > 0 and summary["updates"] > 0, summary
    # load_checkpoint false: the stale load_path is not read.
    assert summary["loaded_checkpoint"] is None and summary["resumed_from"] is None
    # collect_traj true: every episode written; max_step 200 bounds each.
    trajectories = load_trajectories(task)
    assert len(trajectories) == summary["trajectories"] == 100
    assert all(0 < len(t["rewards"]) <= 200 for t in trajectories)
    assert (task / "models" / "last.pt").is_file() and (task / "figs" / "rewards.png").is_file()
    saved = yaml.safe_load((task / "config.yaml").read_text())
    assert saved["general_cfg"]["env_name"] == "gym"
    assert saved["general_cfg"]["algo_name"] == "DQN"


@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
def test_the_test_mode_snippet_loads_the_quick_start_run(
    quick_start_run: Path, tmp_path: Path
) -> None:
    task, summary = run_snippet(quick_start_run, tmp_path, "general_cfg.mode=test")
    assert task.name.startswith("Test_CartPole-v1_DQN_"), task.name
    assert summary["mode"] == "test" and summary["episodes"] == 100 and summary["updates"] == 0
    assert summary["loaded_checkpoint"].startswith(str(tmp_path / quick_start_run.name))


@pytest.mark.timeout(2 * RUN_TIMEOUT_S + 60)
def test_the_resume_snippet_goes_on_from_the_quick_start_run(
    quick_start_run: Path, tmp_path: Path
) -> None:
    first = summary_of(quick_start_run)
    # max_episode is the whole run's total here, so the resume raises it.
    task, summary = run_snippet(
        quick_start_run, tmp_path, "general_cfg.mode=train", "general_cfg.max_episode=200"
    )
    assert summary["resumed_from"] == str(tmp_path / quick_start_run.name)
    assert summary["episodes"] == 200 and summary["episodes_this_run"] == 100
    assert summary["updates"] > first["updates"]


def test_joyrl_spellings_mean_what_joyrl_means() -> None:
    cfg = RunConfig.from_omegaconf(
        load_config(
            str(QUICK_START),
            ["general_cfg.mp_backend=null", "env_cfg.env_id=Acrobot-v1"],
        )
    )
    assert cfg.general.algo_name == "DQN" and cfg.general.env_name == "gym"
    assert cfg.general.mp_backend == "single" and cfg.env.id == "Acrobot-v1"
    assert cfg.general.save_best_model is None and cfg.algo.buffer_type == "REPLAY_QUE"
    with pytest.raises(ConfigError, match=r"general_cfg\.env_name='mujoco'.*allowed: gym"):
        load_config(str(QUICK_START), ["general_cfg.env_name=mujoco"])


def test_coming_from_joyrl_names_every_key_of_the_quick_start() -> None:
    documented = set()
    for line in joyrl_section().splitlines():
        if line.startswith("| `"):
            first, *more = line.split("`")[1].split(", ")
            section = first.split(".")[0]
            documented |= {first, *(f"{section}.{key}" for key in more)}
    missing = [key for key in quick_start_keys() if key not in documented]
    assert not missing, f"docs/config.md, Coming from JoyRL, does not say what these do: {missing}"
