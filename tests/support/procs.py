"""Helpers for the runtime tests: process trees from /proc, free ports, tracked main.py runs.

Ray's worker processes start in sessions of their own, so "the processes of one run" are
found by ancestry while the run is alive (every process below main.py), and checked for
after it exits by pid and start time (a pid may be reused).
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
Proc = tuple[int, int]  # (pid, start time in clock ticks)


def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, start time, state) of a live process, None if gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    state, ppid, start = fields[0], int(fields[1]), int(fields[19])
    if state in ("Z", "X"):
        return None
    return ppid, start, state


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root: int) -> dict[Proc, str]:
    """Every live process below ``root`` (not root itself): {(pid, start): cmdline}."""
    children: dict[int, list[tuple[int, int]]] = {}
    for pid in all_pids():
        st = _stat(pid)
        if st is not None:
            children.setdefault(st[0], []).append((pid, st[1]))
    found: dict[Proc, str] = {}
    stack = [root]
    while stack:
        for pid, start in children.get(stack.pop(), []):
            found[(pid, start)] = cmdline(pid)
            stack.append(pid)
    return found


def alive(proc: Proc) -> bool:
    st = _stat(proc[0])
    return st is not None and st[1] == proc[1]


def ray_procs() -> dict[Proc, str]:
    """Live processes that are Ray's: ``ray::`` workers, raylet, gcs_server."""
    found = {}
    for pid in all_pids():
        line = cmdline(pid)
        if line.startswith("ray::") or "/raylet/raylet" in line or "/gcs/gcs_server" in line:
            st = _stat(pid)
            if st is not None:
                found[(pid, st[1])] = line
    return found


#: Set in a tracked run's environment, which every process it starts inherits (Ray's
#: daemons from main.py, Ray's workers from the raylet): how its processes are found even
#: after they left its tree, whatever else runs on the machine.
RUN_TAG = "JOYRL_TEST_RUN"


def tagged_procs(tag: str) -> dict[Proc, str]:
    """Live processes whose environment holds ``RUN_TAG=tag``."""
    marker = f"{RUN_TAG}={tag}".encode()
    found = {}
    for pid in all_pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        st = _stat(pid)
        if st is not None and marker in environ.split(b"\0"):
            found[(pid, st[1])] = cmdline(pid)
    return found


def wait_gone(procs: dict[Proc, str], timeout: float) -> dict[Proc, str]:
    """The processes of ``procs`` still alive after up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = {p: c for p, c in procs.items() if alive(p)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def kill_procs(procs: dict[Proc, str]) -> None:
    """SIGKILL every process of ``procs`` that is still alive (the same pid and start)."""
    for proc in procs:
        if alive(proc):
            try:
                os.kill(proc[0], signal.SIGKILL)
            except ProcessLookupError:
                pass


#: Ports for the test clusters' Ray nodes (GCS, dashboard, client server) come from below
#: the kernel's ephemeral range and above Ray's worker ports (10002-19999): a port the kernel
#: hands out (port 0) may meanwhile become another Ray's random port or a connection's source
#: port, and a second node once joined another test's session Ray through such a port.
FIXED_PORTS_FROM = 20000
_PORTS_GIVEN: set[int] = set()
_PORT_DRAW = random.Random()  # seeded from the OS: each xdist worker draws its own


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port free now, outside the ranges other processes take ports from at random."""
    candidates = range(FIXED_PORTS_FROM, _ephemeral_low())
    for _ in range(200 if len(candidates) > 1000 else 0):
        port = _PORT_DRAW.choice(candidates)
        if port not in _PORTS_GIVEN and _bindable(port):
            _PORTS_GIVEN.add(port)
            return port
    with socket.socket() as s:  # no such range here: any port the kernel gives
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    env.update(extra)
    return env


@dataclass
class TrackedRun:
    """``python main.py ARGS`` in its own session, with every process it started recorded."""

    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=main_env)
    log_dir: Path | None = None

    def __post_init__(self) -> None:
        log_dir = self.log_dir or Path(os.environ.get("TMPDIR", "/tmp"))
        self.out_path = Path(log_dir) / f"main_{os.getpid()}_{time.monotonic_ns()}.out"
        self.err_path = self.out_path.with_suffix(".err")
        self.tag = f"{os.getpid()}-{time.monotonic_ns()}"
        self.env = {**self.env, RUN_TAG: self.tag}
        self._out = self.out_path.open("w")
        self._err = self.err_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "main.py"), *self.args],
            cwd=ROOT,
            env=self.env,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,
        )
        self.seen: dict[Proc, str] = {}

    def poll_tree(self) -> None:
        """Record the processes below main.py now (call while it runs).

        A process already recorded keeps its name: one that is exiting (a zombie until Ray
        reaps it, while main.py goes on with its summary) reads as an empty command line.
        """
        if self.proc.poll() is None:
            for proc, cmd in descendants(self.proc.pid).items():
                if cmd or proc not in self.seen:
                    self.seen[proc] = cmd

    def leftovers(self) -> dict[Proc, str]:
        """This run's processes still alive (main.py itself included while it runs)."""
        return tagged_procs(self.tag)

    def wait(self, timeout: float, poll_s: float = 0.5) -> int | None:
        """Wait for exit while recording the process tree; the exit code or None on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.poll_tree()
            code = self.proc.poll()
            if code is not None:
                return code
            time.sleep(poll_s)
        return None

    def sigint(self) -> float:
        """Ctrl-C as a terminal sends it: SIGINT to main.py's whole process group."""
        self.poll_tree()
        os.killpg(self.proc.pid, signal.SIGINT)
        return time.monotonic()

    @property
    def stdout(self) -> str:
        if not self._out.closed:
            self._out.flush()
        return self.out_path.read_text()

    @property
    def stderr(self) -> str:
        if not self._err.closed:
            self._err.flush()
        return self.err_path.read_text()

    def kill(self) -> None:
        """Last resort for a test that failed: kill main.py's group and what it started."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        kill_procs(self.seen)
        self._out.close()
        self._err.close()


def task_dirs(tasks_dir: Path) -> list[Path]:
    return sorted(p for p in Path(tasks_dir).glob("*") if p.is_dir())


def kill_mid_write(code: str, folder: Path, pattern: str, timeout: float = 60) -> Path:
    """Run ``code`` in a new interpreter and SIGKILL it while it writes a file matching
    ``pattern`` under ``folder`` (once that file has a first megabyte); returns that file's
    path. Fails when the process ends before it could be killed mid-write."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for path in folder.glob(pattern):
                try:
                    size = path.stat().st_size
                except FileNotFoundError:
                    continue
                if size >= 1 << 20:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(10)
                    return path
            assert proc.poll() is None, f"the writer exited ({proc.returncode}) before the kill"
            time.sleep(0.001)
        raise AssertionError(f"no {pattern} being written within {timeout:g} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
