"""The README is short, its links lead somewhere, and every command in it works as written.

Each command of the README's ``bash`` blocks is checked the cheapest real way: a
``python main.py ...`` line is parsed by main.py's own parser and its config is built and
checked as the run would (the one-line errors for bad input come from there); the quick
start's installs name requirement files that exist and the torch this project runs with;
other programs answer ``--help``; CI's script parses. A command of a kind not listed here
fails the test, so a new README command needs a check.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import main
from joyrl_ray.config import load_config
from joyrl_ray.config.docs import page
from tests.support.runs import ROOT

README = ROOT / "README.md"
MAX_README_LINES = 220
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
TRAILING_COMMENT = re.compile(r"\s+#\s.*$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def readme_commands() -> list[str]:
    """Every command in the README's bash blocks (``&&`` chains split, comments dropped)."""
    commands = []
    for block in BASH_BLOCK.findall(README.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = TRAILING_COMMENT.sub("", line).strip()
            commands += [part.strip() for part in line.split("&&") if line]
    return commands


def help_answers(argv: list[str]) -> None:
    result = subprocess.run(
        [*argv, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{' '.join(argv)} --help: {result.stderr[-2000:]}"


def check_command(command: str) -> None:
    argv = shlex.split(command)
    if argv[:2] == ["python", "main.py"]:
        args = main.parse_args(argv[2:])
        load_config(args.yaml, args.overrides)  # raises ConfigError on bad input
    elif argv[:2] == ["pip", "install"]:
        files = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-r"]
        assert all((ROOT / f).is_file() for f in files), files
        import torch

        pins = [arg.split("==")[1] for arg in argv if arg.startswith("torch==")]
        assert all(torch.__version__.split("+")[0] == pin for pin in pins), pins
    elif argv == ["bash", ".ci/run"]:
        subprocess.run(["bash", "-n", str(ROOT / ".ci/run")], check=True)
    elif argv[0] == "python":
        program = argv[1:3] if argv[1] == "-m" else argv[1:2]  # the script or -m module
        help_answers([sys.executable, *program])
    elif argv[0] == "tensorboard":
        help_answers(["tensorboard"])
    else:
        pytest.fail(f"the README runs {command!r}: give this kind of command a check here")


def test_readme_fits_a_screenful_or_so() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_readme_starts_with_the_two_commands() -> None:
    commands = readme_commands()
    install = ["pip install torch==2.13.0", "pip install -r requirements.txt", "python main.py"]
    assert commands[:4] == [*install, "bash .ci/run"], commands[:4]


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs_as_written(command: str) -> None:
    check_command(command)


def test_main_answers_help() -> None:
    help_answers([sys.executable, "main.py"])


def test_every_linked_file_exists() -> None:
    """Links from the README and from each page of docs/ resolve to files of the project."""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    missing = []
    for doc in pages:
        for target in LINK.findall(doc.read_text()):
            if "://" in target:
                continue
            if not (doc.parent / target).exists():
                missing.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not missing, missing


def test_readme_links_every_docs_page() -> None:
    linked = {Path(target).name for target in LINK.findall(README.read_text())}
    pages = {doc.name for doc in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"


def test_config_reference_is_current() -> None:
    reference = (ROOT / "docs" / "config.md").read_text()
    assert reference == page(), "regenerate: python -m joyrl_ray.config.docs > docs/config.md"
