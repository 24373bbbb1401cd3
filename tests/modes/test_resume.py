"""Resume: a train run continues from a checkpoint; counters, optimizer, epsilon, logs go on."""

from __future__ import annotations

import csv
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from envs.probe import probe_env
from joyrl_ray.backends.planes import LocalPlanes, PlaneSetup
from joyrl_ray.control.coordinator import StopRule
from joyrl_ray.roles.learner.config import LearnerConfig
from joyrl_ray.roles.learner.learner import Learner
from joyrl_ray.run.checkpoint import find_checkpoint, load_checkpoint
from joyrl_ray.run.cli import run_from_cli
from joyrl_ray.run.runner import RunResult, run
from joyrl_ray.wire.handles import LocalStore
from joyrl_ray.wire.messages import Counters
from tests.support.modes_setup import TRAIN_OVERRIDES, epsilon
from tests.support.procs import TrackedRun
from tests.support.runs import ROOT, make_cfg


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def adam_steps(checkpoint: dict) -> set[int]:
    """Adam's per-parameter step counts in a checkpoint's optimizer state."""
    state = checkpoint["policy"]["optimizer"]["state"]
    return {int(s["step"]) for s in state.values()}


def scalars(events_file: Path, tag: str) -> list[tuple[int, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events_file), size_guidance={"scalars": 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def resume_cfg(tasks: Path, source: str, *overrides: str):
    return make_cfg(
        tasks,
        *TRAIN_OVERRIDES,
        "general_cfg.load_checkpoint=true",
        f"general_cfg.load_path={source}",
        *overrides,
    )


def test_resume_continues_counters_optimizer_epsilon_and_history(
    trained: RunResult, tmp_path: Path
) -> None:
    first = trained.summary
    source = trained.task_dir
    last = load_checkpoint(source / "models" / "last.pt")
    assert adam_steps(last) == {first["updates"]}
    assert last["counters"] == {k: first[k] for k in ("env_steps", "episodes", "updates")}

    result = run(
        resume_cfg(
            tmp_path,
            str(source),
            "general_cfg.max_env_steps=2400",
            "general_cfg.worker_chunk_steps=64",  # the run stops within the chunk crossing it
        )
    )
    second, task = result.summary, result.task_dir
    assert second["resumed_from"] == str(source)
    assert Path(second["loaded_checkpoint"]) == source / "models" / "last.pt"
    # max_env_steps is the total over both runs; counters go on from the checkpoint.
    assert 2400 <= second["env_steps"] < 2400 + 64 and second["stop_reason"] == "max_env_steps"
    assert second["updates"] > first["updates"] and second["episodes"] > first["episodes"]
    assert second["episodes"] == first["episodes"] + second["episodes_this_run"]
    # The optimizer went on: Adam's step counts are the total number of updates.
    resumed_last = load_checkpoint(task / "models" / "last.pt")
    assert adam_steps(resumed_last) == {second["updates"]}
    assert resumed_last["policy"]["updates"] == second["updates"]
    assert resumed_last["weights_version"] > last["weights_version"]

    # episodes.csv / evals.csv start with the old rows and go on.
    old_eps, new_eps = (rows(d / "results" / "episodes.csv") for d in (source, task))
    assert new_eps[: len(old_eps)] == old_eps and len(new_eps) == second["episodes"]
    assert [int(r["episode"]) for r in new_eps] == list(range(1, second["episodes"] + 1))
    assert int(new_eps[len(old_eps)]["env_steps"]) >= first["env_steps"]
    old_evals, new_evals = (rows(d / "results" / "evals.csv") for d in (source, task))
    assert new_evals[: len(old_evals)] == old_evals and len(new_evals) > len(old_evals)
    assert second["eval_history"][: len(first["eval_history"])] == first["eval_history"]

    # Epsilon depends on global env steps: the first episode after resume is not at 0.
    own = [
        p
        for p in (task / "logs").glob("events.out.tfevents.*")
        if not (source / "logs" / p.name).exists()
    ]
    assert len(own) == 1
    step, value = scalars(own[0], "explore/epsilon")[0]
    assert step >= first["env_steps"]
    assert value == pytest.approx(epsilon(step), rel=1e-5) and value < 0.5
    # The old run's events (curves from step 0) and best model came along.
    assert len(list((task / "logs").glob("events.out.tfevents.*"))) == 2
    assert (task / "models" / "best.pt").is_file()
    assert (task / "figs" / "rewards.png").is_file()


def test_learner_restores_everything_the_checkpoint_holds(trained: RunResult) -> None:
    path = trained.task_dir / "models" / "last.pt"
    checkpoint = load_checkpoint(path)
    cfg = make_cfg(trained.task_dir.parent, *TRAIN_OVERRIDES)
    counters = Counters(**checkpoint["counters"])
    setup = PlaneSetup(stop_rule=StopRule(), needs=None, n_workers=1, counters=counters)
    planes = LocalPlanes(setup, LocalStore())
    spaces = probe_env(cfg.env)
    learner = Learner(
        LearnerConfig.of(cfg),
        planes.learner_links(LocalStore()),
        spaces,
        start_state=path.read_bytes(),
    )
    learner.start(None)
    algorithm = learner.algorithm
    saved = checkpoint["policy"]
    nets = {"q_net": algorithm.policy.q_net, "target_net": algorithm.target_net}
    for name, net in nets.items():
        for key, tensor in net.state_dict().items():
            torch.testing.assert_close(tensor, saved[name][key])
    restored_opt = algorithm.optimizer.state_dict()
    for index, param_state in saved["optimizer"]["state"].items():
        for key, value in param_state.items():
            torch.testing.assert_close(restored_opt["state"][index][key], value)
    assert algorithm.updates == learner.updates == checkpoint["counters"]["updates"]
    assert vars(learner.counters) == checkpoint["counters"]
    assert learner.weights_version == checkpoint["weights_version"] + 1  # published once
    assert torch.equal(torch.get_rng_state(), checkpoint["rng"]["torch"])
    assert algorithm.rng.bit_generator.state == checkpoint["rng"]["numpy"]


@pytest.mark.parametrize("algo", ["SAC", "TD3"])
@pytest.mark.timeout(120)  # measured 5 s on 2 shared cores
def test_a_restored_learner_continues_the_noise_stream_of_its_checkpoint(
    algo: str, tmp_path: Path
) -> None:
    """SAC's and TD3's learning noise comes from their own generator (rng["learning"]): a
    learner resumed from a checkpoint draws what the checkpointed one would have drawn next."""
    yaml = str(ROOT / "configs" / f"pendulum_{algo.lower()}.yaml")
    overrides = (
        "general_cfg.mp_backend=single",
        "general_cfg.seed=3",
        "general_cfg.max_env_steps=400",
        "general_cfg.model_save_fre=50",
        "general_cfg.online_eval=false",
        "general_cfg.save_fig=false",
        "algo_cfg.learn_start=200",
        "algo_cfg.random_steps=200",
    )
    trained = run(make_cfg(tmp_path, *overrides, yaml_path=yaml))
    path = trained.task_dir / "models" / "last.pt"
    checkpoint = load_checkpoint(path)
    assert checkpoint["counters"]["updates"] > 0
    expected = torch.Generator().manual_seed(0)
    expected.set_state(checkpoint["rng"]["learning"])
    untouched = torch.Generator().manual_seed(0).get_state()
    assert not torch.equal(checkpoint["rng"]["learning"], untouched)  # it was drawn from

    cfg = make_cfg(tmp_path, *overrides, yaml_path=yaml)
    counters = Counters(**checkpoint["counters"])
    setup = PlaneSetup(stop_rule=StopRule(), needs=None, n_workers=1, counters=counters)
    planes = LocalPlanes(setup, LocalStore())
    learner = Learner(
        LearnerConfig.of(cfg),
        planes.learner_links(LocalStore()),
        probe_env(cfg.env),
        start_state=path.read_bytes(),
    )
    learner.start(None)
    drawn = learner.algorithm.noise(8)
    torch.testing.assert_close(drawn, torch.randn(drawn.shape, generator=expected))


def test_resume_from_a_torn_last_checkpoint_uses_the_newest_intact_one(
    trained: RunResult, tmp_path: Path
) -> None:
    """What SIGKILL mid-save can leave (a stray temp file), plus a torn last.pt."""
    copy = tmp_path / trained.task_dir.name
    shutil.copytree(trained.task_dir, copy)
    models = copy / "models"
    (models / ".last.pt.x1y2z3.tmp").write_bytes(b"half a checkpoint")
    data = (models / "last.pt").read_bytes()
    (models / "last.pt").write_bytes(data[: len(data) // 2])
    newest = max(int(p.stem) for p in models.glob("[0-9]*.pt"))
    intact = load_checkpoint(models / f"{newest}.pt")

    target = intact["counters"]["env_steps"] + 300
    result = run(resume_cfg(tmp_path, copy.name, f"general_cfg.max_env_steps={target}"))
    summary = result.summary
    assert Path(summary["loaded_checkpoint"]).name == f"{newest}.pt"
    assert summary["updates"] >= intact["counters"]["updates"]
    assert summary["episodes"] == intact["counters"]["episodes"] + summary["episodes_this_run"]
    # The history stops where the checkpoint did, then goes on.
    old = rows(copy / "results" / "episodes.csv")[: intact["counters"]["episodes"]]
    new = rows(result.task_dir / "results" / "episodes.csv")
    assert new[: len(old)] == old and len(new) == summary["episodes"]
    log = (result.task_dir / "logs" / "log.txt").read_text()
    assert "skipped" in log and "last.pt" in log


def test_resume_past_the_total_is_one_line_exit_2(
    trained: RunResult, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = trained.task_dir.parent
    code = run_from_cli(
        None,
        [
            f"general_cfg.tasks_dir={tasks}",
            *TRAIN_OVERRIDES,
            "general_cfg.load_checkpoint=true",
            f"general_cfg.load_path={trained.task_dir.name}",
            "general_cfg.max_env_steps=1000",
        ],
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "general_cfg.max_env_steps=1000 is the total" in err and "raise it" in err


@pytest.mark.slow
@pytest.mark.timeout(180)  # measured 35 s with the trained run and the session's Ray
def test_resume_on_the_ray_backend(trained: RunResult, tmp_path: Path, ray_session) -> None:
    first = trained.summary
    result = run(
        resume_cfg(
            tmp_path,
            str(trained.task_dir),
            "general_cfg.mp_backend=ray",
            "general_cfg.max_env_steps=1800",
        )
    )
    second = result.summary
    assert second["backend"] == "ray" and second["env_steps"] >= 1800
    assert second["updates"] > first["updates"]
    assert adam_steps(load_checkpoint(result.task_dir / "models" / "last.pt")) == {
        second["updates"]
    }
    new_eps = rows(result.task_dir / "results" / "episodes.csv")
    assert len(new_eps) == second["episodes"] > first["episodes"]
    resumed = new_eps[first["episodes"] :]
    assert all(int(r["env_steps"]) >= first["env_steps"] for r in resumed)
    # The learner actor's metrics reach tensorboard through the driver.
    own = [
        p
        for p in (result.task_dir / "logs").glob("events.out.tfevents.*")
        if not (trained.task_dir / "logs" / p.name).exists()
    ]
    losses = scalars(own[0], "learner/loss")
    assert losses and min(step for step, _ in losses) > first["updates"]


@pytest.mark.slow
@pytest.mark.timeout(300)  # measured 11-17 s on 2 shared cores; its own wait is 120 s
def test_sigkill_mid_training_resumes_from_an_intact_checkpoint(tmp_path: Path) -> None:
    """Kill a real training process while it writes checkpoints; resume from what it left."""
    args = (
        *TRAIN_OVERRIDES,
        "general_cfg.max_env_steps=100000",
        "general_cfg.model_save_fre=10",
        "general_cfg.online_eval=false",
        f"general_cfg.tasks_dir={tmp_path}",
        "general_cfg.progress=false",
    )
    logs = tmp_path / "logs"
    logs.mkdir()
    training = TrackedRun(args, log_dir=logs)  # its tree is killed however the test ends
    try:
        deadline = time.monotonic() + 120
        models = None
        while time.monotonic() < deadline and training.proc.poll() is None:
            training.poll_tree()
            found = list(tmp_path.glob("Train_*/models"))
            if found and len(list(found[0].glob("[0-9]*.pt"))) >= 2:
                models = found[0]
                break
            time.sleep(0.2)
        assert models is not None, "no checkpoints appeared"
        time.sleep(np.random.default_rng().uniform(0.0, 1.0))  # somewhere among the saves
    finally:
        training.kill()  # SIGKILL, mid-run
    task = models.parent
    assert not (task / "results" / "summary.json").exists()  # it really died mid-run

    found = find_checkpoint(task, "last")
    updates = found.state["counters"]["updates"]
    target = found.state["counters"]["env_steps"] + 200
    result = run(
        resume_cfg(
            tmp_path,
            task.name,
            f"general_cfg.max_env_steps={target}",
            "general_cfg.online_eval=false",
        )
    )
    assert result.exit_code == 0 and result.summary["env_steps"] >= target
    assert result.summary["updates"] >= updates
    assert adam_steps(load_checkpoint(result.task_dir / "models" / "last.pt")) == {
        result.summary["updates"]
    }
