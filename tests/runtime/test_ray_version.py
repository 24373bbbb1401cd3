"""The Ray version check: one line naming the installed and the supported Ray.

Why: joyrl_ray/ray_cluster.py uses Ray internals, so another minor release must be
refused up front; and the pin in requirements.txt must say the same as the check.
"""

from __future__ import annotations

import re

import pytest

from joyrl_ray.ray_cluster import ClusterError
from joyrl_ray.ray_version import SUPPORTED_RAY, check_ray_version, is_supported
from tests.support.runs import ROOT


def test_installed_ray_is_supported() -> None:
    check_ray_version()


@pytest.mark.parametrize("version", ["2.60.0", "2.60.3", "2.60.1rc1"])
def test_supported_versions_pass(version: str) -> None:
    assert is_supported(version)
    check_ray_version(version)


@pytest.mark.parametrize("version", ["2.59.0", "2.61.0", "3.0.0.dev0", "2.40.0", "not-a-version"])
def test_other_versions_fail_with_one_line(version: str) -> None:
    with pytest.raises(ClusterError) as excinfo:
        check_ray_version(version)
    message = str(excinfo.value)
    assert "\n" not in message
    assert f"ray {version} is installed" in message
    assert f"supports ray{SUPPORTED_RAY}" in message


def test_default_reads_the_installed_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    import ray

    monkeypatch.setattr(ray, "__version__", "2.59.1")
    with pytest.raises(ClusterError, match=r"ray 2\.59\.1 is installed"):
        check_ray_version()


def test_requirements_pin_the_supported_range() -> None:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    pins = [line.split("#")[0].strip() for line in lines if re.match(r"ray\b", line)]
    assert pins == [f"ray[default]{SUPPORTED_RAY}"], pins
