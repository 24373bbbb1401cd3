"""A ray_address where no cluster answers fails fast, with one line, before anything starts."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from joyrl_ray.backends import cluster_address
from joyrl_ray.backends.ray_cluster import ClusterError
from tests.support.procs import free_port, main_env, task_dirs

pytestmark = pytest.mark.ray_compat  # also run on the oldest supported Ray (.ci/run)


def test_unreachable_address_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys

    from tests.support.procs import ROOT

    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "main.py"),
            f"general_cfg.ray_address=127.0.0.1:{port}",
            f"general_cfg.tasks_dir={tmp_path}",
            "general_cfg.progress=false",
        ],
        cwd=ROOT,
        env=main_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: general_cfg.ray_address=")
    assert f"127.0.0.1:{port}" in lines[0] and "ray start --head" in lines[0]
    assert proc.stdout == ""
    assert took < 30, f"took {took:.1f} s"
    assert task_dirs(tmp_path) == []  # nothing started, nothing written


@pytest.mark.parametrize(
    "address", ["foo", "http://127.0.0.1:6379", "127.0.0.1:", ":6379", "ray://host", "a:b"]
)
def test_malformed_address_names_what_is_allowed(address):
    with pytest.raises(
        ClusterError, match="allowed: null .*local, auto, host:port .*ray://host:port"
    ):
        cluster_address.check_address(address)


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_closed_port_fails_within_seconds(scheme):
    port = free_port()
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=f"no Ray .* answers at 127.0.0.1:{port}"):
        cluster_address.check_address(f"{scheme}127.0.0.1:{port}")
    assert time.monotonic() - t0 < 12


@pytest.fixture
def not_ray_server():
    """A TCP server that accepts connections and answers garbage (e.g. some other service)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    server.close()


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_port_that_is_not_ray_fails_within_seconds(not_ray_server, scheme):
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=f"127.0.0.1:{not_ray_server}"):
        cluster_address.check_address(f"{scheme}127.0.0.1:{not_ray_server}")
    assert time.monotonic() - t0 < 12
