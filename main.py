"""joyrl-ray command line: ``python main.py [--yaml FILE] [--sweep FILE] [key=value ...]``,
or ``python main.py --resume SWEEP_DIR``."""

from __future__ import annotations

import time

STARTED_AT = time.time()  # before the heavy imports: run times count from the process start

import argparse  # noqa: E402
import sys  # noqa: E402


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="main.py",
        description="Train or test an RL agent; config = python defaults < --yaml < key=value.",
    )
    parser.add_argument("--yaml", help="yaml file with general_cfg / algo_cfg / env_cfg sections")
    parser.add_argument(
        "--sweep",
        help="sweep file (search space, seeds, metric, scheduler): many runs on Ray Tune",
    )
    parser.add_argument(
        "--resume",
        metavar="SWEEP_DIR",
        help="go on with an interrupted sweep (its directory, as the sweep printed it)",
    )
    parser.add_argument("overrides", nargs="*", help="section.key=value, e.g. general_cfg.seed=1")
    return parser.parse_intermixed_args(argv)  # --yaml before or after the overrides


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from joyrl_ray.sweep.cli import has_sweep_section, sweep_from_cli

    if args.resume is not None or args.sweep is not None or has_sweep_section(args.yaml):
        code = sweep_from_cli(args.yaml, args.sweep, args.overrides, args.resume)
    else:
        from joyrl_ray.run.cli import run_from_cli

        code = run_from_cli(args.yaml, args.overrides, started_at=STARTED_AT)
    from joyrl_ray.heap import freeze_startup_heap

    freeze_startup_heap()  # everything is written and closed: exit without a last full walk
    return code


if __name__ == "__main__":
    sys.exit(main())
