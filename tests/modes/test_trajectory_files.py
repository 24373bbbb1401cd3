"""Trajectory files (<= max_per_file each, loaded back in order) and bounded gif capture."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from joyrl_ray.run import trajectories
from joyrl_ray.run.trajectories import TrajectoryWriter
from joyrl_ray.run.video import MAX_FRAMES, MAX_SIDE, FrameSampler, write_gif
from tests.support.procs import kill_mid_write


def fake_traj(i: int, length: int = 4) -> dict[str, np.ndarray]:
    return {
        "obs": np.full((length, 2), i, dtype=np.float32),
        "actions": np.zeros(length, dtype=np.int64),
        "rewards": np.ones(length, dtype=np.float32),
        "terminated": np.eye(1, length, length - 1, dtype=bool)[0],
        "truncated": np.zeros(length, dtype=bool),
        "next_obs": np.full((length, 2), i + 0.5, dtype=np.float32),
    }


def test_writer_splits_files_and_load_reads_them_back_in_order(tmp_path: Path) -> None:
    results = tmp_path / "task" / "results"
    results.mkdir(parents=True)
    writer = TrajectoryWriter(results, max_per_file=3)
    writer.extend([fake_traj(i) for i in range(2)])
    writer.extend([])
    writer.extend([fake_traj(i) for i in range(2, 8)])
    writer.close()
    assert writer.total == 8
    files = trajectories.trajectory_files(results)
    assert [f.name for f in files] == ["trajs_0.pkl", "trajs_1.pkl", "trajs_2.pkl"]
    assert [len(pickle.loads(f.read_bytes())) for f in files] == [3, 3, 2]
    for where in (tmp_path / "task", results):
        loaded = trajectories.load(where)
        assert [int(t["obs"][0, 0]) for t in loaded] == list(range(8))
    assert len(trajectories.load(files[1])) == 3
    first = trajectories.load(files[0])[0]
    assert set(first) == {"obs", "actions", "rewards", "terminated", "truncated", "next_obs"}
    assert all(isinstance(v, np.ndarray) and len(v) == 4 for v in first.values())
    assert not list(results.glob(".*.tmp"))


def test_a_flush_killed_mid_write_leaves_what_was_flushed_before(tmp_path: Path) -> None:
    """The periodic flush rewrites the open file: a process killed with SIGKILL while it
    writes keeps the file as the previous flush left it."""
    writer_code = (
        "import numpy as np; from pathlib import Path; "
        "from joyrl_ray.run.trajectories import TrajectoryWriter; "
        f"writer = TrajectoryWriter(Path({str(tmp_path)!r}), max_per_file=1000); "
        "small = {'obs': np.zeros((4, 2), np.float32)}; "
        "writer.extend([small]); writer.flush(); "
        "writer.extend([{'obs': np.ones((2**23, 4), np.float32)}]); writer.flush()"
    )
    kill_mid_write(writer_code, tmp_path, "*trajs_0.pkl*")
    loaded = trajectories.load(tmp_path)
    assert len(loaded) == 1 and loaded[0]["obs"].shape == (4, 2)


def test_load_without_files_says_where(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no trajs_"):
        trajectories.load(tmp_path)


class FakeRenderEnv:
    """Renders the current step number into the frame's first pixel."""

    def __init__(self) -> None:
        self.calls = 0
        self.t = 0

    def render(self) -> np.ndarray:
        self.calls += 1
        frame = np.zeros((400, 600, 3), dtype=np.uint8)
        frame[0, 0, :2] = (self.t % 256, self.t // 256)
        return frame


def test_frame_sampler_bounds_frames_and_size_however_long_the_episode() -> None:
    env, sampler = FakeRenderEnv(), FrameSampler()
    for t in range(10_000):
        env.t = t
        sampler(env)
    assert MAX_FRAMES // 2 <= len(sampler.frames) < MAX_FRAMES
    assert env.calls < 10_000 // 2  # frames that would be dropped are never rendered
    assert max(sampler.frames[0].shape[:2]) <= MAX_SIDE
    # Evenly spaced: every kept frame is `every` steps after the previous one.
    steps = [int(f[0, 0, 0]) + 256 * int(f[0, 0, 1]) for f in sampler.frames]
    assert steps[0] == 0 and set(np.diff(steps)) == {sampler.every}


def test_gif_reads_back_with_all_frames(tmp_path: Path) -> None:
    import imageio.v3 as iio

    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (40, 60, 3), dtype=np.uint8) for _ in range(12)]
    path = write_gif(frames, tmp_path / "videos" / "video.gif", frame_ms=40)
    back = iio.imread(path, index=None)
    assert back.shape[0] == 12 and back.shape[1:3] == (40, 60)
