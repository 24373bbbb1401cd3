"""A driver whose Ray lies outside the supported range is refused before anything starts.

Honest on purpose: a real Ray 2.49.2 (the last release before the range) is installed in a
venv of its own, which sees this interpreter's other packages (torch, gymnasium, ...), and
``python main.py`` runs there as a user's would; nothing is faked or narrowed. Building the
venv downloads one Ray wheel the first time; it is kept under the temp dir for later runs,
one per interpreter that runs the tests (the system's or a virtualenv's).

Attaching across the range's oldest end (a head and a driver both on Ray 2.50) is the
``ray_compat`` cluster tests run inside the oldest Ray's venv by .ci/run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from joyrl_ray.backends.ray_version import SUPPORTED_RAY, is_supported
from tests.support.procs import ROOT, descendants, main_env, task_dirs

OUTSIDE = "2.49.2"
#: Keyed by this interpreter: its packages are the ones the venv sees.
VENV = (
    Path(tempfile.gettempdir())
    / f"joyrl-ray-{OUTSIDE}-venv-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:8]}"
)
#: In the venv's own site-packages: the package directories this interpreter imports from
#: (a virtualenv's, its base's when it sees them, the user's), in its order, each added after
#: the venv's own site-packages, so that the venv's Ray 2.49.2 comes first and the rest is
#: this interpreter's. ``addsitedir``, not a bare path: their own .pth files are read too.
SEE_OURS = "joyrl-see-running-interpreter.pth"
PACKAGE_DIRS = ("site-packages", "dist-packages")


def _ray_version(python: Path) -> str | None:
    if not python.exists():
        return None
    proc = subprocess.run(
        [str(python), "-c", "from importlib.metadata import version; print(version('ray'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.fixture(scope="module")
def outside_python() -> Path:
    """A Python whose installed Ray is 2.49.2 and whose other packages are this
    interpreter's (built once, then reused)."""
    python = VENV / "bin" / "python"
    if _ray_version(python) != OUTSIDE:
        building = Path(tempfile.mkdtemp(prefix=f"{VENV.name}-", dir=VENV.parent))
        # This interpreter's own venv module: the same Python, wherever it was installed.
        subprocess.run(
            [sys.executable, "-m", "venv", "--clear", str(building)], check=True, timeout=120
        )
        pip = [str(building / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        # Before the .pth: pip sees only the venv's own packages.
        subprocess.run([*pip, "--no-deps", f"ray=={OUTSIDE}"], check=True, timeout=600)
        ours = [p for p in sys.path if Path(p).name in PACKAGE_DIRS and Path(p).is_dir()]
        lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in ours)
        python_dir = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        (building / "lib" / python_dir / "site-packages" / SEE_OURS).write_text(lines)
        shutil.rmtree(VENV, ignore_errors=True)
        os.replace(building, VENV)  # venvs are relocatable enough for `python main.py`
        python = VENV / "bin" / "python"
    assert _ray_version(python) == OUTSIDE and not is_supported(OUTSIDE)
    return python


def test_a_driver_with_a_ray_outside_the_range_exits_2_naming_both_versions(
    outside_python, tmp_path
):
    tasks = tmp_path / "tasks"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [
            str(outside_python),
            str(ROOT / "main.py"),
            "general_cfg.mp_backend=ray",
            f"general_cfg.tasks_dir={tasks}",
            "general_cfg.progress=false",
        ],
        cwd=ROOT,
        env=main_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children: dict = {}
    while proc.poll() is None and time.monotonic() - t0 < 120:
        children.update(descendants(proc.pid))  # anything main.py started (a raylet, ...)
        time.sleep(0.05)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2, out[-2000:] + err[-3000:]
    lines = err.strip().splitlines()
    assert lines == [
        f"error: ray {OUTSIDE} is installed, but joyrl-ray supports ray{SUPPORTED_RAY} (the "
        "releases its CI tests; a driver must run its cluster's Ray): "
        f"pip install 'ray[default]{SUPPORTED_RAY}'"
    ], err
    assert out == ""
    assert children == {}, children  # no Ray process was started
    assert not tasks.exists() or task_dirs(tasks) == []
