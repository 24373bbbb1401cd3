"""Starting a local Ray or attaching to a running cluster, with clear errors; public Ray
APIs only (``ray.init`` and its errors, documented env vars), so that every Ray release in
:data:`~joyrl_ray.backends.ray_version.SUPPORTED_RAY` works the same.

Which Ray a run uses:

- ``ray_address: null`` (the default) does what ``ray.init()`` does: it attaches to the
  cluster ``RAY_ADDRESS`` names when that is set (a Ray user's ``export
  RAY_ADDRESS=host:port``; inside ``ray job submit`` the job's own cluster), and otherwise
  starts a local Ray that the run owns and shuts down.
- ``ray_address: local`` always starts a local Ray, ``RAY_ADDRESS`` or not.
- ``auto``, ``host:port`` or ``ray://host:port`` attach there (``auto``: ``RAY_ADDRESS``,
  else the cluster of the last ``ray start`` on this machine, as ``ray.init`` documents).

An attached run ships the project as the job's ``runtime_env`` working_dir (a Ray job's
driver already has the job's, and Ray refuses two) and on exit only disconnects, leaving
the cluster and its other jobs running.

Before ``ray.init``, the address is checked with a TCP connect and one call to the
standard gRPC health service (``grpc.health.v1``, which Ray's GCS serves and its Ray
Client server does not), so that a wrong address or the wrong kind of port fails in
seconds with one line instead of Ray's own half minute of retries.

Token authentication (Ray 2.52 and later) follows Ray's documented rule: the driver sends a
token when ``RAY_AUTH_MODE=token`` is set, read from ``RAY_AUTH_TOKEN``, else the file
``RAY_AUTH_TOKEN_PATH`` names, else ``~/.ray/auth_token``. No public API tells whether a
cluster wants one before ``ray.init`` tries, so a refused driver is told, in one line,
what to set.
"""

from __future__ import annotations

# Registers this module's fork hooks now, before ray.init forks Ray's processes: a thread
# that imports it first while the main thread forks (Ray's threads do, on first use of a
# ThreadPoolExecutor) runs the new after-fork hook without its before-fork hook, and the
# process prints "Exception ignored ... RuntimeError: release unlocked lock".
import concurrent.futures.thread  # noqa: F401
import logging
import os
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.backends.cluster_address import (
    check_address,
    check_token_mode,
    in_ray_job,
    one_line,
    refused_hint,
    resolve_target,
)
from joyrl_ray.backends.cluster_errors import ClusterError
from joyrl_ray.wire.handles import first_line

PROJECT_ROOT = Path(__file__).resolve().parents[2]
UPLOAD_EXCLUDES = [
    "tasks/",
    "outputs/",
    ".git/",
    "**/__pycache__/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".benchmarks/",
    "*.pt",
    "*.pkl",
    "*.gif",
    "events.out.tfevents.*",
    ".venv/",
    ".whl/",
    ".gl/",
]
# Ray stops in well under a second here; past this the run ends anyway (see RaySession.close).
TEARDOWN_TIMEOUT_S = 60.0


@dataclass
class _Session:
    """What :func:`connect` joined, for the run's "cluster:" line."""

    joined: str | None = None


_SESSION = _Session()


def joined_cluster() -> str | None:
    """``host:port (from RAY_ADDRESS)`` of the cluster this process attached to, else None."""
    return _SESSION.joined


# ----- token authentication (documented env vars and file) -----


# ----- probing -----


def job_notes(tasks_dir: str) -> list[str]:
    """A warning for a Ray job whose task directory would land in the job's working_dir copy."""
    if not in_ray_job() or Path(tasks_dir).is_absolute():
        return []
    return [
        f"this run is a Ray job: its task directory goes under {Path(tasks_dir).resolve()}, "
        "in the job's working_dir copy on the head node, which Ray may delete once the job "
        "has ended; set general_cfg.tasks_dir to an absolute path to keep it"
    ]


#: A Ray Client attach asks the head's proxy to start a server process for this driver (and
#: the job's runtime_env); on a busy head that start can fail and succeed when asked again
#: (the error says the server's start failed, or that the server failed the client's
#: initialization): asked up to 4 more times, 2, 4, 6 and 8 s apart.
CLIENT_SERVER_FAILED = ("Starting Ray client server failed", "Initialization failure from server")
CLIENT_SERVER_RETRIES, CLIENT_SERVER_RETRY_S = 4, 2.0
#: A local Ray whose raylet misses Ray's start-up deadline (a machine whose cores are all
#: busy) usually starts when asked again.
LOCAL_START_TIMED_OUT = "timed out during startup"
LOCAL_START_RETRIES = 1


