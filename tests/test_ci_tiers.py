"""The CI script's tiers: ``bash .ci/run`` runs each commit's (``JOYRL_CI_TIER=commit``, the
default), ``bash .ci/release`` the release check's (``release``: the tests marked so too).
An unknown tier is one line and exit 2, before anything installs."""

from __future__ import annotations

import os
import subprocess

from tests.support.runs import ROOT


def test_an_unknown_ci_tier_is_one_line_naming_the_tiers_before_anything_installs() -> None:
    env = {**os.environ, "JOYRL_CI_TIER": "nightly"}
    done = subprocess.run(
        ["bash", ".ci/run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "JOYRL_CI_TIER=nightly" in line and "commit" in line and "release" in line, line
    assert done.stdout == ""
