"""A missing env dependency stops `python main.py` with one line before Ray starts."""

from __future__ import annotations

from pathlib import Path

from tests.support.runs import run_main


def test_missing_extra_is_one_line_exit_2_and_no_ray(tmp_path: Path) -> None:
    result = run_main(
        "env_cfg.id=tests.support.extra_envs:NeedsBox2DEnv",
        "general_cfg.mp_backend=ray",
        "general_cfg.progress=false",
        f"general_cfg.tasks_dir={tmp_path}",
        timeout=120,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-2000:]
    assert "needs the box2d extra" in lines[0]
    assert "pip install -r requirements-box2d.txt" in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    output = (result.stdout + result.stderr).lower()
    assert "started a local ray instance" not in output and "ray" not in result.stdout.lower()
    assert list(tmp_path.iterdir()) == []  # no task directory
