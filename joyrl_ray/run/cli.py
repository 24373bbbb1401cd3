"""From command-line input to a finished run, with one clear line for any bad input.

The signal handlers go in before the heavy imports (torch, gymnasium, Ray), so that a
Ctrl-C or SIGTERM at any moment of the start-up ends the run with one line too.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from joyrl_ray.run.signals import STARTING, Interrupted, StopSignals, handling_signals

if TYPE_CHECKING:
    from joyrl_ray.run.runner import RunResult

EXIT_BAD_INPUT = 2


def _shown(value: float) -> str:
    """A return as people read it: 475.3, -152.0, and 0.978 (not 1.0) on small scales."""
    return f"{value:.1f}" if abs(value) >= 10 else f"{value:.3g}"


def print_result(result: RunResult) -> None:
    """The result line and the task directory (the last line), or what failed and how to resume."""
    summary = result.summary
    line = (
        f"{summary['mode']} {summary['algo']} on {summary['env_id']}: "
        f"{summary['env_steps']} env steps, {summary['episodes']} episodes, "
        f"{summary['updates']} updates in {summary['wall_time_s']:.1f}s ({summary['stop_reason']})"
    )
    if summary.get("eval_history"):
        best = max(e["return_mean"] for e in summary["eval_history"])
        last = summary["eval_history"][-1]["return_mean"]
        line += f"; best eval return {_shown(best)} (last {_shown(last)})"
    if "return_mean" in summary:
        line += f"; test return {_shown(summary['return_mean'])} +- {_shown(summary['return_std'])}"
    if summary.get("error"):
        print(f"error: {summary['error']}", file=sys.stderr)
    if summary.get("resume_command"):
        print(f"resume with: {summary['resume_command']}", file=sys.stderr)
    if summary.get("bottleneck_line"):
        print(summary["bottleneck_line"])
    print(line)
    print(result.task_dir, flush=True)


def run_from_cli(
    yaml_path: str | None, overrides: list[str], started_at: float | None = None
) -> int:
    """Exit code 0 (done), 1 (failed), 2 (bad input, before anything started), 128 + signal."""
    started_at = started_at or time.time()
    with handling_signals() as signals:
        try:
            return _run(yaml_path, overrides, started_at, signals)
        except BaseException as exc:
            # Interrupted lands anywhere in the start-up code, which may turn it into another
            # error on the way out: while starting, a signal is the reason.
            if signals.received is None or signals.phase != STARTING:
                raise
            signum = exc.signum if isinstance(exc, Interrupted) else signals.received
            interrupted = Interrupted(signum)
    # nothing was saved, and what had started is closed
    print(f"interrupted ({interrupted}) before the run started", file=sys.stderr)
    return interrupted.exit_code


def _run(
    yaml_path: str | None, overrides: list[str], started_at: float, signals: StopSignals
) -> int:
    from envs.registry import EnvSpecError
    from joyrl_ray.backends.ray_cluster import ClusterError, start_session
    from joyrl_ray.config import ConfigError, RunConfig, load_config
    from joyrl_ray.run.checkpoint import CheckpointError

    session = None
    try:
        cfg = RunConfig.from_omegaconf(load_config(yaml_path, overrides))
        session = start_session(cfg.general)  # Ray starts while the runner's imports load
        from joyrl_ray.run.runner import run

        result = run(cfg, started_at=started_at, announce=print_result, session=session)
    except (ConfigError, CheckpointError, ClusterError, EnvSpecError) as exc:
        if signals.received is not None:  # a signal's exception, turned into this one
            raise
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if session is not None:  # run() closes it; this covers a failure before run()
            session.close()
    return result.exit_code
