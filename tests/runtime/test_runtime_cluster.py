"""Attaching to a real cluster started with ``ray start --head``, as a Ray user does it:
by ``general_cfg.ray_address``, and by ``RAY_ADDRESS`` with ray_address left at its default.

The cluster runs in its own process group with its own temp dir and ports, so it never
meets the test session's Ray. Where the installed Ray has token authentication (2.52 and
later) it is on, and the driver's shell is set up as Ray's docs say (RAY_AUTH_MODE=token,
the token in RAY_AUTH_TOKEN_PATH). Runs that attach leave the cluster up; the last test
stops it and checks that nothing of it is left. The tests marked ``ray_compat`` also run on
the oldest supported Ray (.ci/run); the Ray Client attach runs only there on each commit,
on both Rays in the release tier.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from joyrl_ray.backends.ray_version import installed_ray
from tests.support.cli_runs import TINY_DQN
from tests.support.clusters import (
    JOB_ACTORS,
    TOKEN_AUTH,
    RayNode,
    cluster_root,
    new_token,
    token_env,
)
from tests.support.procs import (
    ROOT,
    TrackedRun,
    alive,
    descendants,
    free_port,
    task_dirs,
    wait_gone,
)
from tests.support.runs import run_python

pytestmark = pytest.mark.cluster


class Cluster:
    """A one-node cluster: ``ray start --head`` with 2 CPUs and no dashboard."""

    def __init__(self) -> None:
        self.dir = cluster_root("jrc")
        self.token = new_token(self.dir)
        self.port, self.client_port = free_port(), free_port()
        self.head = RayNode.started(  # again when Ray's start timed out (a loaded machine)
            "head",
            self.dir,
            [
                "--head",
                f"--port={self.port}",
                f"--ray-client-server-port={self.client_port}",
                f"--dashboard-port={free_port()}",
                "--num-cpus=2",
                "--include-dashboard=false",
            ],
            self.cli_env(),
        )
        self.proc = self.head.proc
        self.seen = self.head.seen

    def cli_env(self, **extra: str) -> dict[str, str]:
        """A shell set up as Ray's docs say (:func:`~tests.support.clusters.token_env`)."""
        return token_env(self.token, **extra)

    def driver_env(self, **extra: str) -> dict[str, str]:
        """A user's shell on a machine that may attach: the same as the head's."""
        return self.cli_env(**extra)

    def stop(self) -> dict:
        """SIGTERM the group (SIGKILL after 5 s); what of it is left 10 s later, without
        killing Ray's workers one by one."""
        return self.head.stop(5, sweep=False)


@pytest.fixture(scope="module")
def cluster():
    head = Cluster()
    try:
        yield head
    finally:
        head.stop()
        head.head.log.close()
        shutil.rmtree(head.dir, ignore_errors=True)


# One short training run, as main.py's arguments after the address: each test shows where
# a run goes and that it ends, not learning (a tiny network, a few hundred env steps).
RUN_STEPS = 300
RUN_ARGS = (
    "general_cfg.n_workers=1",
    f"general_cfg.max_env_steps={RUN_STEPS}",
    "general_cfg.online_eval=false",
    "general_cfg.save_fig=false",
    "general_cfg.progress=false",
    *TINY_DQN,
)


def _main(cluster: Cluster, address: str, tasks: Path, timeout: float = 400, **env: str):
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            f"general_cfg.ray_address={address}",
            *RUN_ARGS,
            f"general_cfg.tasks_dir={tasks}",
        ],
        cwd=ROOT,
        env=cluster.driver_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _job_actors(cluster: Cluster) -> dict:
    return {p: c for p, c in descendants(cluster.proc.pid).items() if c.startswith(JOB_ACTORS)}


def _assert_finished(proc, tasks: Path) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    (task,) = task_dirs(tasks)
    assert lines[-1] == str(task)
    assert "train DQN on CartPole-v1" in lines[-2] and "(max_env_steps)" in lines[-2]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= RUN_STEPS
    assert (task / "models" / "last.pt").is_file()
    return summary


