"""``python -m joyrl_ray.export <task> --format onnx|torchscript [--out FILE]
[--checkpoint best|last|<update>] [--force]``: see :mod:`joyrl_ray.export`."""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from joyrl_ray.config.general import GeneralConfig
from joyrl_ray.export.inputs import (
    CHECKPOINT_HINT,
    SUFFIXES,
    ExportError,
    check_checkpoint,
    check_format,
    find_task,
)

if TYPE_CHECKING:
    from algos.export import ActingGraph

EXIT_FAILED, EXIT_BAD_INPUT = 1, 2
USAGE = (
    "python -m joyrl_ray.export <task> --format onnx|torchscript [--out FILE] "
    "[--checkpoint best|last|<update>] [--force]"
)


class CheckFailed(RuntimeError):
    """The export or its check failed; nothing was written. The message is the one line."""


class _Parser(argparse.ArgumentParser):
    """argparse, its refusals in one line (its own are a usage block and a line)."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {message}; usage: {USAGE}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(
        prog="python -m joyrl_ray.export",
        usage=USAGE,
        description="Export a trained policy's greedy acting to one ONNX or TorchScript file, "
        "then check the file's actions against torch's on observations from the env.",
    )
    parser.add_argument("task", help="task directory (a name under --tasks-dir, or a path)")
    parser.add_argument("--format", required=True, help="onnx or torchscript")
    parser.add_argument(
        "--out", help="file to write (default: <task>/exported/policy_<checkpoint>.onnx|.pt)"
    )
    parser.add_argument("--checkpoint", default="best", help=CHECKPOINT_HINT)
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")
    parser.add_argument(
        "--tasks-dir", default=GeneralConfig.tasks_dir, help="where task directories live"
    )
    return parser.parse_args(argv)


def check_out(out: Path, force: bool) -> None:
    """Refuse to write over a folder, or over a file unless ``force``."""
    if out.is_dir():
        raise ExportError(f"--out {out} is a folder; allowed: a file path")
    if out.exists() and not force:
        raise ExportError(f"--out {out} exists; allowed: another --out, or --force to replace it")


def export(args: argparse.Namespace) -> str:
    """Write and check the file; the line that says what was written."""
    fmt = args.format
    check_format(fmt)
    task = find_task(args.task, args.tasks_dir)
    check_checkpoint(task, args.checkpoint)
    if args.out:
        check_out(Path(args.out), args.force)

    from algos.export import NotExportable, with_normalized_observations
    from joyrl_ray.export import check, formats
    from joyrl_ray.export.source import load_source

    source = load_source(task, args.checkpoint)
    out = Path(
        args.out or source.task / "exported" / f"policy_{source.checkpoint.stem}{SUFFIXES[fmt]}"
    )
    check_out(out, args.force)
    try:
        graph = source.policy.acting_graph()
    except NotExportable as exc:
        raise ExportError(f"{source.cfg.general.algo_name}: {exc}") from None
    notes = list(source.notes)
    if source.obs_norm is not None:  # the run's frozen statistics go into the file
        graph = with_normalized_observations(graph, *source.obs_norm.transform())
        notes.append(f"obs normalized inside, {source.obs_norm.stats.count:.0f} observations")

    try:
        recording = check.record(
            source.policy, source.make_env, graph, policy_input=source.policy_input
        )
    except check.RecordingFailed as exc:
        raise CheckFailed(f"{exc}; nothing written") from None

    out.parent.mkdir(parents=True, exist_ok=True)
    # Beside the target (the rename stays on one filesystem), under a name no one else
    # writes; the exporter creates it, with the usual permissions.
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp{out.suffix}")
    try:
        try:
            formats.write(fmt, graph, tmp)
            run = formats.load(fmt, tmp, graph)
        except Exception as exc:  # the exporters raise many kinds; say which and what
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise CheckFailed(
                f"{fmt} export of {type(source.policy).__name__} failed "
                f"({type(exc).__name__}: {first}); nothing written"
            ) from exc
        result = check.compare(check.replay(run, graph, recording), recording.actions)
        if not result.passed:
            raise CheckFailed(f"{out}: {result.failure()}; nothing written")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    loaded = source.checkpoint.relative_to(source.task).as_posix()
    note = f"; {'; '.join(notes)}" if notes else ""
    return (
        f"exported {out} ({fmt}, from {loaded}{note}): {describe(graph)}; "
        f"check: {result.describe()}"
    )


def describe(graph: ActingGraph) -> str:
    """``inputs obs[batch,4] float32; outputs action[batch] int64, ...``."""
    from joyrl_ray.export.formats import signature

    def shown(entries: list[dict[str, Any]]) -> str:
        return ", ".join(
            f"{e['name']}[{','.join(map(str, e['shape']))}] {e['dtype']}" for e in entries
        )

    found = signature(graph)
    return f"inputs {shown(found['inputs'])}; outputs {shown(found['outputs'])}"


def main(argv: list[str] | None = None) -> int:
    """Exit code 0 (written and checked), 1 (the export or its check failed), 2 (bad input)."""
    args = parse(argv)
    try:
        line = export(args)
    except ExportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CheckFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
