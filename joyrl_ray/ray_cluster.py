"""Starting a local Ray or attaching to a running cluster, with clear errors; public Ray
APIs only (``ray.init`` and its errors, documented env vars), so that every Ray release in
:data:`~joyrl_ray.ray_version.SUPPORTED_RAY` works the same.

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

import logging
import os
import socket
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.handles import first_line
from joyrl_ray.ray_version import TOKEN_AUTH_SINCE, has_token_auth, installed_ray

PROJECT_ROOT = Path(__file__).resolve().parent.parent
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
JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by the job supervisor for a job's driver
ADDRESS_ENV = "RAY_ADDRESS"
AUTH_MODE_ENV = "RAY_AUTH_MODE"
TOKEN_ENV, TOKEN_PATH_ENV = "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
CONNECT_TIMEOUT_S = 5.0  # TCP connect, then again for the health call: worst case ~10 s
# Ray stops in well under a second here; past this the run ends anyway (see RaySession.close).
TEARDOWN_TIMEOUT_S = 60.0
HEALTH_CHECK = "/grpc.health.v1.Health/Check"  # the standard gRPC health service
TOKEN_HELP = (
    "export RAY_AUTH_MODE=token and copy the head node's token (`ray get-auth-token` on the "
    "head) to ~/.ray/auth_token here, or export RAY_AUTH_TOKEN=<token> or "
    "RAY_AUTH_TOKEN_PATH=<file>"
)


class ClusterError(RuntimeError):
    """The cluster cannot be reached or cannot hold the run; the message says which."""


@dataclass(frozen=True)
class Target:
    """Where a run's Ray comes from: ``address`` None starts a local Ray."""

    address: str | None
    source: str  # what named it, for messages: "general_cfg.ray_address", "RAY_ADDRESS", ...

    @property
    def label(self) -> str:
        """How messages name the setting: ``general_cfg.ray_address='x'`` or the env var."""
        if self.source == ADDRESS_ENV:
            return f"RAY_ADDRESS={self.address!r} (general_cfg.ray_address is null)"
        return f"general_cfg.ray_address={self.address!r}"


def resolve_target(address: str | None) -> Target:
    """The Ray a run with ``general_cfg.ray_address=address`` uses (see the module doc)."""
    if address == "local":
        return Target(None, "general_cfg.ray_address")
    if address is not None:
        return Target(address, "general_cfg.ray_address")
    if in_ray_job():  # the job's own cluster, never a second Ray on the head node
        return Target("auto", "the Ray job")
    env = os.environ.get(ADDRESS_ENV, "").strip()
    if env and env != "local":
        return Target(env, ADDRESS_ENV)
    return Target(None, "general_cfg.ray_address")


@dataclass
class _Session:
    """What :func:`connect` joined, for the run's "cluster:" line."""

    joined: str | None = None


_SESSION = _Session()


def joined_cluster() -> str | None:
    """``host:port (from RAY_ADDRESS)`` of the cluster this process attached to, else None."""
    return _SESSION.joined


def _tcp_reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _split(label: str, address: str) -> tuple[str, int]:
    """``host:port`` (an optional ``ray://`` stripped) as (host, port); ClusterError if not."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or "/" in hostport:
        raise ClusterError(
            f"{label} is not allowed; allowed: null (RAY_ADDRESS, else a local Ray), local, "
            "auto, host:port (the head's GCS port, 6379 by default) or ray://host:port "
            "(the head's Ray Client port, 10001 by default)"
        )
    return host, int(port)


def current_cluster_file() -> Path:
    """Where ``ray start`` records its cluster's address (named in ``ray.init``'s docs)."""
    return (
        Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    )


def _resolve_auto(label: str) -> str:
    """The GCS address ``auto`` stands for: RAY_ADDRESS, else the last `ray start` here."""
    env = os.environ.get(ADDRESS_ENV, "").strip()
    if env and env not in ("auto", "local"):
        return env
    try:
        recorded = current_cluster_file().read_text().strip()
    except OSError:
        recorded = ""
    if not recorded:
        raise ClusterError(
            f"{label}: no running Ray cluster found on this machine (start one with "
            "`ray start --head`, export RAY_ADDRESS=host:port, or use ray_address=local for a "
            "local Ray)"
        )
    return recorded


# ----- token authentication (documented env vars and file) -----
def _token_source(label: str) -> str | None:
    """Where Ray will read the token from, in Ray's documented order; None if nowhere."""
    if os.environ.get(TOKEN_ENV, "").strip():
        return TOKEN_ENV
    path = os.environ.get(TOKEN_PATH_ENV)
    if path:  # Ray treats an unreadable or empty file here as fatal: so do we, in one line
        try:
            if Path(path).read_text().strip():
                return path
        except OSError as exc:
            raise ClusterError(
                f"{label}: {TOKEN_PATH_ENV}={path!r} cannot be read ({exc.strerror})"
            ) from None
        raise ClusterError(
            f"{label}: {TOKEN_PATH_ENV}={path!r} is empty; allowed: a file holding the head "
            f"node's token (`ray get-auth-token` on the head), or {TOKEN_ENV}=<token> instead"
        )
    default = Path.home() / ".ray" / "auth_token"
    try:
        return str(default) if default.read_text().strip() else None
    except OSError:
        return None


