"""``general_cfg.dataset``: the recorded episodes a run learns from instead of workers.

A dataset is named by what the user has on disk: a task directory written with
``collect_traj`` (a name under ``tasks_dir`` or a path), its ``results/`` folder, one
``trajs_*.pkl`` file, a folder holding several of those task directories or files, or the
id of a Minari dataset in the local Minari root (``$MINARI_DATASETS_PATH``, else
``~/.minari/datasets``; never downloaded at run time). It is read once, in the driver,
before anything starts; a name that finds nothing, files that hold no episodes, or
episodes whose observations or actions do not fit the env are refused in one line.

Each replay shard then reads the same files itself and keeps its contiguous part of the
transitions, folded with the algorithm's ``n_step`` and ``gamma``
(:class:`~joyrl_ray.data.dataset_rows.DatasetSource`): it is filled when it starts, and
again when Ray restarts it. A shard placed on another node
(``general_cfg.data_server_resources``) needs the same path there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from algos import ALGORITHMS
from envs.observations import is_nested
from joyrl_ray.batch import ACTIONS, OBS, batch_rows
from joyrl_ray.config import ConfigError, RunConfig
from joyrl_ray.data.dataset_rows import DatasetSource, NotADataset, folded_transitions
from joyrl_ray.data_needs import ReplayNeeds
from joyrl_ray.flows.base import DataFlow
from joyrl_ray.flows.registry import flow_for
from joyrl_ray.multi_agent_plan import MultiAgentPlan
from joyrl_ray.run import trajectories as traj_io
from joyrl_ray.wire.messages import Trajectory

MINARI_EXTRA = "requirements-minari.txt"
ALLOWED = (
    "allowed: a task directory written with general_cfg.collect_traj=true, a trajs_*.pkl "
    "file, a folder of either, or a local Minari dataset id"
)


@dataclass
class Dataset:
    """A dataset as read in the driver: where it is, its episodes, and where they came
    from (for the log)."""

    source: DatasetSource
    episodes: list[Trajectory]
    where: str

    @property
    def steps(self) -> int:
        return sum(len(episode[ACTIONS]) for episode in self.episodes)

    def mean_return(self) -> float:
        returns = [float(np.sum(episode["rewards"])) for episode in self.episodes]
        return float(np.mean(returns)) if returns else float("nan")


def load_dataset(
    name: str, tasks_dir: str, spaces: tuple[gym.Space, gym.Space], needs: ReplayNeeds
) -> Dataset:
    """The episodes ``general_cfg.dataset=name`` names, checked against the env's spaces;
    their source folds them with ``needs``' ``n_step`` and ``gamma``."""
    shown = f"general_cfg.dataset={name}"
    path = next((p for p in (Path(tasks_dir) / name, Path(name)) if p.exists()), None)
    try:
        if path is not None:
            dataset = _from_files(path.resolve(), shown, needs)
        else:
            dataset = _from_minari(name, shown, needs)
    except NotADataset as exc:
        raise ConfigError(f"{shown}: {exc}") from None
    if not dataset.steps:
        raise ConfigError(f"{shown}: {dataset.where} holds no steps")
    _check_fits(dataset, spaces, shown)
    return dataset


def _files_under(path: Path) -> list[Path]:
    """The trajectory files of ``path``: itself (a file), its own (a task directory or
    results folder), else those of each folder in it (a folder of task directories)."""
    if path.is_file():
        return [path]
    files = traj_io.trajectory_files(path)
    if files:
        return files
    return [file for sub in sorted(path.iterdir()) if sub.is_dir() for file in _files_under(sub)]


def _from_files(path: Path, shown: str, needs: ReplayNeeds) -> Dataset:
    files = _files_under(path)
    if not files:
        raise ConfigError(f"{shown}: no trajs_*.pkl in {path} or in the folders in it; {ALLOWED}")
    source = DatasetSource(files=tuple(map(str, files)), n_step=needs.n_step, gamma=needs.gamma)
    where = str(files[0]) if len(files) == 1 else f"{len(files)} files under {path}"
    return Dataset(source, source.episodes(), where)


def _from_minari(name: str, shown: str, needs: ReplayNeeds) -> Dataset:
    try:
        import minari
    except ImportError:
        raise ConfigError(
            f"{shown}: no such file or task directory, and minari (for a Minari dataset id) "
            f"is not installed: pip install -r {MINARI_EXTRA}"
        ) from None
    from minari.storage.datasets_root_dir import get_dataset_path

    local = sorted(minari.list_local_datasets())
    if name not in local:
        root = get_dataset_path(name).parent
        have = f"local Minari datasets: {', '.join(local)}" if local else "no local Minari dataset"
        raise ConfigError(
            f"{shown}: no such file, task directory or Minari dataset (looked in "
            f"{Path('.').resolve()}, and the Minari root {root}: {have}); {ALLOWED}"
        )
    data_path = str(get_dataset_path(name) / "data")
    source = DatasetSource(minari_path=data_path, n_step=needs.n_step, gamma=needs.gamma)
    return Dataset(source, source.episodes(), f"Minari dataset {name}")