def connect(address: str | None, *, num_cpus: int | None = None) -> str:
    """Start or attach to Ray: "owned" (started here), "attached", or "borrowed" (already up)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    if ray.is_initialized():  # e.g. a test session's Ray: use it, leave it running
        return "borrowed"
    _quiet_start()
    common: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    target = resolve_target(address)
    if target.address is None:
        # "local" starts a new Ray even when RAY_ADDRESS is set in the environment.
        for attempt in range(LOCAL_START_RETRIES + 1):
            try:
                ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
                break
            except Exception as exc:  # e.g. "The current node timed out during startup"
                if attempt < LOCAL_START_RETRIES and LOCAL_START_TIMED_OUT in str(exc):
                    ray.shutdown()  # what the timed-out start left, before a fresh one
                    continue
                raise ClusterError(
                    f"general_cfg.ray_address={address!r}: starting a local Ray failed "
                    f"({first_line(exc)}); see /tmp/ray/session_latest/logs, or use "
                    "general_cfg.mp_backend=single"
                ) from None
        return "owned"
    label = target.label
    mode = check_token_mode(label)
    hostport = check_address(target.address, target.source)
    # A job's driver runs in the job's working_dir copy and its runtime_env already ships it.
    runtime_env = None
    if not in_ray_job():
        runtime_env = {"working_dir": str(PROJECT_ROOT), "excludes": UPLOAD_EXCLUDES}
    for attempt in range(CLIENT_SERVER_RETRIES + 1):
        try:
            ray.init(address=hostport, runtime_env=runtime_env, **common)
            break
        except Exception as exc:  # refused, version mismatches, runtime_env failures, ...
            failed_start = any(text in str(exc) for text in CLIENT_SERVER_FAILED)
            if attempt < CLIENT_SERVER_RETRIES and failed_start:
                ray.shutdown()  # the half-made client connection
                time.sleep(CLIENT_SERVER_RETRY_S * (attempt + 1))
                continue
            hint = refused_hint(mode) if isinstance(exc, ConnectionError) else ""
            raise ClusterError(f"{label}: cannot attach ({one_line(exc)}){hint}") from None
    via = "" if target.source == "general_cfg.ray_address" else f" (from {target.source})"
    _SESSION.joined = f"{hostport}{via}"
    return "attached"


def disconnect(how: str) -> None:
    """Stop a Ray this run started; for an attached driver ``ray.shutdown`` only disconnects."""
    import ray

    if how in ("owned", "attached") and ray.is_initialized():
        ray.shutdown()
    _SESSION.joined = None


class _QuietStart(logging.Filter):
    """Drops start-up notes that say nothing to a user: Ray's own SIGTERM handler is not
    needed (the run installs its own), a local Ray's token is its own, and .git is not
    uploaded (we exclude it ourselves)."""

    NOTES = (
        "SIGTERM handler is not set",
        "Token authentication is enabled",
        "is now ignored by default when packaging",  # .git: UPLOAD_EXCLUDES skips it anyway
    )

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(note in record.getMessage() for note in self.NOTES)


def _quiet_start() -> None:
    """Filter those notes on the handlers of Ray's documented ``ray`` logger (where its
    records end up), and Ray 2.50's tip about a future default for visible accelerators,
    which concerns GPU tasks asking for no GPU: joyrl-ray names the learner's GPUs itself."""
    for handler in logging.getLogger("ray").handlers:
        if not any(isinstance(f, _QuietStart) for f in handler.filters):
            handler.addFilter(_QuietStart())
    warnings.filterwarnings(
        "ignore", message="Tip: In future versions of Ray", category=FutureWarning
    )


def start_session(general: Any) -> RaySession | None:
    """Ray for a run of ``general`` (its ``general_cfg``), starting in the background; None
    for the single backend. Checks the installed Ray first (ClusterError if unsupported)."""
    if general.mp_backend != "ray":
        return None
    from joyrl_ray.backends.ray_version import check_ray_version

    check_ray_version()
    return RaySession(general.ray_address, num_cpus=general.ray_num_cpus)


class RaySession:
    """Ray for one run, started (or attached) in a background thread while the driver checks
    its input, builds the task directory and probes the env.

    The same thread stops Ray again: Ray's processes are started with a parent-death signal
    bound to the thread that spawned them, so they must not outlive it, and they do not
    outlive this process either (a SIGKILL of the driver takes them down). A run asks for the
    stop as soon as its roles are gone (:meth:`begin_close`), so Ray's teardown overlaps the
    driver's last writes (summary, figures), and :meth:`close` waits for it.
    """

    def __init__(self, address: str | None, *, num_cpus: int | None = None) -> None:
        self.address, self.num_cpus = address, num_cpus
        self.mode: str | None = None
        self.error: BaseException | None = None
        self.teardown_s: float | None = None  # how long stopping (or leaving) Ray took
        self.ready_at: float | None = None  # epoch seconds Ray was up (or attached)
        self.closed_at: float | None = None  # monotonic: Ray was stopped (or left)
        self._ready, self._closing = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._main, name="ray-session", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.mode = connect(self.address, num_cpus=self.num_cpus)
            self.ready_at = time.time()
        except BaseException as exc:  # re-raised in the driver's thread by wait()
            self.error = exc
        self._ready.set()
        self._closing.wait()
        if self.mode is None:
            return
        started = time.monotonic()
        try:
            disconnect(self.mode)
        except Exception as exc:  # the run's results are written: say so, and go on exiting
            print(f"warning: stopping Ray failed: {first_line(exc)}", file=sys.stderr)
        self.closed_at = time.monotonic()
        self.teardown_s = round(self.closed_at - started, 3)

    def wait(self) -> str:
        """The connection mode once Ray is up; raises what starting it raised."""
        self._ready.wait()
        if self.error is not None:
            raise self.error
        assert self.mode is not None
        return self.mode

    def begin_close(self) -> None:
        """Start stopping (or leaving) Ray in the background; no Ray call may follow."""
        self._closing.set()

    def close(self) -> None:
        """Stop (or leave) Ray and wait until it is done; a second call does nothing."""
        self.begin_close()
        self._thread.join(timeout=TEARDOWN_TIMEOUT_S)
        if self._thread.is_alive():
            print(
                f"warning: Ray did not stop within {TEARDOWN_TIMEOUT_S:g} s; "
                "its processes end with this one",
                file=sys.stderr,
            )