def _check_token_mode(label: str) -> str:
    """The driver's RAY_AUTH_MODE (lower case), after checking that token mode can work."""
    mode = os.environ.get(AUTH_MODE_ENV, "").strip().lower()
    if mode != "token":
        return mode
    version = installed_ray() or "unknown"
    if not has_token_auth(version):
        raise ClusterError(
            f"{label}: RAY_AUTH_MODE=token, but ray {version} has no token authentication "
            f"(Ray {TOKEN_AUTH_SINCE} and later have it): unset RAY_AUTH_MODE for a cluster "
            "of this Ray"
        )
    if _token_source(label) is None:
        raise ClusterError(
            f"{label}: RAY_AUTH_MODE=token but no Ray auth token was found; {TOKEN_HELP}"
        )
    return mode


# ----- probing -----
def _health(hostport: str) -> Any:
    """One standard gRPC health call: None when it answered, else the grpc status code."""
    import grpc

    with grpc.insecure_channel(hostport) as channel:
        check = channel.unary_unary(HEALTH_CHECK)  # raw bytes: an empty HealthCheckRequest
        try:
            check(b"", timeout=CONNECT_TIMEOUT_S)
            return None
        except grpc.RpcError as exc:
            return exc.code()


def _check_cluster(label: str, hostport: str, client: bool) -> None:
    """Fail with one line unless a Ray GCS (``client``: a Ray Client server) answers there."""
    import grpc

    host, port = _split(label, hostport)
    what = "Ray Client server" if client else "Ray cluster (GCS)"
    start_hint = (
        "`ray start --head` serves Ray Client on port 10001 (--ray-client-server-port); "
        "or use ray_address=host:port with the GCS port"
        if client
        else "start one with `ray start --head --port=6379`, or use ray_address=local for a "
        "local Ray"
    )
    if not _tcp_reachable(host, port, CONNECT_TIMEOUT_S):
        raise ClusterError(f"{label}: no {what} answers at {host}:{port} ({start_hint})")
    code = _health(hostport)
    is_gcs = code is None  # Ray's GCS serves the health service, its Ray Client server not
    grpc_server = code in (None, grpc.StatusCode.UNIMPLEMENTED)
    if client and not is_gcs and grpc_server:
        return
    if not client and is_gcs:
        return
    if client:
        detail = (
            "is a Ray GCS port, not a Ray Client server: use ray_address=host:port without "
            "ray://, or ray://host:10001 (the head's --ray-client-server-port)"
            if is_gcs
            else "answers, but not as a Ray Client server (the head serves one on port 10001)"
        )
    else:
        detail = (
            "answers gRPC but is not a Ray GCS (a Ray Client port? use ray://host:port), or "
            "the GCS port (6379 by default)"
            if grpc_server
            else "answers, but not as a Ray GCS (the head's --port, 6379 by default)"
        )
    raise ClusterError(f"{label}: {host}:{port} {detail}")


def check_address(address: str, source: str = "general_cfg.ray_address") -> str:
    """Validate and probe ``address``; returns the address to hand to ``ray.init``."""
    label = Target(address, source).label
    if address == "auto":
        hostport = _resolve_auto(label)
        _check_cluster(label, hostport, client=hostport.startswith("ray://"))
        return hostport
    client = address.startswith("ray://")
    _split(label, address)  # raises the "allowed" message for anything else (http://, no port)
    _check_cluster(label, address.removeprefix("ray://"), client=client)
    return address


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """The whole message on one line: Ray's version mismatch names the versions below its
    first line."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _refused_hint(mode: str) -> str:
    """Why a GCS that answered may still refuse a driver: token authentication."""
    version = installed_ray() or ""
    if not has_token_auth(version):
        return ""
    if mode == "token":
        return (
            "; the cluster may have refused this machine's Ray auth token (it must be the head "
            "node's: `ray get-auth-token` on the head), or has token authentication off "
            "(then unset RAY_AUTH_MODE)"
        )
    return f"; if the cluster uses token authentication: {TOKEN_HELP}"


def in_ray_job() -> bool:
    """Whether this process is the driver of a Ray job (``ray job submit``)."""
    return JOB_CONFIG_ENV in os.environ


def job_notes(tasks_dir: str) -> list[str]:
    """A warning for a Ray job whose task directory would land in the job's working_dir copy."""
    if not in_ray_job() or Path(tasks_dir).is_absolute():
        return []
    return [
        f"this run is a Ray job: its task directory goes under {Path(tasks_dir).resolve()}, "
        "in the job's working_dir copy on the head node, which Ray may delete once the job "
        "has ended; set general_cfg.tasks_dir to an absolute path to keep it"
    ]


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
        try:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
        except Exception as exc:  # e.g. "The current node timed out during startup"
            raise ClusterError(
                f"general_cfg.ray_address={address!r}: starting a local Ray failed "
                f"({first_line(exc)}); see /tmp/ray/session_latest/logs, or use "
                "general_cfg.mp_backend=single"
            ) from None
        return "owned"
    label = target.label
    mode = _check_token_mode(label)
    hostport = check_address(target.address, target.source)
    # A job's driver runs in the job's working_dir copy and its runtime_env already ships it.
    runtime_env = None
    if not in_ray_job():
        runtime_env = {"working_dir": str(PROJECT_ROOT), "excludes": UPLOAD_EXCLUDES}
    try:
        ray.init(address=hostport, runtime_env=runtime_env, **common)
    except Exception as exc:  # refused, version mismatches, runtime_env upload failures, ...
        hint = _refused_hint(mode) if isinstance(exc, ConnectionError) else ""
        raise ClusterError(f"{label}: cannot attach ({_one_line(exc)}){hint}") from None
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
    from joyrl_ray.ray_version import check_ray_version

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
        self._ready, self._closing = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._main, name="ray-session", daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            self.mode = connect(self.address, num_cpus=self.num_cpus)
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
        self.teardown_s = round(time.monotonic() - started, 3)

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
