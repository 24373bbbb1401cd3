"""Separate Ray clusters for the cluster tests: ``ray start ... --block`` nodes, each in a
process group (session) of its own, with its own temp dir, working directory and log, and
every process it started recorded, so that stopping it can check that nothing is left.

Token authentication is on where the installed Ray has it (2.52 and later), with every
shell set up as Ray's docs say: RAY_AUTH_MODE=token, the token in RAY_AUTH_TOKEN_PATH.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from joyrl_ray.backends.ray_cluster import LOCAL_START_TIMED_OUT
from joyrl_ray.backends.ray_version import has_token_auth, installed_ray
from tests.support.procs import Proc, descendants, free_port, kill_procs, main_env, wait_gone

START_TIMEOUT_S = 180
TOKEN_AUTH = has_token_auth(installed_ray() or "")  # the installed Ray has token auth
# The roles of a joyrl-ray run, as their Ray worker processes name themselves.
JOB_ACTORS = ("ray::Worker", "ray::Learner", "ray::DataServer", "ray::Coordinator")


def cluster_root(prefix: str) -> Path:
    """A new folder for a cluster's files under /tmp: short, for Ray's socket paths."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def new_token(root: Path) -> Path:
    """A fresh random Ray auth token, in the file ``root/token``."""
    token = root / "token"
    token.write_text(secrets.token_hex(32))
    return token


def token_env(token: Path, **extra: str) -> dict[str, str]:
    """A shell set up as Ray's docs say: token mode on, the token in a file (where the
    installed Ray has token authentication; RAY_AUTH_MODE unset where it has not)."""
    env = main_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
    env.pop("RAY_AUTH_TOKEN", None)
    if not TOKEN_AUTH:
        env.pop("RAY_AUTH_MODE")
    env.update(extra)
    return env


class RayNode:
    """One ``ray start ARGS --block`` in its own session, started from its own directory
    ``root/NAME_cwd``, with its temp dir ``root/NAME_ray`` and its output in ``root/NAME.log``."""

    def __init__(self, name: str, root: Path, args: list[str], env: dict[str, str]) -> None:
        self.name = name
        self.cwd = root / f"{name}_cwd"
        self.temp_dir = root / f"{name}_ray"
        self.cwd.mkdir()
        self.log_path = root / f"{name}.log"
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ray.scripts.scripts",
                "start",
                *args,
                f"--temp-dir={self.temp_dir}",
                f"--dashboard-agent-listen-port={free_port()}",
                "--block",
            ],
            cwd=self.cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.seen: dict[Proc, str] = {}

    def log_text(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def exit_note(self) -> str:
        """Empty while the node runs; once it has exited, why: the end of its ``ray start``
        output (``--block`` names the Ray process whose exit took the node down) and of its
        processes' error logs."""
        code = self.proc.poll()
        if code is None:
            return ""
        parts = [f"[{self.name} node exited ({code}); its output ends:]", self.log_text()[-1200:]]
        for err in sorted(self.temp_dir.glob("session_2*/logs/*.err")):
            tail = err.read_text(errors="replace").strip().splitlines()[-5:]
            if tail:
                parts += [f"[{err.name}:]", *tail]
        return "\n".join(parts)[:2500]

    def track(self) -> None:
        """Record every process below ``ray start`` now (raylet, agents, workers)."""
        if self.proc.poll() is None:
            self.seen.update(descendants(self.proc.pid))

    def wait_started(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self.track()
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited early:\n{self.log_text()[-3000:]}")
            if "will now block" in self.log_text():
                return
            time.sleep(0.5)
        raise AssertionError(f"{self.name} not up in {START_TIMEOUT_S} s:\n{self.log_text()}")

    @classmethod
    def started(
        cls, name: str, root: Path, args: list[str], env: dict[str, str], tries: int = 3
    ) -> RayNode:
        """A node up and blocking, started again (under a new name) when Ray's start timed
        out: on a loaded 2-core machine a raylet or the GCS may miss Ray's fixed 30 s
        start-up deadline once."""
        for attempt in range(1, tries + 1):
            node = cls(name if attempt == 1 else f"{name}_{attempt}", root, args, env)
            try:
                node.wait_started()
                return node
            except AssertionError as exc:
                node.kill()
                node.log.close()
                if LOCAL_START_TIMED_OUT not in str(exc) or attempt == tries:
                    raise
        raise AssertionError("unreachable")

    def freeze(self) -> None:
        """SIGSTOP every process of the node (``ray start``, its raylet, agents, workers), as
        when its machine is cut off without dying: alive, and silent on every connection."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT what :meth:`freeze` stopped."""
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, signum: int) -> None:
        self.track()
        for pid, _ in [(self.proc.pid, 0), *descendants(self.proc.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def stop(self, timeout: float = 60, *, sweep: bool = True) -> dict[Proc, str]:
        """Stop the node as ``ray stop`` does (SIGTERM): its raylet leaves the cluster, which
        marks the node dead at once; after ``timeout`` the node is killed (:meth:`kill`)."""
        self.track()
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        return self.kill(sweep=sweep)

    def kill(self, *, sweep: bool = True) -> dict[Proc, str]:
        """SIGKILL the node's process group, as when its machine is lost, and with ``sweep``
        every process it started (Ray's workers run in sessions of their own, outside the
        group). Returns what is still alive 10 s later (nothing, normally), and kills that.

        Without ``sweep`` what is returned is what outlived the group by 10 s by itself."""
        self.track()
        if sweep:
            self.thaw()  # a frozen node's processes die at SIGKILL too, but exit cleaner
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if sweep:
            kill_procs(self.seen)
        if self.proc.poll() is None:
            self.proc.wait(10)
        left = wait_gone(self.seen, timeout=10)
        kill_procs(left)
        return left
