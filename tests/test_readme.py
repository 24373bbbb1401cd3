"""The README is short, its links lead somewhere, and every command in it works as written.

Each command of the README's ``bash`` blocks is checked the cheapest real way: a
``python main.py ...`` line is parsed by main.py's own parser and its config is built and
checked as the run would (the one-line errors for bad input come from there); the quick
start's installs name requirement files that exist and the torch this project runs with;
other programs answer ``--help``; CI's script parses. A command of a kind not listed here
fails the test, so a new README command needs a check.

Some run for real, as a user types them from the project root, where they write under the
project's own relative ``tasks/``, each to a short budget (overrides appended): the sweep
command and the one-process run. Only the directories a test's command printed as its own
are removed after it; whatever else ``tasks/`` holds (a user's runs) stays.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import main
from joyrl_ray.config import load_config
from joyrl_ray.config.docs import page
from tests.support.cli_runs import TINY_DQN, main_in_process
from tests.support.procs import TrackedRun
from tests.support.runs import ROOT, needs_extra
from tests.support.sweeps import read_csv

README = ROOT / "README.md"
MAX_README_LINES = 220
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)
TRAILING_COMMENT = re.compile(r"\s+#\s.*$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
SWEEP_COMMAND = re.compile(r"`(python main\.py [^`]*--sweep [^`]*)`")  # in the prose
PROJECT_TASKS = ROOT / "tasks"  # general_cfg.tasks_dir's default, relative to the project

#: The README's sweep file as written but for 2 draws (of its 8) and ASHA's first rung at
#: 1,000 env steps (of 10,000); appended to its command: each trial to 2,000 env steps, a
#: 32-unit network, an evaluation (a report to Tune) of 2 episodes every 250 updates, no
#: figures.
SHORT_DRAWS = {"num_samples": 2, "asha": {"grace_env_steps": 1000, "reduction_factor": 2}}
SHORT_SWEEP = (
    "general_cfg.max_env_steps=2000",
    TINY_DQN[0],
    "general_cfg.model_save_fre=250",
    "general_cfg.online_eval_episode=2",
    "general_cfg.save_fig=false",
)


def readme_commands() -> list[str]:
    """Every command in the README's bash blocks (``&&`` chains split, comments dropped)."""
    commands = []
    for block in BASH_BLOCK.findall(README.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = TRAILING_COMMENT.sub("", line).strip()
            commands += [part.strip() for part in line.split("&&") if line]
    return commands


def help_answers(argv: list[str]) -> None:
    # As from an activated venv: a console script is the one beside this interpreter.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run(
        [*argv, "--help"],
        cwd=ROOT,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
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


# ----- the README's commands run for real, from the project root -----


@pytest.fixture
def printed_task_dirs() -> Iterator[list[Path]]:
    """Where the test lists the directories its command printed as made under the
    project's ``tasks/``; those alone are removed after the test (``tasks/`` too, when the
    test made it and it is left empty)."""
    existed = PROJECT_TASKS.exists()
    made: list[Path] = []
    yield made
    for path in made:
        if path.parent == PROJECT_TASKS:  # never anything outside tasks/
            shutil.rmtree(path, ignore_errors=True)
    if not existed:
        with contextlib.suppress(OSError):  # not empty: another run writes there
            PROJECT_TASKS.rmdir()


def readme_sweep_command(draws: Path) -> list[str]:
    """The README's sweep command (its arguments after ``python main.py``), its sweep file
    written to ``draws`` with ``SHORT_DRAWS`` over it."""
    (command,) = {" ".join(c.split()) for c in SWEEP_COMMAND.findall(README.read_text())}
    argv = shlex.split(command)
    assert argv[:2] == ["python", "main.py"], command
    at = argv.index("--sweep") + 1
    sweep = yaml.safe_load((ROOT / argv[at]).read_text())
    assert sweep["num_samples"] > SHORT_DRAWS["num_samples"] and "asha" in sweep, sweep
    draws.write_text(yaml.safe_dump({**sweep, **SHORT_DRAWS}))
    argv[at] = str(draws)
    return argv[2:]


def printed_sweep_dirs(stdout: str) -> list[Path]:
    """The sweep directory the command printed (``sweep: <dir>``, at its start)."""
    return [
        ROOT / line.removeprefix("sweep: ")
        for line in stdout.splitlines()
        if line.startswith("sweep: ") and Path(line).name.startswith("Sweep_")
    ]


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_the_readmes_sweep_command_writes_its_results_and_best_config_under_tasks(
    printed_task_dirs: list[Path], tmp_path: Path
) -> None:
    needs_extra("ray.tune", "requirements-tune.txt")
    args = (*readme_sweep_command(tmp_path / "sweep.yaml"), *SHORT_SWEEP)
    run = TrackedRun(args, log_dir=tmp_path)
    try:
        code = run.wait(timeout=360)
    finally:
        run.kill()
        printed_task_dirs += printed_sweep_dirs(run.stdout)
    assert code == 0, f"exit {code}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    (sweep_dir,) = printed_task_dirs
    lines = run.stdout.splitlines()
    assert sweep_dir.parent == PROJECT_TASKS and lines[-1] == str(sweep_dir), lines[-3:]
    rows = read_csv(sweep_dir / "sweep_results.csv")
    assert len(rows) == SHORT_DRAWS["num_samples"], rows
    assert all(r["status"] != "error" for r in rows), rows
    assert all(Path(r["task_dir"]).parent.parent == sweep_dir / "trials" for r in rows), rows
    best = yaml.safe_load((sweep_dir / "best_config.yaml").read_text())
    # The tasks_dir the command had: the best config runs from the project root again.
    assert best["general_cfg"]["tasks_dir"] == "tasks", best["general_cfg"]


def test_the_readmes_one_process_command_writes_its_task_directory_under_tasks(
    printed_task_dirs: list[Path], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (command,) = [c for c in readme_commands() if c.endswith("general_cfg.mp_backend=single")]
    argv = shlex.split(command)
    monkeypatch.chdir(ROOT)
    # 300 env steps: fewer than learn_start, so no update; only the run's own cost is left.
    short = ("general_cfg.max_env_steps=300", "general_cfg.save_fig=false", TINY_DQN[0])
    code = main_in_process([*argv[2:], *short])
    out, err = capsys.readouterr()
    printed_task_dirs += [ROOT / line for line in out.splitlines()[-1:]]  # the task directory
    assert code == 0, err[-3000:]
    (task,) = printed_task_dirs
    assert task.parent == PROJECT_TASKS, out[-2000:]
    assert (task / "results" / "summary.json").is_file()
