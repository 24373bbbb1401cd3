"""Export a task directory's trajectories to a Minari dataset (offline RL's common format).

``python -m joyrl_ray.export_minari <task dir> <dataset id> [--data-path DIR]``

``<task dir>`` is a directory written with ``general_cfg.collect_traj: true`` (a name
under ``tasks/`` or a path); ``<dataset id>`` follows Minari's
``[namespace/]name[-v<version>]`` (e.g. ``joyrl/cartpole-dqn-v0``). The dataset goes to
``--data-path``, else ``$MINARI_DATASETS_PATH``, else ``~/.minari/datasets``, and loads
back with ``minari.load_dataset(<dataset id>)``.

Minari is optional and not in requirements.txt: ``pip install "minari[hdf5]"``.
Each trajectory becomes one Minari episode: ``observations`` are ``obs`` plus the final
``next_obs`` (T + 1 rows), then ``actions``, ``rewards``, ``terminations``,
``truncations``. A run with ``max_step`` set gets that time limit in the dataset's env
spec, so ``dataset.recover_environment()`` builds the env the data came from.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from envs.observations import PackedLayout, is_nested
from joyrl_ray.run import trajectories as traj_io

INSTALL_HINT = 'pip install "minari[hdf5]"'


class ExportError(ValueError):
    """Bad input for the export; the message is the one line shown."""


def _task_dir(path: str, tasks_dir: str) -> Path:
    for candidate in (Path(tasks_dir) / path, Path(path)):
        if (candidate / "results").is_dir():
            return candidate
    raise ExportError(f"{path}: no task directory (with results/) under {tasks_dir}/ or there")


def _env_from_config(task: Path) -> Any:
    from envs.config import EnvConfig
    from envs.registry import make_env

    config_file = task / "config.yaml"
    if not config_file.is_file():
        raise ExportError(f"{config_file} is missing: cannot tell which env made the data")
    config = yaml.safe_load(config_file.read_text())
    env_cfg = EnvConfig(**{**config["env_cfg"], "render_mode": None})
    return make_env(env_cfg, max_episode_steps=int(config["general_cfg"].get("max_step", -1)))


def episode_buffers(
    trajectories: list[dict[str, np.ndarray]], observation_space: gym.Space | None = None
) -> list[Any]:
    """Minari ``EpisodeBuffer`` objects for joyrl-ray trajectories (observations of a
    Dict / Tuple ``observation_space`` unpacked into Minari's dicts / tuples of arrays)."""
    from minari.data_collector import EpisodeBuffer

    layout = PackedLayout(observation_space) if is_nested(observation_space) else None
    buffers = []
    for i, traj in enumerate(trajectories):
        observations = np.concatenate([traj["obs"], traj["next_obs"][-1:]], axis=0)
        if layout is not None:
            observations = layout.unpack(observations)
        buffers.append(
            EpisodeBuffer(
                id=i,
                observations=observations,
                actions=np.asarray(traj["actions"]),
                rewards=np.asarray(traj["rewards"], dtype=np.float64).tolist(),
                terminations=np.asarray(traj["terminated"], dtype=bool).tolist(),
                truncations=np.asarray(traj["truncated"], dtype=bool).tolist(),
                infos={},
            )
        )
    return buffers


def export(
    task_dir: str | Path,
    dataset_id: str,
    *,
    tasks_dir: str = "tasks",
    description: str | None = None,
    author: str | None = None,
) -> Any:
    """Write the Minari dataset ``dataset_id``; returns the ``MinariDataset``."""
    try:
        import minari
    except ImportError:
        raise ExportError(f"minari is not installed (it is optional): {INSTALL_HINT}") from None
    from minari.storage.datasets_root_dir import get_dataset_path

    task = _task_dir(str(task_dir), tasks_dir)
    if not traj_io.trajectory_files(task):
        raise ExportError(
            f"{task}: no results/trajs_*.pkl (run with general_cfg.collect_traj=true)"
        )
    trajectories = traj_io.load(task)
    env = _env_from_config(task)
    config = yaml.safe_load((task / "config.yaml").read_text())
    target = get_dataset_path(dataset_id)
    existed = target.exists()
    try:
        with warnings.catch_warnings():  # minari nags about optional metadata (author, ...)
            warnings.filterwarnings("ignore", category=UserWarning, module=r"minari\b")
            return minari.create_dataset_from_buffers(
                dataset_id=dataset_id,
                buffer=episode_buffers(trajectories, env.observation_space),
                env=env if env.spec is not None else None,
                observation_space=env.observation_space,
                action_space=env.action_space,
                algorithm_name=f"joyrl-ray {config['general_cfg']['algo_name']}",
                author=author,
                description=description or f"exported from {task.name}",
            )
    except (ValueError, ImportError, TypeError) as exc:
        if not existed and target.exists():
            shutil.rmtree(target, ignore_errors=True)  # no half-written dataset left behind
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExportError(f"minari refused dataset {dataset_id!r}: {message}") from None
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m joyrl_ray.export_minari",
        description="Export a task directory's trajectories (collect_traj) to a Minari dataset.",
    )
    parser.add_argument("task_dir", help="task directory (a name under --tasks-dir, or a path)")
    parser.add_argument("dataset_id", help="Minari dataset id, e.g. joyrl/cartpole-dqn-v0")
    parser.add_argument("--tasks-dir", default="tasks", help="where task directories live")
    parser.add_argument("--data-path", help="Minari datasets folder (sets MINARI_DATASETS_PATH)")
    parser.add_argument("--description", help="dataset description")
    parser.add_argument("--author", help="dataset author")
    args = parser.parse_args(argv)
    if args.data_path:
        os.environ["MINARI_DATASETS_PATH"] = str(Path(args.data_path).resolve())
    try:
        dataset = export(
            args.task_dir,
            args.dataset_id,
            tasks_dir=args.tasks_dir,
            description=args.description,
            author=args.author,
        )
    except (ExportError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"wrote Minari dataset {args.dataset_id}: {dataset.total_episodes} episodes, "
        f"{dataset.total_steps} steps"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
