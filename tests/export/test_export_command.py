"""``python -m joyrl_ray.export`` on tiny real training runs: DQN on CartPole (Discrete),
PPO on Pendulum (Box, clipped; observations normalized, ``env_cfg.normalize_obs``: the file
takes the env's raw observations), SAC on Pendulum (Box, scaled from ``[-1, 1]``).

Each run is a few hundred env steps in one process (learning quality does not matter).
Each is exported to ONNX and to TorchScript by the real command, the six commands side by
side; then each file is run here, as a user would run it (ONNX Runtime; ``torch.jit.load``),
on observations of the env acted on by the torch policy with another seed than the
command's own check, and its actions must be torch's.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

from joyrl_ray.export.__main__ import main as export_main
from joyrl_ray.export.inputs import SUFFIXES
from joyrl_ray.export.source import load_source
from joyrl_ray.run.runner import run
from tests.support.runs import ROOT, make_cfg, needs_extra, run_python

EXPORT_TIMEOUT_S = 300
STEPS = 300  # observations replayed here (the command's own check replays 1000)
SEED = 123  # not the command's check seed: other observations
RTOL = ATOL = 1e-5
QUICK = ("general_cfg.mp_backend=single", "general_cfg.seed=3", "general_cfg.save_fig=false")
ONE_ENV = ("general_cfg.n_workers=1", "general_cfg.n_envs_per_worker=1")
TINY = "[{layer_type: linear, layer_dim: [32], activation: relu}]"


class Trained:
    """A tiny training run: its overrides, which checkpoint to export, what the export's
    line names, and the outputs after ``action``."""

    def __init__(
        self,
        overrides: tuple[str, ...],
        checkpoint: str,
        loaded: str,
        outputs: tuple[str, ...],
        yaml_path: str | None = None,
    ) -> None:
        self.overrides, self.checkpoint, self.loaded = overrides, checkpoint, loaded
        self.outputs, self.yaml_path = ("action", *outputs), yaml_path


RUNS = {
    # online evaluations: best.pt, which the export takes by default
    "DQN": Trained(
        (
            "env_cfg.id=CartPole-v1",
            "general_cfg.max_env_steps=300",
            "general_cfg.model_save_fre=50",
            "general_cfg.online_eval_episode=1",
            "algo_cfg.learn_start=100",
            "algo_cfg.batch_size=32",
            f"algo_cfg.value_layers={TINY}",
        ),
        "best",
        "models/best.pt",
        ("q_values",),
    ),
    # no online evaluation, so no best.pt: the default falls back to the last checkpoint
    "PPO": Trained(
        (
            *ONE_ENV,
            "general_cfg.reward_threshold=null",  # which would turn online_eval on
            "general_cfg.online_eval=false",
            "general_cfg.max_env_steps=256",
            "general_cfg.model_save_fre=1",
            "algo_cfg.rollout_len=128",
            "algo_cfg.n_epochs=1",
            f"algo_cfg.actor_layers={TINY}",
            f"algo_cfg.critic_layers={TINY}",
            "env_cfg.normalize_obs=true",
        ),
        "best",
        "models/last.pt; no best.pt; obs normalized inside, ",
        ("mean", "log_std"),
        str(ROOT / "configs" / "pendulum_ppo.yaml"),
    ),
    # an update number
    "SAC": Trained(
        (
            *ONE_ENV,
            "general_cfg.reward_threshold=null",  # which would turn online_eval on
            "general_cfg.online_eval=false",
            "general_cfg.max_env_steps=300",
            "general_cfg.model_save_fre=100",
            "algo_cfg.learn_start=100",
            "algo_cfg.random_steps=100",
            "algo_cfg.batch_size=32",
            f"algo_cfg.actor_layers={TINY}",
            f"algo_cfg.critic_layers={TINY}",
        ),
        "100",
        "models/100.pt",
        ("mean", "log_std"),
        str(ROOT / "configs" / "pendulum_sac.yaml"),
    ),
}
CASES = [(algo, fmt) for algo in RUNS for fmt in ("onnx", "torchscript")]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three runs' task directories."""
    root = tmp_path_factory.mktemp("export_tasks")
    found = {}
    for algo, trained in RUNS.items():
        cfg = make_cfg(
            root,
            *QUICK,
            f"general_cfg.algo_name={algo}",
            *trained.overrides,
            yaml_path=trained.yaml_path,
        )
        found[algo] = run(cfg).task_dir
    return found


