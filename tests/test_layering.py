"""The two layering rules of the design, read from the source with ``ast``.

Why: "algorithm code never imports ray" keeps every algorithm runnable and testable in one
process, and "the runtime never knows which algorithm it runs" keeps adding an algorithm
to one folder under ``algos/``. Both erode one convenient line at a time, and nothing
else fails when they do.

What counts as naming an algorithm in ``joyrl_ray/``: a registered name (``DQN``,
``DoubleDQN``, ``PPO``, ...) as an identifier or as a word of one (``PPOLearner``,
``is_ppo``, ``td3_noise``), in an imported module path (``algos.dqn``), or in a string
literal, either as a word spelt as registered (``"DQN"``, ``f"... {x} for SAC"``) or as
the whole string in any case (``"ppo"``, as in ``algo_name.lower() == "ppo"``).
Comments and docstrings are not checked: they explain the runtime with examples ("the DQN
family"), which makes no code depend on an algorithm, while a literal or an identifier
is what a dispatch on the algorithm's name would need. Lowercase words inside longer
strings are not checked either, so example ids such as ``joyrl/cartpole-dqn-v0`` in a
help text pass.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from algos import ALGORITHMS
from tests.support.runs import ROOT, run_python

ALGOS_DIR = ROOT / "algos"
RUNTIME_DIR = ROOT / "joyrl_ray"

#: Lines allowed to name an algorithm: (file relative to the repo, the line's code).
#: The default algo_name: a bare ``python main.py`` trains DQN on CartPole-v1 (the
#: README's first command). Moving that default into ``algos/`` would let this entry go.
ALLOWED = {("joyrl_ray/config/general.py", 'algo_name: str = "DQN"')}


def python_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    assert files, f"no python files under {folder}"
    return files


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name


# ----- algos/ never imports ray -----


def is_ray(module: str | None) -> bool:
    return module is not None and (module == "ray" or module.startswith("ray."))


def imported_modules(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Every absolute module an import statement or ``__import__``/``import_module`` names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in ("__import__", "import_module") and isinstance(first, ast.Constant):
                yield node.lineno, str(first.value)


def test_algorithm_code_never_imports_ray() -> None:
    offending = [
        f"{rel(path)}:{line}: imports {module}"
        for path in python_files(ALGOS_DIR)
        for line, module in imported_modules(parse(path))
        if is_ray(module)
    ]
    assert not offending, "\n".join(offending)


def test_importing_every_algorithm_loads_no_ray() -> None:
    """The same rule at run time, so an indirect import (through joyrl_ray or a helper) counts."""
    code = (
        "import pkgutil, sys, algos\n"
        "for m in ['algos', *(m.name for m in pkgutil.walk_packages(algos.__path__, 'algos.'))]:\n"
        "    __import__(m)\n"
        "    if 'ray' in sys.modules:\n"
        "        print(m)\n"
        "        break\n"
    )
    done = run_python(code, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"importing {done.stdout.strip()} loaded ray"


# ----- joyrl_ray/ never names an algorithm -----


def algorithm_names() -> list[str]:
    names = sorted(ALGORITHMS)
    assert {"DQN", "DoubleDQN", "DuelingDQN", "PPO", "SAC", "TD3"} <= set(names), names
    return names


def identifier_pattern(name: str) -> re.Pattern[str]:
    """``name`` as a word of an identifier: ``PPOLearner``, ``is_ppo``, but not ``DoubleDQN``
    for ``DQN`` nor ``transaction`` for ``SAC``."""
    return re.compile(
        rf"(?<![A-Za-z0-9]){re.escape(name)}(?![a-z0-9])"
        rf"|(?<![A-Za-z0-9]){re.escape(name.lower())}(?![A-Za-z0-9])"
    )


def word_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])")


def docstring_nodes(tree: ast.Module) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        is_scope = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
        if isinstance(node, is_scope) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def identifiers(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name):
            yield line, node.id
        elif isinstance(node, ast.Attribute):
            yield line, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield line, node.name
        elif isinstance(node, ast.arg):
            yield line, node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.alias):
            yield line, node.asname or node.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                yield line, name


def algorithm_mentions(path: Path, names: list[str]) -> list[str]:
    tree = parse(path)
    source = path.read_text().splitlines()
    docstrings = docstring_nodes(tree)
    found: list[tuple[int, str, str]] = []
    for line, ident in identifiers(tree):
        for part in ident.split("."):
            found += [
                (line, name, f"identifier {part}")
                for name in names
                if identifier_pattern(name).search(part)
            ]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in docstrings:
            continue
        text = node.value
        for name in names:
            if word_pattern(name).search(text) or text.strip().lower() == name.lower():
                found.append((node.lineno, name, f"string {text!r}"))
    where = rel(path)
    return [
        f"{where}:{line}: {what} names {name}"
        for line, name, what in sorted(set(found))
        if (where, source[line - 1].split("#")[0].strip()) not in ALLOWED
    ]


def test_runtime_never_names_an_algorithm() -> None:
    names = algorithm_names()
    offending = [
        line for path in python_files(RUNTIME_DIR) for line in algorithm_mentions(path, names)
    ]
    assert not offending, "\n".join(offending)


def test_the_name_check_catches_what_it_should(tmp_path: Path) -> None:
    """The checker itself: these lines must be flagged, the docstring and comment not."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""A runtime module; the DQN family is an example here."""\n'
        "from algos.dqn.policy import DQNPolicy  # the DQN import\n"
        "def is_ppo(cfg):\n"
        '    return cfg.algo_name.lower() == "ppo"\n'
        "class TD3Learner:\n"
        "    pass\n"
        'MESSAGE = f"SAC needs a Box action space, got {1}"\n'
        'OK = "transaction joyrl/cartpole-dqn-v0"\n'
    )
    found = algorithm_mentions(sample, algorithm_names())
    lines = sorted({int(entry.split(":")[1]) for entry in found})
    assert lines == [2, 3, 4, 5, 7], found


