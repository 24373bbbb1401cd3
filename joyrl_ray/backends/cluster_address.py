"""Which Ray a run uses, and whether its address answers, checked before ``ray.init``.

- ``ray_address: null`` (the default) does what ``ray.init()`` does: it attaches to the
  cluster ``RAY_ADDRESS`` names when that is set (inside ``ray job submit``, the job's own
  cluster), and otherwise starts a local Ray that the run owns.
- ``ray_address: local`` always starts a local Ray, ``RAY_ADDRESS`` or not.
- ``auto``, ``host:port`` or ``ray://host:port`` attach there (``auto``: ``RAY_ADDRESS``,
  else the cluster of the last ``ray start`` on this machine, as ``ray.init`` documents).

The address is checked with a TCP connect and one call to the standard gRPC health service
(``grpc.health.v1``, which Ray's GCS serves and its Ray Client server does not), so that a
wrong address or the wrong kind of port fails in seconds with one line instead of Ray's
own half minute of retries. Token authentication (Ray 2.52 and later) follows Ray's
documented rule; a cluster that refuses a driver is named with what to set.
"""

from __future__ import annotations

import os
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from joyrl_ray.backends.cluster_errors import ClusterError
from joyrl_ray.backends.node_probe import grpc_health
from joyrl_ray.backends.ray_version import TOKEN_AUTH_SINCE, has_token_auth, installed_ray

JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"  # set by the job supervisor for a job's driver


ADDRESS_ENV = "RAY_ADDRESS"


AUTH_MODE_ENV = "RAY_AUTH_MODE"


CONNECT_TIMEOUT_S = 5.0  # TCP connect, then again for the health call: worst case ~10 s


TOKEN_ENV, TOKEN_PATH_ENV = "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"
TOKEN_HELP = (
    "export RAY_AUTH_MODE=token and copy the head node's token (`ray get-auth-token` on the "
    "head) to ~/.ray/auth_token here, or export RAY_AUTH_TOKEN=<token> or "
    "RAY_AUTH_TOKEN_PATH=<file>"
)


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


def check_token_mode(label: str) -> str:
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
    code = grpc_health(hostport, CONNECT_TIMEOUT_S)
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


def one_line(exc: BaseException, limit: int = 400) -> str:
    """The whole message on one line: Ray's version mismatch names the versions below its
    first line."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def refused_hint(mode: str) -> str:
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