@pytest.fixture(scope="module")
def exports(
    tasks: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], tuple[subprocess.CompletedProcess[str], Path]]:
    """Every case's ``python -m joyrl_ray.export``, the six side by side: (its exit code and
    output, the file it was asked to write)."""
    out_dir = tmp_path_factory.mktemp("exported")
    started = {}
    for algo, fmt in CASES:
        out = out_dir / f"{algo}{SUFFIXES[fmt]}"
        argv = [sys.executable, "-m", "joyrl_ray.export", str(tasks[algo]), "--format", fmt]
        argv += ["--checkpoint", RUNS[algo].checkpoint, "--out", str(out)]
        process = subprocess.Popen(
            argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        started[algo, fmt] = (argv, process, out)
    done = {}
    for case, (argv, process, out) in started.items():
        try:
            stdout, stderr = process.communicate(timeout=EXPORT_TIMEOUT_S)
        finally:
            process.kill()
        done[case] = (subprocess.CompletedProcess(argv, process.returncode, stdout, stderr), out)
    return done


def greedy_episodes(task: Path, checkpoint: str, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` observations of the task's env and the torch policy's env actions for them,
    acting as test mode does (on observations normalized as the run normalized them)."""
    source = load_source(task, checkpoint)
    policy, env = source.policy, source.make_env()
    observations, actions = [], []
    obs, _ = env.reset(seed=SEED)
    policy.reset_memory(1)
    for _ in range(steps):
        seen = source.policy_input(obs[None])
        action = policy.env_action(policy.act(seen, explore=False, env_steps=0)[0])[0]
        observations.append(obs)
        actions.append(action)
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset()
            policy.reset_memory(1)
    env.close()
    return np.stack(observations).astype(np.float32), np.stack(actions)


def run_file(fmt: str, path: Path, obs: np.ndarray) -> tuple[list[str], dict[str, np.ndarray]]:
    """The file's output names, and its outputs for ``obs`` (one batch)."""
    if fmt == "onnx":
        ort = needs_extra("onnxruntime", "requirements-export.txt")
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        assert [i.name for i in session.get_inputs()] == ["obs"]
        names = [o.name for o in session.get_outputs()]
        return names, dict(zip(names, session.run(names, {"obs": obs}), strict=True))
    extra = {"signature.json": ""}
    module = torch.jit.load(str(path), _extra_files=extra)
    signature = json.loads(extra["signature.json"])
    assert [i["name"] for i in signature["inputs"]] == ["obs"]
    names = [o["name"] for o in signature["outputs"]]
    with torch.no_grad():
        outputs = module(torch.from_numpy(obs))
    return names, {n: x.numpy() for n, x in zip(names, outputs, strict=True)}


@pytest.mark.parametrize(("algo", "fmt"), CASES)
def test_the_exported_file_acts_as_the_torch_policy(
    algo: str, fmt: str, tasks: dict[str, Path], exports: dict[Any, Any]
) -> None:
    if fmt == "onnx":
        needs_extra("onnxruntime", "requirements-export.txt")
    done, out = exports[algo, fmt]
    trained = RUNS[algo]
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith(f"exported {out} ({fmt}, from {trained.loaded}"), lines
    assert "): inputs obs[" in lines[0], lines
    assert re.search(r"; check: 1000 observations, actions (equal|allclose) to torch's", lines[0])

    obs, expected = greedy_episodes(tasks[algo], trained.checkpoint, STEPS)
    names, outputs = run_file(fmt, out, obs)
    assert tuple(names) == trained.outputs
    action = outputs["action"]
    assert action.shape == expected.shape and action.dtype == expected.dtype
    if np.issubdtype(expected.dtype, np.integer):
        np.testing.assert_array_equal(action, expected)
        assert np.array_equal(action, outputs["q_values"].argmax(axis=-1))
    else:
        np.testing.assert_allclose(action, expected, rtol=RTOL, atol=ATOL)
        space = load_source(tasks[algo], trained.checkpoint).policy.action_space
        assert isinstance(space, gym.spaces.Box)
        assert np.all(action >= space.low) and np.all(action <= space.high)


def test_sac_actions_are_scaled_to_the_box(tasks: dict[str, Path], exports: dict[Any, Any]) -> None:
    """Pendulum's torque is in [-2, 2]: the file's action is ``2 tanh(mean)``, not ``tanh``."""
    done, out = exports["SAC", "torchscript"]
    assert done.returncode == 0, done.stderr[-3000:]
    obs, _ = greedy_episodes(tasks["SAC"], RUNS["SAC"].checkpoint, 50)
    _, outputs = run_file("torchscript", out, obs)
    scaled = np.clip(2.0 * np.tanh(outputs["mean"]), -2.0, 2.0)
    np.testing.assert_allclose(outputs["action"], scaled, rtol=RTOL, atol=ATOL)


def doc_example(heading: str) -> str:
    """The python block under ``heading`` in docs/export.md."""
    text = (ROOT / "docs" / "export.md").read_text()
    section = text[text.index(heading) :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("fmt", "heading", "blocked"),
    [
        ("onnx", "## Running an ONNX file", ("torch", "gymnasium", "algos", "joyrl_ray")),
        ("torchscript", "## Running a TorchScript file", ("onnxruntime", "algos", "joyrl_ray")),
    ],
)
def test_the_docs_examples_run_on_exported_files(
    fmt: str,
    heading: str,
    blocked: tuple[str, ...],
    exports: dict[Any, Any],
    tmp_path: Path,
) -> None:
    """Each example of docs/export.md runs as written on a Discrete and a Box policy's file,
    with nothing of joyrl-ray (nor torch, for the ONNX one) importable."""
    if fmt == "onnx":
        needs_extra("onnxruntime", "requirements-export.txt")
    example = tmp_path / "example.py"
    example.write_text(doc_example(heading))
    for algo in ("DQN", "PPO"):
        done, out = exports[algo, fmt]
        assert done.returncode == 0, done.stderr[-3000:]
        code = (
            "import runpy, sys\n"
            f"sys.modules.update(dict.fromkeys({list(blocked)!r}))\n"
            f"sys.argv = [{str(example)!r}, {str(out)!r}]\n"
            f"runpy.run_path({str(example)!r}, run_name='__main__')\n"
        )
        result = run_python(code, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        printed = result.stdout.strip().splitlines()
        assert [line.split()[0] for line in printed] == ["0", "1", "2", "3", "4"], printed


def in_process(*argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m joyrl_ray.export ARGV`` through its ``main``, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = export_main(list(argv))
    return subprocess.CompletedProcess(list(argv), code, out.getvalue(), err.getvalue())


def test_a_file_whose_actions_differ_is_not_written(tasks: dict[str, Path], tmp_path: Path) -> None:
    """The SAC run's checkpoint under an algorithm whose graph leaves out the Box scaling
    (``tests.support.broken_export``): the check fails, exit 1, one line, and nothing is
    left at ``--out`` or beside it."""
    task = tmp_path / "Train_Pendulum-v1_UnscaledSAC"
    (task / "models").mkdir(parents=True)
    config = yaml.safe_load((tasks["SAC"] / "config.yaml").read_text())
    config["general_cfg"]["algo_name"] = "tests.support.broken_export:UNSCALED_SAC"
    (task / "config.yaml").write_text(yaml.safe_dump(config))
    state = torch.load(tasks["SAC"] / "models" / "last.pt", weights_only=True)
    state["algo_name"] = config["general_cfg"]["algo_name"]
    torch.save(state, task / "models" / "last.pt")
    out = tmp_path / "exported" / "unscaled.pt"

    result = in_process(str(task), "--format", "torchscript", "--out", str(out))
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {out}: the exported actions differ")
    assert re.search(r"on \d+ of 1000 observations \(the first at step \d+: ", lines[0]), lines
    assert lines[0].endswith("; nothing written"), lines
    assert list(out.parent.iterdir()) == []


def test_an_existing_file_is_replaced_only_with_force(
    tasks: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "policy.pt"
    out.write_bytes(b"a file of the user's")
    refused = in_process(str(tasks["DQN"]), "--format", "torchscript", "--out", str(out))
    assert refused.returncode == 2 and out.read_bytes() == b"a file of the user's"
    assert refused.stderr.strip() == (
        f"error: --out {out} exists; allowed: another --out, or --force to replace it"
    )
    forced = in_process(str(tasks["DQN"]), "--format", "torchscript", "--out", str(out), "--force")
    assert forced.returncode == 0, forced.stderr
    assert torch.jit.load(str(out)) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.pt"]  # no temporary left


def test_an_env_that_raises_during_the_check_is_rebuilt_and_the_export_is_kept(
    tmp_path: Path,
) -> None:
    """The check's env fails to reset for its first seed and raises every 97th step: it is
    rebuilt each time (as the online evaluator rebuilds one), the recording goes on, and the
    file is written and checked on its 1000 observations."""
    flaky = "tests.support.faulty_envs:FlakyEnv"
    cfg = make_cfg(
        tmp_path,
        *QUICK,
        "general_cfg.algo_name=DQN",
        f"env_cfg.id={flaky}",
        *RUNS["DQN"].overrides[1:],  # the DQN case's budget and network, on the flaky env
    )
    task = run(cfg).task_dir
    out = tmp_path / "flaky.pt"
    argv = [sys.executable, "-m", "joyrl_ray.export", str(task), "--format", "torchscript"]
    done = subprocess.run(
        [*argv, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "check: 1000 observations, actions equal to torch's" in done.stdout, done.stdout
    assert out.is_file()
