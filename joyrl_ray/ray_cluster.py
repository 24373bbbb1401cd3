"""Starting a local Ray or attaching to a running cluster, with clear errors.

``ray_address: null`` starts a local Ray that the run owns and shuts down. Any other
address attaches: the project code travels as the job's ``runtime_env`` working_dir,
and on exit the run only disconnects, leaving the cluster and its other jobs running.

Inside a Ray job (``ray job submit ... -- python main.py ...``) the job supervisor already
gave the driver a runtime_env (``RAY_JOB_CONFIG_JSON_ENV_VAR``, with the job's working_dir)
and the cluster's address (``RAY_ADDRESS``): the run attaches without a runtime_env of its
own (Ray refuses two working_dirs), and ``null`` means the job's cluster, not a second Ray
on the head node.

Before attaching, the address is probed with one short gRPC call (a GCS ``GetClusterId``
for ``host:port`` / ``auto``, a Ray Client ``PING`` for ``ray://host:port``), so that a
wrong address, a wrong kind of port or a missing auth token fails in seconds with one
line instead of Ray's own half minute of retries and log spam.

Token authentication (Ray 2.60): ``ray start --head`` turns it on whenever the head machine
has a token (``~/.ray/auth_token``, written by ``ray get-auth-token --generate`` or by any
earlier local ``ray.init``). Ray itself sends a token to an explicit address only when
``RAY_AUTH_MODE=token`` is set, so when the cluster asks for a token and this machine has
one (``RAY_AUTH_TOKEN``, else the file ``RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``)
and RAY_AUTH_MODE is unset, token mode is turned on for this process until it disconnects.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
CONNECT_TIMEOUT_S = 5.0  # TCP connect, then again for the gRPC probe: worst case ~10 s
# Ray stops in well under a second here; past this the run ends anyway (see RaySession.close).
TEARDOWN_TIMEOUT_S = 60.0
AUTH_MODE_ENV = "RAY_AUTH_MODE"
TOKEN_HELP = (
    "copy the head node's token (`ray get-auth-token` on the head) to ~/.ray/auth_token "
    "here, or export RAY_AUTH_TOKEN=<token> or RAY_AUTH_TOKEN_PATH=<file>"
)


class ClusterError(RuntimeError):
    """The cluster cannot be reached or cannot hold the run; the message says which."""


@dataclass
class _Session:
    """What :func:`connect` changed in this process, undone by :func:`disconnect`."""

    auth_mode_before: str | None = None
    auth_mode_set: bool = False


_SESSION = _Session()


def _tcp_reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _split(address: str) -> tuple[str, int]:
    """``host:port`` (an optional ``ray://`` stripped) as (host, port); ClusterError if not."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or "/" in hostport:
        raise ClusterError(
            f"general_cfg.ray_address={address!r} is not allowed; allowed: null (local Ray), "
            "auto, host:port (the head's GCS port, 6379 by default) or ray://host:port "
            "(the head's Ray Client port, 10001 by default)"
        )
    return host, int(port)


def _resolve_auto(address: str) -> str:
    """The GCS address ``auto`` stands for (RAY_ADDRESS, or the last `ray start` here)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address

        resolved = canonicalize_bootstrap_address("auto")
    except Exception as exc:  # e.g. several clusters found on this machine
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: {str(exc).splitlines()[0]}"
        ) from None
    if not resolved:
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: no running Ray cluster found on this machine "
            "(start one with `ray start --head`, give host:port, or use ray_address=null for a "
            "local Ray)"
        )
    return resolved


# ----- token authentication -----
def _token_available() -> bool:
    try:
        from ray._raylet import AuthenticationTokenLoader  # type: ignore[attr-defined]

        loader = AuthenticationTokenLoader.instance()
        loader.reset_cache()
        return bool(loader.has_token(ignore_auth_mode=True))
    except ImportError:  # Ray without token authentication
        return False
    except Exception as exc:  # RAY_AUTH_TOKEN_PATH names an unreadable or empty file
        raise ClusterError(f"Ray auth token: {str(exc).split('. ')[0]}") from None


def _token_metadata() -> tuple[tuple[str, str], ...]:
    from ray._raylet import AuthenticationTokenLoader  # type: ignore[attr-defined]

    token = AuthenticationTokenLoader.instance().get_raw_token(ignore_auth_mode=True)
    return (("authorization", f"Bearer {token}"),)


def _set_auth_mode(mode: str) -> None:
    """Set RAY_AUTH_MODE for this process (and what it spawns) and refresh Ray's config."""
    if not _SESSION.auth_mode_set:
        _SESSION.auth_mode_before = os.environ.get(AUTH_MODE_ENV)
        _SESSION.auth_mode_set = True
    os.environ[AUTH_MODE_ENV] = mode
    from ray._raylet import Config  # type: ignore[attr-defined]

    Config.initialize("")


def _restore_auth_mode() -> None:
    if not _SESSION.auth_mode_set:
        return
    if _SESSION.auth_mode_before is None:
        os.environ.pop(AUTH_MODE_ENV, None)
    else:
        os.environ[AUTH_MODE_ENV] = _SESSION.auth_mode_before
    _SESSION.auth_mode_set = False
    try:
        from ray._raylet import Config  # type: ignore[attr-defined]

        Config.initialize("")
    except ImportError:
        pass


# ----- probing -----
def _probe(hostport: str, client: bool, metadata: tuple[tuple[str, str], ...]) -> Any:
    """One gRPC call with a deadline: None when it answered, else the grpc status code."""
    import grpc

    channel = grpc.insecure_channel(hostport)
    try:
        if client:
            from ray.core.generated import ray_client_pb2, ray_client_pb2_grpc

            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(
                ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING),
                timeout=CONNECT_TIMEOUT_S,
                metadata=metadata,
            )
        else:
            from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(),
                timeout=CONNECT_TIMEOUT_S,
                metadata=metadata,
            )
        return None
    except grpc.RpcError as exc:
        return exc.code()
    finally:
        channel.close()