# ----- joyrl_ray/ is layered: each folder imports only the folders below it -----

#: The runtime's layers, bottom up. A module imports from its own layer or lower ones; the
#: modules at the package root (config, data_needs, batch, ...) are the bottom layer.
LAYERS = (
    "",
    "wire",
    "data",
    "control",
    "roles",
    "flows",
    "backends",
    "run",
    "sweep",
    "export",
    "export_minari",
)


def layer_of(module: str) -> int | None:
    """The layer of a ``joyrl_ray`` module (None for other packages)."""
    parts = module.split(".")
    if parts[0] != "joyrl_ray":
        return None
    head = parts[1] if len(parts) > 1 else "export_minari"  # the package itself: the top
    return LAYERS.index(head) if head in LAYERS else 0


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def upward_imports(path: Path) -> list[str]:
    here = layer_of(module_name(path))
    assert here is not None
    found = []
    for line, module in imported_modules(parse(path)):
        there = layer_of(module)
        if there is not None and there > here:
            found.append(f"{rel(path)}:{line}: imports {module} (layer {LAYERS[there]!r})")
    return found


def test_runtime_folders_import_only_downward() -> None:
    """wire < data < control < roles < flows < backends < run < sweep < the export commands:
    no import circle between folders, and a folder never needs one above it (the data plane
    knows nothing of control, the roles nothing of the flows that feed them)."""
    offending = [line for path in python_files(RUNTIME_DIR) for line in upward_imports(path)]
    assert not offending, "\n".join(offending)


def test_the_layer_check_catches_an_upward_import(tmp_path: Path) -> None:
    data = tmp_path / "joyrl_ray" / "data"
    data.mkdir(parents=True)
    sample = data / "sample.py"
    sample.write_text("from joyrl_ray.control.client import CoordinatorClient\n")
    here = layer_of("joyrl_ray.data.sample")
    there = layer_of("joyrl_ray.control.client")
    assert here is not None and there is not None and there > here
    assert [m for _, m in imported_modules(parse(sample))][0] == "joyrl_ray.control.client"


def needs_dispatches(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """``isinstance(x, SomeNeeds)`` calls: a decision on the kind of data flow."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"):
            continue
        if len(node.args) == 2:
            names = [n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)]
            for name in names:
                if name.endswith("Needs"):
                    yield node.lineno, name


def test_only_the_flows_decide_by_the_kind_of_data_flow() -> None:
    """A new flow is a module under ``joyrl_ray/flows/`` and its ``DataNeeds``: no other
    module tests which kind of needs a run has."""
    offending = [
        f"{rel(path)}:{line}: isinstance(..., {name})"
        for path in python_files(RUNTIME_DIR)
        if path.parent.name != "flows"
        for line, name in needs_dispatches(parse(path))
    ]
    assert not offending, "\n".join(offending)


def test_the_flow_check_catches_a_dispatch_on_needs(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("if isinstance(needs, RolloutNeeds | AsyncRolloutNeeds):\n    pass\n")
    assert [n for _, n in needs_dispatches(parse(sample))] == ["RolloutNeeds", "AsyncRolloutNeeds"]