def _check_fits(dataset: Dataset, spaces: tuple[gym.Space, gym.Space], shown: str) -> None:
    obs_space, action_space = spaces
    episode = dataset.episodes[0]
    obs, actions = np.asarray(episode[OBS]), np.asarray(episode[ACTIONS])
    expected_obs = _row_layout(obs_space)
    if (obs.dtype.kind, obs.shape[1:]) != expected_obs and not (
        obs.dtype.kind in "fiu" and expected_obs[0] in "fiu" and obs.shape[1:] == expected_obs[1]
    ):
        raise ConfigError(
            f"{shown}: its observations are {_describe(obs)}, but the env's are {obs_space}; "
            "allowed: a dataset recorded on this env_cfg (its id and wrappers)"
        )
    if isinstance(action_space, gym.spaces.Discrete):
        bad = actions.dtype.kind not in "iu" or actions.ndim != 1
        bad = bad or bool(np.any((actions < action_space.start) | (actions >= action_space.n)))
    else:
        bad = actions.shape[1:] != tuple(action_space.shape or ())
    if bad:
        raise ConfigError(
            f"{shown}: its actions are {_describe(actions)}, but the env's action space is "
            f"{action_space}; allowed: a dataset recorded on this env_cfg"
        )


def _row_layout(space: gym.Space) -> tuple[str, tuple[int, ...]]:
    """(dtype kind, shape) of one observation row as the runtime moves it."""
    if is_nested(space):
        return "V", ()
    if isinstance(space, gym.spaces.Discrete):
        return "i", ()
    return np.dtype(space.dtype).kind, tuple(space.shape or ())


def _describe(array: np.ndarray) -> str:
    return f"{array.dtype} rows of shape {array.shape[1:]}"


def dataset_needs(flow: DataFlow, algo_name: str) -> ReplayNeeds:
    """How the dataset fills the run's replay; refused for a flow that has none."""
    needs = flow.dataset_needs()
    if needs is None:
        raise ConfigError(
            f"general_cfg.dataset needs an algorithm that learns from replayed transitions, "
            f"and general_cfg.algo_name={algo_name} learns from {flow.name.replace('_', ' ')}; "
            f"allowed: {', '.join(_dataset_algorithms())}"
        )
    return needs


def _dataset_algorithms() -> list[str]:
    """The registered algorithms whose defaults can learn from a dataset."""
    names = []
    for name, spec in sorted(ALGORITHMS.items()):
        if ":" in name:  # an algorithm of the user's, named by import path
            continue
        if flow_for(spec.config_cls().data_needs()).dataset_needs() is not None:
            names.append(name)
    return names


def check_size(dataset: Dataset, needs: ReplayNeeds, n_shards: int) -> int:
    """The dataset's transitions; refused when a shard's part could not fill one batch."""
    rows = batch_rows(folded_transitions(dataset.episodes, needs.n_step, needs.gamma))
    if rows < needs.batch_size * n_shards:
        raise ConfigError(
            f"general_cfg.dataset holds {rows} transitions, fewer than algo_cfg.batch_size="
            f"{needs.batch_size} per replay shard ({n_shards}); allowed: a larger dataset, or a "
            "smaller batch_size"
        )
    return rows


@dataclass
class DatasetRun:
    """A run with no workers: where its replay shards read their data, and what it holds."""

    source: DatasetSource
    where: str
    episodes: int
    transitions: int
    mean_return: float
    shards: int

    def line(self) -> str:
        return (
            f"learning from {self.where}: {self.episodes} episodes, {self.transitions} "
            f"transitions (mean episode return {self.mean_return:.1f}) in {self.shards} replay "
            "shard(s); no workers"
        )

    def summary(self) -> dict[str, Any]:
        return {
            "source": self.where,
            "episodes": self.episodes,
            "transitions": self.transitions,
            "mean_return": round(self.mean_return, 3),
        }


def prepare_dataset(
    cfg: RunConfig, flow: DataFlow, spaces: Any, plan: MultiAgentPlan | None
) -> DatasetRun | None:
    """``general_cfg.dataset`` read once and checked (before anything starts: every fault
    in it is one line); the shards read it again, each its part."""
    general = cfg.general
    if general.dataset is None:
        return None
    if plan is not None:
        raise ConfigError(
            f"general_cfg.dataset={general.dataset}: a multi-agent env learns online; "
            "allowed with multi_agent: null"
        )
    needs = dataset_needs(flow, general.algo_name)
    found = load_dataset(general.dataset, general.tasks_dir, spaces, needs)
    shards = general.n_replay_shards
    transitions = check_size(found, needs, shards)
    return DatasetRun(
        found.source, found.where, len(found.episodes), transitions, found.mean_return(), shards
    )