def _check_cluster(address: str, hostport: str, client: bool) -> None:
    """Fail with one line unless a Ray GCS / Ray Client server answers and accepts us."""
    import grpc

    host, port = _split(hostport)
    what = "Ray Client server" if client else "Ray cluster (GCS)"
    start_hint = (
        "`ray start --head` serves Ray Client on port 10001 (--ray-client-server-port); "
        "or use ray_address=host:port with the GCS port"
        if client
        else "start one with `ray start --head --port=6379`, or use ray_address=null for a "
        "local Ray"
    )
    if not _tcp_reachable(host, port, CONNECT_TIMEOUT_S):
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: no {what} answers at {host}:{port} "
            f"({start_hint})"
        )
    mode = os.environ.get(AUTH_MODE_ENV, "").lower()
    token_mode = mode == "token"
    if token_mode and not _token_available():
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: RAY_AUTH_MODE=token but no Ray auth token "
            f"was found; {TOKEN_HELP}"
        )
    code = _probe(hostport, client, _token_metadata() if token_mode else ())
    if code == grpc.StatusCode.UNAUTHENTICATED and not mode:
        # The cluster wants a token and the user left the mode to us: use ours if we have one.
        if not _token_available():
            raise ClusterError(
                f"general_cfg.ray_address={address!r}: the cluster requires a Ray auth token "
                f"and none was found on this machine; {TOKEN_HELP}"
            )
        code = _probe(hostport, client, _token_metadata())
        if code is None:
            _set_auth_mode("token")
            return
        token_mode = True
    if code is None:
        return
    if code == grpc.StatusCode.UNAUTHENTICATED:
        detail = (
            "rejected this machine's Ray auth token (it must be the head node's token)"
            if token_mode
            else f"requires a Ray auth token but RAY_AUTH_MODE={mode!r} (unset it or set 'token')"
        )
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: the cluster {detail}; {TOKEN_HELP}"
        )
    if code == grpc.StatusCode.UNIMPLEMENTED:  # a gRPC server, but not the one asked for
        metadata = _token_metadata() if _token_available() else ()
        other_answers = _probe(hostport, not client, metadata) in (
            None,
            grpc.StatusCode.UNAUTHENTICATED,
        )
        if client:
            detail = (
                "is a Ray GCS port, not a Ray Client server: use ray_address=host:port without "
                "ray://, or ray://host:10001 (the head's --ray-client-server-port)"
                if other_answers
                else "answers, but not as a Ray Client server (the head serves one on port 10001)"
            )
        else:
            detail = (
                "is a Ray Client port, not a Ray GCS port: use ray_address=ray://host:port, or "
                "the GCS port (6379 by default)"
                if other_answers
                else "answers, but not as a Ray GCS (the head's --port, 6379 by default)"
            )
        raise ClusterError(f"general_cfg.ray_address={address!r}: {host}:{port} {detail}")
    raise ClusterError(
        f"general_cfg.ray_address={address!r}: no {what} answers at {host}:{port} "
        f"(gRPC {getattr(code, 'name', code)}; {start_hint})"
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def check_address(address: str) -> str:
    """Validate and probe ``address``; returns the address to hand to ``ray.init``."""
    if address == "auto":
        hostport = _resolve_auto(address)
        _check_cluster(address, hostport, client=False)
        return hostport
    client = address.startswith("ray://")
    _split(address)  # raises the "allowed" message for anything else (http://..., no port)
    _check_cluster(address, address.removeprefix("ray://"), client=client)
    return address


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
    common: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": True}
    in_job = in_ray_job()
    if address is None and in_job:
        address = "auto"  # the job's own cluster (RAY_ADDRESS), never a second local Ray
    if address is None:
        # "local" starts a new Ray even when RAY_ADDRESS is set in the environment.
        try:
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **common)
        except Exception as exc:  # e.g. "The current node timed out during startup"
            raise ClusterError(
                f"general_cfg.ray_address=null: starting a local Ray failed ({_first_line(exc)}); "
                "see /tmp/ray/session_latest/logs, or use general_cfg.mp_backend=single"
            ) from None
        return "owned"
    try:
        target = check_address(address)
    except ClusterError:
        _restore_auth_mode()
        raise
    # A job's driver runs in the job's working_dir copy and its runtime_env already ships it.
    runtime_env = None
    if not in_job:
        runtime_env = {"working_dir": str(PROJECT_ROOT), "excludes": UPLOAD_EXCLUDES}
    try:
        ray.init(address=target, runtime_env=runtime_env, **common)
    except Exception as exc:  # version mismatches, runtime_env upload failures, ...
        _restore_auth_mode()
        raise ClusterError(
            f"general_cfg.ray_address={address!r}: cannot attach ({_first_line(exc)})"
        ) from None
    return "attached"


