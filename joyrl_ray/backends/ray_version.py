"""The Ray versions joyrl-ray runs on, checked before anything starts.

A driver must run the Ray version of the cluster it joins, and an existing cluster runs
whatever Ray it was deployed with, so joyrl-ray supports a year of Ray releases: the
oldest (2.50) and the newest (2.60) are both tested in CI (``.ci/run``). The runtime uses
public Ray APIs only; a Ray outside the range is refused here, in one line, rather than
failing later far from the cause. Widen :data:`SUPPORTED_RAY` (and the line in
requirements.txt, which a test keeps equal) only after the suite passed on the new release.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from joyrl_ray.backends.cluster_errors import ClusterError

#: The ``ray`` versions CI tests (both ends), as a pip version specifier.
SUPPORTED_RAY = ">=2.50,<2.61"
#: The first Ray release with token authentication (``RAY_AUTH_MODE=token``).
TOKEN_AUTH_SINCE = "2.52"


def installed_ray() -> str | None:
    """The installed ``ray`` distribution's version (None when not installed), read from
    its metadata without importing it: an unsupported Ray may not even import."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ray")
    except PackageNotFoundError:
        return None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def is_supported(version: str) -> bool:
    """True when ``version`` (pre-releases included) lies in :data:`SUPPORTED_RAY`."""
    parsed = _version(version)
    return parsed is not None and SpecifierSet(SUPPORTED_RAY).contains(parsed, prereleases=True)


def has_token_auth(version: str) -> bool:
    """Whether Ray ``version`` knows token authentication (``RAY_AUTH_MODE=token``)."""
    parsed = _version(version)
    return parsed is not None and parsed.release >= Version(TOKEN_AUTH_SINCE).release


def check_ray_version(version: str | None = None) -> None:
    """Raise ClusterError naming the installed and the supported Ray when they differ.

    ``version`` defaults to the installed ``ray`` distribution's version.
    """

    if version is None:
        version = installed_ray()
        if version is None:
            raise ClusterError(
                f"ray is not installed; joyrl-ray needs ray{SUPPORTED_RAY}: "
                f"pip install 'ray[default]{SUPPORTED_RAY}'"
            )
    if not is_supported(version):
        raise ClusterError(
            f"ray {version} is installed, but joyrl-ray supports ray{SUPPORTED_RAY} (the "
            "releases its CI tests; a driver must run its cluster's Ray): "
            f"pip install 'ray[default]{SUPPORTED_RAY}'"
        )
