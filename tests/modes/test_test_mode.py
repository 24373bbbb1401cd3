"""Test mode: load a trained task directory, run greedy episodes, write a Test_ directory."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from joyrl_ray.run import trajectories
from joyrl_ray.run.cli import run_from_cli
from joyrl_ray.run.runner import RunResult, run
from tests.support.modes_setup import TRAIN_OVERRIDES
from tests.support.runs import make_cfg, run_main

# The trained run's network (tests/modes/conftest.py); a test run must build the same one.
LAYERS = next(o for o in TRAIN_OVERRIDES if o.startswith("algo_cfg.value_layers="))


def cli_args(trained: RunResult, *overrides: str) -> list[str]:
    return [
        "general_cfg.mode=test",
        f"general_cfg.load_path={trained.task_dir.name}",
        "general_cfg.seed=11",
        LAYERS,
        *overrides,
    ]


def episodes_csv(task: Path) -> list[dict[str, str]]:
    with (task / "results" / "episodes.csv").open() as f:
        return list(csv.DictReader(f))


def test_single_backend_runs_ten_episodes_by_default(trained: RunResult) -> None:
    tasks = trained.task_dir.parent
    result = run(make_cfg(tasks, "general_cfg.mp_backend=single", *cli_args(trained)))
    task, summary = result.task_dir, result.summary
    assert task.name.startswith("Test_CartPole-v1_DQN_") and task != trained.task_dir
    assert summary["mode"] == "test" and summary["stop_reason"] == "max_episode"
    assert summary["episodes"] == 10 and summary["updates"] == 0
    assert Path(summary["loaded_checkpoint"]) == trained.task_dir / "models" / "best.pt"
    rows = episodes_csv(task)
    returns = [float(r["return"]) for r in rows]
    assert len(rows) == 10 and summary["episode_lengths"] == [int(r["length"]) for r in rows]
    assert {r["weights_version"] for r in rows} == {"1"}  # the checkpoint's weights, only
    assert summary["return_mean"] == pytest.approx(np.mean(returns))
    assert summary["return_std"] == pytest.approx(np.std(returns))
    assert (summary["return_min"], summary["return_max"]) == (min(returns), max(returns))
    on_disk = json.loads((task / "results" / "summary.json").read_text())
    assert on_disk["return_mean"] == summary["return_mean"]
    assert yaml.safe_load((task / "config.yaml").read_text())["general_cfg"]["max_episode"] == 10
    assert (task / "figs" / "test_returns.png").stat().st_size > 5_000
    assert not list((task / "models").iterdir())  # a test run writes no checkpoints


@pytest.mark.slow
def test_ray_backend_caps_episodes_and_collects_each_exactly_once(
    trained: RunResult, ray_session
) -> None:
    tasks = trained.task_dir.parent
    cfg = make_cfg(
        tasks,
        "general_cfg.mp_backend=ray",
        "general_cfg.n_workers=2",
        "general_cfg.max_episode=25",
        "general_cfg.collect_traj=true",
        "general_cfg.load_model_step=last",
        "env_cfg.render_mode=rgb_array",
        *cli_args(trained),
    )
    result = run(cfg)
    summary, task = result.summary, result.task_dir
    assert summary["backend"] == "ray" and summary["episodes"] == 25
    assert Path(summary["loaded_checkpoint"]).name == "last.pt"
    rows = episodes_csv(task)
    trajs = trajectories.load(task)
    assert len(rows) == len(trajs) == summary["trajectories"] == 25
    # Same episodes, same order: each trajectory is the csv row it belongs to.
    for row, traj in zip(rows, trajs, strict=True):
        assert len(traj["rewards"]) == int(row["length"])
        assert float(traj["rewards"].sum()) == pytest.approx(float(row["return"]))
        assert traj["terminated"][-1] or traj["truncated"][-1]
        assert not (traj["terminated"][:-1] | traj["truncated"][:-1]).any()
        np.testing.assert_array_equal(traj["next_obs"][:-1], traj["obs"][1:])
    assert {r["worker_id"] for r in rows} <= {"0", "1"}
    assert {r["weights_version"] for r in rows} == {"1"}  # the checkpoint's weights, only
    assert (task / "videos" / "video.gif").stat().st_size > 1_000  # rendered in the driver


def test_rgb_array_writes_a_gif_that_plays(trained: RunResult) -> None:
    import imageio.v3 as iio

    tasks = trained.task_dir.parent
    result = run(
        make_cfg(
            tasks,
            "general_cfg.mp_backend=single",
            "general_cfg.max_episode=2",
            "general_cfg.render_n_episodes=2",
            "env_cfg.render_mode=rgb_array",
            *cli_args(trained),
        )
    )
    gif = result.task_dir / "videos" / "video.gif"
    assert result.summary["video"] == str(gif) and result.summary["rendered_episodes"] == 2
    frames = iio.imread(gif, index=None)
    assert frames.ndim == 4 and frames.shape[0] >= 5 and max(frames.shape[1:3]) <= 320
    assert frames.std() > 0  # a picture, not a blank
    assert gif.stat().st_size < 5_000_000


def test_human_without_a_display_falls_back_to_a_gif(
    trained: RunResult, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.delenv(var, raising=False)
    tasks = trained.task_dir.parent
    result = run(
        make_cfg(
            tasks,
            "general_cfg.mp_backend=single",
            "general_cfg.max_episode=1",
            "env_cfg.render_mode=human",
            *cli_args(trained),
        )
    )
    assert "no display" in capsys.readouterr().err
    assert (result.task_dir / "videos" / "video.gif").is_file()
    saved = yaml.safe_load((result.task_dir / "config.yaml").read_text())
    assert saved["env_cfg"]["render_mode"] == "rgb_array"


def test_human_with_a_display_driver_renders_in_a_window(
    trained: RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # a display SDL can open here
    tasks = trained.task_dir.parent
    result = run(
        make_cfg(
            tasks,
            "general_cfg.mp_backend=single",
            "general_cfg.max_episode=1",
            "general_cfg.max_step=25",
            "env_cfg.render_mode=human",
            *cli_args(trained),
        )
    )
    summary = result.summary
    assert summary["render_mode"] == "human" and summary["rendered_episodes"] == 1
    assert "render_error" not in summary and "video" not in summary


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (("general_cfg.load_path=No_Such_Task",), "no such task directory"),
        (("general_cfg.load_model_step=99999",), "99999.pt does not exist (available: best, last"),
        (("general_cfg.algo_name=DoubleDQN",), "was written by algo 'DQN'"),
        (("general_cfg.max_episode=0",), "needs a number > 0"),
        (("algo_cfg.dueling=true",), "does not fit this env_cfg / algo_cfg"),
    ],
    ids=["load-path", "model-step", "algo", "max-episode", "network"],
)
def test_bad_test_input_is_one_line_and_exit_2_before_anything_starts(
    trained: RunResult,
    capsys: pytest.CaptureFixture[str],
    overrides: tuple[str, ...],
    message: str,
) -> None:
    tasks = trained.task_dir.parent
    before = sorted(tasks.iterdir())
    args = [f"general_cfg.tasks_dir={tasks}", "general_cfg.progress=false"]
    code = run_from_cli(None, [*args, *cli_args(trained), *overrides])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err, err
    assert sorted(tasks.iterdir()) == before  # no task directory was created


def test_a_directory_without_checkpoints_is_named(tmp_path: Path) -> None:
    (tmp_path / "Train_empty" / "models").mkdir(parents=True)
    (tmp_path / "Train_empty" / "results").mkdir()
    result = run_main(
        "general_cfg.mode=test",
        "general_cfg.load_path=Train_empty",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=300,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: general_cfg.load_path=Train_empty: {tmp_path}/Train_empty/models holds no "
        "checkpoint (a train run writes one every model_save_fre updates and at its end)"
    ]


@pytest.mark.slow
def test_main_tests_with_the_training_runs_own_config(trained: RunResult) -> None:
    """As a user would: --yaml <task>/config.yaml general_cfg.mode=test load_path=<task>."""
    task = trained.task_dir
    result = run_main(
        "--yaml",
        str(task / "config.yaml"),
        "general_cfg.mode=test",
        f"general_cfg.load_path={task.name}",
        "general_cfg.max_episode=3",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert "test return" in lines[-2] and "3 episodes" in lines[-2]
    test_dir = Path(lines[-1])
    assert test_dir.parent == task.parent and test_dir.name.startswith("Test_")
    assert json.loads((test_dir / "results" / "summary.json").read_text())["episodes"] == 3