def disconnect(how: str) -> None:
    """Stop a Ray this run started; for an attached driver ``ray.shutdown`` only disconnects."""
    import ray

    if how == "owned" and ray.is_initialized():
        _stop_autoscaler_monitor()
    if how in ("owned", "attached") and ray.is_initialized():
        ray.shutdown()
    if how == "attached":
        _restore_auth_mode()


def _stop_autoscaler_monitor() -> None:
    """Stop the autoscaler monitor of a Ray this process started, before ``ray.shutdown``.

    ``ray.shutdown`` stops the GCS before the monitor; the monitor's SIGTERM handler then
    reports its end to the stopped GCS and is killed after Ray's one-second grace period
    (the order Ray's ``ray stop`` avoids). A local single-node Ray has nothing to
    autoscale, so the monitor is killed first and the shutdown skips it: a second less.
    Private Ray API: if it is not there, the shutdown simply takes its second.
    """
    try:
        import ray._private.worker as ray_worker
        from ray._private import ray_constants

        node = ray_worker._global_node
        infos = node.all_processes.get(ray_constants.PROCESS_TYPE_MONITOR, []) if node else []
        for info in infos:
            if info.process.poll() is None:
                info.process.kill()
                info.process.wait(timeout=5)
    except Exception:  # an older or newer Ray: leave the shutdown as Ray does it
        return


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
        quiet = _QuietStart()
        for name in (
            "ray._private.worker",
            "ray._private.authentication.authentication_token_setup",
        ):
            logging.getLogger(name).addFilter(quiet)
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
            print(f"warning: stopping Ray failed: {_first_line(exc)}", file=sys.stderr)
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
