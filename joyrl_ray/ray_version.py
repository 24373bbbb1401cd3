"""The Ray versions joyrl-ray runs on, checked before anything starts.

Why: ``joyrl_ray/ray_cluster.py`` uses Ray internals (``ray._private.services``,
``ray._raylet``'s token loader and config, Ray 2.60's token-authentication rules, the
local node's process table to stop the autoscaler monitor before ``ray.shutdown``) that
change between minor releases without notice. Another Ray fails there in odd ways, far
from the cause; this check says it in one line instead. Widen :data:`SUPPORTED_RAY` (and
the pin in requirements.txt, which a test keeps equal) only after the suite passed on the
new minor release.
"""

from __future__ import annotations

#: The ``ray`` versions the test suite runs on, as a pip version specifier.
SUPPORTED_RAY = ">=2.60,<2.61"


def is_supported(version: str) -> bool:
    """True when ``version`` (pre-releases included) lies in :data:`SUPPORTED_RAY`."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return SpecifierSet(SUPPORTED_RAY).contains(parsed, prereleases=True)


def check_ray_version(version: str | None = None) -> None:
    """Raise ClusterError naming the installed and the supported Ray when they differ.

    ``version`` defaults to the installed ``ray.__version__``.
    """
    from joyrl_ray.ray_cluster import ClusterError  # lazy: ray_cluster may import this module

    if version is None:
        try:
            import ray
        except ImportError:
            raise ClusterError(
                f"ray is not installed; joyrl-ray needs ray{SUPPORTED_RAY}: "
                f"pip install 'ray[default]{SUPPORTED_RAY}'"
            ) from None
        version = str(ray.__version__)
    if not is_supported(version):
        raise ClusterError(
            f"ray {version} is installed, but joyrl-ray supports ray{SUPPORTED_RAY} only "
            f"(it uses Ray internals): pip install 'ray[default]{SUPPORTED_RAY}'"
        )