def _raylets(procs: dict) -> list[str]:
    return [c for c in procs.values() if "/raylet/raylet" in c]


def _assert_cluster_up(cluster: Cluster) -> None:
    """The cluster still runs (``ray status`` answers) with its one raylet."""
    assert len(_raylets(descendants(cluster.proc.pid))) == 1
    env = cluster.cli_env()
    status = subprocess.run(
        [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "status",
            f"--address=127.0.0.1:{cluster.port}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    assert "CPU" in status.stdout and "Active:" in status.stdout, status.stdout


def _cluster_line(task: Path) -> str:
    log = (task / "logs" / "log.txt").read_text()
    (line,) = [x for x in log.splitlines() if " cluster: " in x]
    return line


@pytest.mark.ray_compat
def test_attach_by_host_port_runs_and_leaves_the_cluster_up(cluster, tmp_path):
    address = f"127.0.0.1:{cluster.port}"
    proc = _main(cluster, address, tmp_path)
    _assert_finished(proc, tmp_path)
    _assert_cluster_up(cluster)
    left = wait_gone(_job_actors(cluster), timeout=20)  # the job's actors end with it
    assert not left, left
    (task,) = task_dirs(tmp_path)
    assert f"1 node, 2 CPUs, 0 GPUs, joined {address};" in _cluster_line(task)


def _tracked_main(cluster: Cluster, tasks: Path, *args: str, **env: str) -> TrackedRun:
    """main.py as a user runs it with RAY_ADDRESS exported: no ray_address given."""
    return TrackedRun(
        (
            *args,
            *RUN_ARGS,
            f"general_cfg.tasks_dir={tasks}",
        ),
        env=cluster.driver_env(**env),
        log_dir=tasks.parent,
    )


def test_ray_address_set_and_ray_address_default_attaches_with_no_second_raylet(cluster, tmp_path):
    address = f"127.0.0.1:{cluster.port}"
    tasks = tmp_path / "tasks"
    run = _tracked_main(cluster, tasks, RAY_ADDRESS=address)
    try:
        code = run.wait(timeout=400)
        assert code == 0, run.stderr[-3000:]
    finally:
        run.kill()
    assert _raylets(run.seen) == []  # main.py started no Ray of its own
    _assert_cluster_up(cluster)  # and the cluster still has its one raylet
    (task,) = task_dirs(tasks)
    line = _cluster_line(task)
    assert f"1 node, 2 CPUs, 0 GPUs, joined {address} (from RAY_ADDRESS);" in line, line
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_env_steps"


@pytest.mark.release
def test_ray_address_local_starts_its_own_ray_despite_ray_address(cluster, tmp_path):
    tasks = tmp_path / "tasks"
    run = _tracked_main(
        cluster,
        tasks,
        "general_cfg.ray_address=local",
        "general_cfg.ray_num_cpus=1",
        RAY_ADDRESS=f"127.0.0.1:{cluster.port}",
    )
    try:
        code = run.wait(timeout=400)
        assert code == 0, run.stderr[-3000:]
    finally:
        run.kill()
    assert len(_raylets(run.seen)) == 1  # its own local Ray, stopped when it ended
    assert wait_gone(run.seen, timeout=20) == {}
    _assert_cluster_up(cluster)
    (task,) = task_dirs(tasks)
    line = _cluster_line(task)
    assert "1 node, 1 CPUs, 0 GPUs;" in line and "joined" not in line, line


@pytest.mark.ray_compat
@pytest.mark.oldest_leg_per_commit
def test_attach_by_ray_client_runs(cluster, tmp_path):
    proc = _main(cluster, f"ray://127.0.0.1:{cluster.client_port}", tmp_path)
    _assert_finished(proc, tmp_path)
    _assert_cluster_up(cluster)


CHECK = "from joyrl_ray.backends.cluster_address import check_address as c; c({!r})"


def test_auto_finds_the_cluster_from_ray_address(cluster):
    env = cluster.driver_env(RAY_ADDRESS=f"127.0.0.1:{cluster.port}")
    proc = run_python(CHECK.format("auto"), timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr


def _main_refused(cluster: Cluster, tmp_path: Path, env: dict[str, str]) -> tuple[list[str], float]:
    """main.py attaching with ``env``: exits 2 before anything starts; its stderr lines (the
    last one after Ray's own retry warnings, if any) and how long it took."""
    tasks = tmp_path / "tasks"
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            f"general_cfg.ray_address=127.0.0.1:{cluster.port}",
            f"general_cfg.tasks_dir={tasks}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not tasks.exists() or task_dirs(tasks) == []  # nothing was started
    return proc.stderr.strip().splitlines(), took


@pytest.mark.ray_compat
def test_token_mode_without_a_usable_token_is_one_line_before_anything_starts(cluster, tmp_path):
    """RAY_AUTH_MODE=token with no token on this machine (Ray 2.52+), or on a Ray that has
    no token authentication at all (before 2.52): one line, in seconds, no Ray call made."""
    home = tmp_path / "home"  # a machine without ~/.ray/auth_token
    home.mkdir()
    env = cluster.driver_env(HOME=str(home), RAY_AUTH_MODE="token")
    env.pop("RAY_AUTH_TOKEN_PATH")
    lines, took = _main_refused(cluster, tmp_path, env)
    assert len(lines) == 1 and lines[0].startswith("error: general_cfg.ray_address="), lines
    if TOKEN_AUTH:
        assert "RAY_AUTH_MODE=token but no Ray auth token was found" in lines[0]
        assert "RAY_AUTH_TOKEN" in lines[0] and "ray get-auth-token" in lines[0]
    else:
        assert f"ray {installed_ray()} has no token authentication" in lines[0], lines[0]
        assert "Ray 2.52 and later" in lines[0]
    assert took < 30


def test_a_wrong_token_is_refused_with_what_to_set(cluster, tmp_path):
    # Not a ray_compat check: it runs on the newest Ray, which has token authentication.
    assert TOKEN_AUTH, f"ray {installed_ray()} has no token authentication (2.52 and later)"
    env = cluster.driver_env(RAY_AUTH_TOKEN="not-the-token")
    lines, took = _main_refused(cluster, tmp_path, env)
    line = lines[-1]
    assert line.startswith("error: general_cfg.ray_address=") and "cannot attach" in line
    assert "refused this machine's Ray auth token" in line and "ray get-auth-token" in line
    assert took < 60


def test_token_mode_unset_on_a_token_cluster_says_to_set_it(cluster, tmp_path):
    assert TOKEN_AUTH, f"ray {installed_ray()} has no token authentication (2.52 and later)"
    env = cluster.driver_env()
    env.pop("RAY_AUTH_MODE")
    lines, took = _main_refused(cluster, tmp_path, env)
    line = lines[-1]
    assert "cannot attach" in line and "export RAY_AUTH_MODE=token" in line, line
    assert took < 60


@pytest.mark.ray_compat
def test_stopping_the_cluster_leaves_no_process(cluster):
    assert alive((cluster.proc.pid, _start_time(cluster.proc.pid)))
    cluster.seen.update(descendants(cluster.proc.pid))
    assert any("gcs_server" in c for c in cluster.seen.values())
    assert any("raylet" in c for c in cluster.seen.values())
    left = cluster.stop()
    assert cluster.proc.poll() is not None
    assert not left, f"left after stopping the cluster: {left}"


def _start_time(pid: int) -> int:
    text = Path(f"/proc/{pid}/stat").read_text()
    return int(text[text.rindex(")") + 2 :].split()[19])
