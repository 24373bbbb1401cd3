"""models/: atomic numbered / last / best checkpoints, pruning, and picking an intact one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from joyrl_ray.run.checkpoint import (
    CheckpointError,
    CheckpointStore,
    atomic_torch_save,
    find_checkpoint,
    load_checkpoint,
    resolve_task_dir,
)
from tests.support.procs import kill_mid_write


def state(updates: int) -> dict:
    return {
        "algo_name": "DQN",
        "policy": {"w": torch.full((3,), float(updates)), "updates": updates},
        "counters": {"env_steps": 10 * updates, "episodes": updates, "updates": updates},
        "rng": {"torch": torch.get_rng_state(), "numpy": {"state": {"state": 2**100 + updates}}},
    }


def store_with(tmp_path: Path, updates: list[int], keep: int = 5, best: int | None = None):
    store = CheckpointStore(tmp_path / "task" / "models", keep=keep)
    for u in updates:
        store.save(state(u), u, best=u == best)
    return store


def test_store_keeps_the_last_k_numbered_plus_last_and_best(tmp_path: Path) -> None:
    store = store_with(tmp_path, [100, 200, 300, 400, 500], keep=2, best=200)
    names = sorted(p.name for p in store.dir.iterdir())
    assert names == ["400.pt", "500.pt", "best.pt", "last.pt"]
    assert load_checkpoint(store.dir / "best.pt")["counters"]["updates"] == 200
    last = load_checkpoint(store.dir / "last.pt")
    assert last["counters"]["updates"] == 500
    assert last["rng"]["numpy"]["state"]["state"] == 2**100 + 500  # big ints survive weights_only


def test_atomic_save_leaves_the_old_file_when_the_write_fails(tmp_path: Path) -> None:
    path = tmp_path / "last.pt"
    atomic_torch_save(state(1), path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_torch_save({"policy": Unpicklable()}, path)
    assert load_checkpoint(path)["counters"]["updates"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]  # no temp file left


def test_best_falls_back_to_last_and_numbers_are_exact(tmp_path: Path) -> None:
    store = store_with(tmp_path, [100, 200])
    task = store.dir.parent
    found = find_checkpoint(task, "best")
    assert found.path.name == "last.pt" and "no best.pt" in found.notes[0]
    assert find_checkpoint(task, "100").state["counters"]["updates"] == 100
    with pytest.raises(
        CheckpointError, match=r"999\.pt does not exist \(available: last, 100, 200\)"
    ):
        find_checkpoint(task, "999")


def test_a_save_killed_mid_write_leaves_the_previous_checkpoint_intact(tmp_path: Path) -> None:
    """A process writing a big last.pt is killed with SIGKILL while the bytes go out."""
    store = store_with(tmp_path, [100])
    models = store.dir
    before = (models / "last.pt").read_bytes()
    save_big = (
        "import torch; from pathlib import Path; "
        "from joyrl_ray.run.checkpoint import atomic_torch_save; "
        "atomic_torch_save({'algo_name': 'DQN', 'policy': {'w': torch.ones(2**25)}, "
        "'counters': {'env_steps': 0, 'episodes': 0, 'updates': 200}}, "
        f"Path({str(models / 'last.pt')!r}))"
    )
    partial = kill_mid_write(save_big, models, "*last.pt*")
    assert partial.exists()  # killed mid-write: its temp file, hidden, is all there is of it
    assert (models / "last.pt").read_bytes() == before
    assert sorted(p.name for p in models.glob("*.pt")) == ["100.pt", "last.pt"]
    found = find_checkpoint(models.parent, "last")
    assert found.path.name == "last.pt" and found.state["counters"]["updates"] == 100


def test_loading_passes_over_torn_and_stray_files_to_the_newest_intact_one(tmp_path: Path) -> None:
    """A stray temp file, a truncated file: loading picks the intact one."""
    store = store_with(tmp_path, [100, 200, 300])
    models = store.dir
    # Killed while writing 400.pt: its temp file is all that exists of it.
    (models / ".400.pt.abc123.tmp").write_bytes(b"\x80\x02partial")
    task = models.parent
    assert find_checkpoint(task, "last").state["counters"]["updates"] == 300

    # A torn last.pt (e.g. a copy made by hand, or a filesystem without atomic rename).
    data = (models / "last.pt").read_bytes()
    (models / "last.pt").write_bytes(data[: len(data) // 3])
    found = find_checkpoint(task, "last")
    assert found.path.name == "300.pt" and found.state["counters"]["updates"] == 300
    assert any("last.pt" in note for note in found.notes)

    # Killed between writing 400.pt and last.pt: the numbered one is newer, and is used.
    atomic_torch_save(state(400), models / "400.pt")
    atomic_torch_save(state(300), models / "last.pt")
    assert find_checkpoint(task, "last").path.name == "400.pt"

    # A torn newest numbered checkpoint falls back to last.pt.
    (models / "400.pt").write_bytes(b"not a checkpoint")
    assert find_checkpoint(task, "last").path.name == "last.pt"


def test_no_readable_checkpoint_is_one_clear_error(tmp_path: Path) -> None:
    models = tmp_path / "task" / "models"
    models.mkdir(parents=True)
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        find_checkpoint(models.parent, "best")
    (models / "last.pt").write_bytes(os.urandom(64))
    with pytest.raises(CheckpointError, match="no readable checkpoint") as info:
        find_checkpoint(models.parent, "last")
    assert "\n" not in str(info.value)


def test_load_path_resolution(tmp_path: Path) -> None:
    (tmp_path / "Train_X" / "models").mkdir(parents=True)
    (tmp_path / "NotATask").mkdir()
    assert resolve_task_dir("Train_X", tmp_path) == tmp_path / "Train_X"
    assert resolve_task_dir(str(tmp_path / "Train_X"), "elsewhere") == tmp_path / "Train_X"
    with pytest.raises(CheckpointError, match="has no models/"):
        resolve_task_dir("NotATask", tmp_path)
    with pytest.raises(CheckpointError, match="no such task directory"):
        resolve_task_dir("Nope", tmp_path)
