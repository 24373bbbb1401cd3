"""Attaching to a real cluster started with ``ray start --head`` (token authentication on).

The cluster runs in its own process group with its own temp dir and ports, so it never
meets the test session's Ray. The driver finds the token the way a user's machine would
(RAY_AUTH_TOKEN_PATH here) and joyrl-ray turns on RAY_AUTH_MODE=token by itself. Runs that
attach leave the cluster up; the last test stops it and checks that nothing of it is left.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.support.procs import ROOT, alive, descendants, free_port, main_env, task_dirs, wait_gone

pytestmark = pytest.mark.cluster
START_TIMEOUT_S = 180


class Cluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="jrc", dir="/tmp"))  # short: socket paths
        self.token = self.dir / "token"
        self.token.write_text(secrets.token_hex(32))
        self.port, self.client_port = free_port(), free_port()
        self.log = (self.dir / "head.log").open("w")
        env = main_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(self.token))
        env.pop("RAY_AUTH_TOKEN", None)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ray.scripts.scripts",
                "start",
                "--head",
                f"--port={self.port}",
                f"--ray-client-server-port={self.client_port}",
                f"--dashboard-agent-listen-port={free_port()}",
                f"--dashboard-port={free_port()}",
                "--num-cpus=2",
                "--include-dashboard=false",
                f"--temp-dir={self.dir / 'ray'}",
                "--block",
            ],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.seen: dict = {}

    def log_text(self) -> str:
        self.log.flush()
        return (self.dir / "head.log").read_text()

    def wait_started(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self.seen.update(descendants(self.proc.pid))
            if self.proc.poll() is not None:
                raise AssertionError(f"ray start exited early:\n{self.log_text()[-3000:]}")
            if "will now block" in self.log_text():
                return
            time.sleep(0.5)
        raise AssertionError(f"ray start not up in {START_TIMEOUT_S} s:\n{self.log_text()[-3000:]}")

    def driver_env(self, **extra: str) -> dict[str, str]:
        """A user's shell on a machine holding the token file; RAY_AUTH_MODE left unset."""
        env = main_env(RAY_AUTH_TOKEN_PATH=str(self.token))
        env.pop("RAY_AUTH_MODE", None)
        env.pop("RAY_AUTH_TOKEN", None)
        env.update(extra)
        return env

    def stop(self) -> dict:
        """SIGTERM the group (SIGKILL after 5 s), then whatever it started; what is left."""
        if self.proc.poll() is None:
            self.seen.update(descendants(self.proc.pid))
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        try:  # workers run in sessions of their own: not in the group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        left = wait_gone(self.seen, timeout=10)
        for proc in left:
            os.kill(proc[0], signal.SIGKILL)
        return left


@pytest.fixture(scope="module")
def cluster():
    head = Cluster()
    try:
        head.wait_started()
        yield head
    finally:
        head.stop()
        head.log.close()
        shutil.rmtree(head.dir, ignore_errors=True)


def _main(cluster: Cluster, address: str, tasks: Path, timeout: float = 400, **env: str):
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            f"general_cfg.ray_address={address}",
            "general_cfg.n_workers=1",
            "general_cfg.max_env_steps=600",
            "general_cfg.online_eval=false",
            "general_cfg.save_fig=false",
            "general_cfg.progress=false",
            f"general_cfg.tasks_dir={tasks}",
            "algo_cfg.learn_start=200",
        ],
        cwd=ROOT,
        env=cluster.driver_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _job_actors(cluster: Cluster) -> dict:
    names = ("ray::Worker", "ray::Learner", "ray::DataServer")
    return {p: c for p, c in descendants(cluster.proc.pid).items() if c.startswith(names)}


def _assert_finished(proc, tasks: Path) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    (task,) = task_dirs(tasks)
    assert lines[-1] == str(task)
    assert "train DQN on CartPole-v1" in lines[-2] and "(max_env_steps)" in lines[-2]
    summary = json.loads((task / "results" / "summary.json").read_text())
    assert summary["stop_reason"] == "max_env_steps" and summary["env_steps"] >= 600
    assert (task / "models" / "last.pt").is_file()
    return summary


def _assert_cluster_up(cluster: Cluster) -> None:
    env = main_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(cluster.token))
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


def test_attach_by_host_port_runs_and_leaves_the_cluster_up(cluster, tmp_path):
    proc = _main(cluster, f"127.0.0.1:{cluster.port}", tmp_path)
    _assert_finished(proc, tmp_path)
    _assert_cluster_up(cluster)
    left = wait_gone(_job_actors(cluster), timeout=20)  # the job's actors end with it
    assert not left, left


def test_attach_by_ray_client_runs(cluster, tmp_path):
    proc = _main(cluster, f"ray://127.0.0.1:{cluster.client_port}", tmp_path)
    _assert_finished(proc, tmp_path)
    _assert_cluster_up(cluster)


CHECK = "from joyrl_ray.ray_cluster import check_address as c; c({!r})"


def _check_in_subprocess(address: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHECK.format(address)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_auto_finds_the_cluster_from_ray_address(cluster):
    env = cluster.driver_env(RAY_ADDRESS=f"127.0.0.1:{cluster.port}")
    proc = _check_in_subprocess("auto", env)
    assert proc.returncode == 0, proc.stderr


def test_missing_or_wrong_token_is_one_clear_error(cluster, tmp_path):
    address = f"127.0.0.1:{cluster.port}"
    home = tmp_path / "home"  # a machine without ~/.ray/auth_token
    home.mkdir()
    env = cluster.driver_env(HOME=str(home))
    env.pop("RAY_AUTH_TOKEN_PATH")
    proc = _check_in_subprocess(address, env)
    assert proc.returncode != 0
    assert "requires a Ray auth token and none was found" in proc.stderr
    assert "RAY_AUTH_TOKEN" in proc.stderr and "ray get-auth-token" in proc.stderr

    tasks = tmp_path / "tasks"
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            f"general_cfg.ray_address={address}",
            f"general_cfg.tasks_dir={tasks}",
        ],
        cwd=ROOT,
        env=cluster.driver_env(RAY_AUTH_TOKEN="not-the-token"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "rejected this machine's Ray auth token" in lines[0], proc.stderr
    assert time.monotonic() - t0 < 30
    assert not tasks.exists() or task_dirs(tasks) == []  # nothing was started


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
