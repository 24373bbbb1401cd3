"""The Ray version check: one line naming the installed and the supported Ray.

Why: a driver must run its cluster's Ray, so joyrl-ray supports a range of releases (CI
tests both ends); a Ray outside it is refused up front, and the line in requirements.txt
must say the same as the check. A real out-of-range Ray refused by ``python main.py`` is in
tests/runtime/test_cross_version.py.
"""

from __future__ import annotations

import re

import pytest

from joyrl_ray.backends.ray_cluster import ClusterError
from joyrl_ray.backends.ray_version import (
    SUPPORTED_RAY,
    check_ray_version,
    has_token_auth,
    installed_ray,
    is_supported,
)
from tests.support.runs import ROOT

pytestmark = pytest.mark.ray_compat


def test_installed_ray_is_supported() -> None:
    check_ray_version()


def test_installed_version_is_read_from_the_ray_distribution() -> None:
    import ray

    assert installed_ray() == ray.__version__


@pytest.mark.parametrize("version", ["2.50.0", "2.55.1", "2.60.0", "2.60.3", "2.60.1rc1"])
def test_supported_versions_pass(version: str) -> None:
    assert is_supported(version)
    check_ray_version(version)


@pytest.mark.parametrize(
    "version", ["2.49.2", "2.61.0", "3.0.0.dev0", "2.40.0", "2.50.0rc0", "not-a-version"]
)
def test_other_versions_fail_with_one_line(version: str) -> None:
    with pytest.raises(ClusterError) as excinfo:
        check_ray_version(version)
    message = str(excinfo.value)
    assert "\n" not in message
    assert f"ray {version} is installed" in message
    assert f"supports ray{SUPPORTED_RAY}" in message


@pytest.mark.parametrize(
    ("version", "has"), [("2.50.1", False), ("2.51.2", False), ("2.52.0", True), ("2.60.0", True)]
)
def test_token_authentication_exists_from_ray_2_52(version: str, has: bool) -> None:
    assert has_token_auth(version) is has


def test_requirements_pin_the_supported_range() -> None:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    pins = [line.split("#")[0].strip() for line in lines if re.match(r"ray\b", line)]
    assert pins == [f"ray[default]{SUPPORTED_RAY}"], pins
