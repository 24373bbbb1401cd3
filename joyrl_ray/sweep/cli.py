"""From the command line to a finished sweep (``python main.py --yaml ... --sweep ...``),
with one clear line for any bad input, before Ray starts."""

from __future__ import annotations

import sys
from pathlib import Path

from joyrl_ray.run.signals import Interrupted, handling_signals

EXIT_BAD_INPUT = 2


def has_sweep_section(yaml_path: str | None) -> bool:
    """Whether the run yaml holds a ``sweep_cfg`` section (then it is a sweep)."""
    from joyrl_ray.sweep.spec import split_run_yaml

    try:
        return split_run_yaml(yaml_path)[1] is not None
    except Exception:  # a bad yaml: the run's own reading says what is wrong
        return False


def _check_rungs(grace_env_steps: int | None, max_env_steps: int) -> None:
    """ASHA's first rung must come within a trial's budget: past it, every trial would end
    before ASHA could stop one (and Tune refuses a rung past twice the budget)."""
    from joyrl_ray.config import ConfigError

    if grace_env_steps is not None and 0 < max_env_steps < grace_env_steps:
        raise ConfigError(
            f"sweep asha.grace_env_steps={grace_env_steps} is past general_cfg.max_env_steps="
            f"{max_env_steps}: every trial would end before ASHA's first rung (allowed: 1 to "
            f"{max_env_steps})"
        )


def sweep_from_cli(
    yaml_path: str | None,
    sweep_path: str | None,
    overrides: list[str],
    resume_dir: str | None = None,
) -> int:
    """Exit code 0 (some trial ran), 1 (every trial failed), 2 (bad input), 128 + signal.
    ``resume_dir``: go on with the interrupted sweep there (``--resume``)."""
    with handling_signals() as signals:
        from envs.registry import EnvSpecError
        from joyrl_ray.backends.ray_cluster import ClusterError, RaySession
        from joyrl_ray.backends.ray_version import check_ray_version
        from joyrl_ray.config import ConfigError, RunConfig, build_config, parse_overrides
        from joyrl_ray.sweep.request import SweepRequest
        from joyrl_ray.sweep.spec import parse_sweep, read_sweep_file, split_run_yaml

        session = None
        try:
            resume = Path(resume_dir) if resume_dir is not None else None
            if resume is not None:
                saved = SweepRequest.load(resume)
                if yaml_path is not None or sweep_path is not None or overrides:
                    raise ConfigError(
                        "--resume takes the sweep's directory alone (its run config, "
                        "overrides and sweep are saved there)"
                    )
                yaml_data, section = saved.run_yaml, saved.sweep
                overrides = saved.overrides
            else:
                yaml_data, section = split_run_yaml(yaml_path)
            if sweep_path is not None and section is not None:
                raise ConfigError(
                    f"--sweep {sweep_path} and a sweep_cfg section in --yaml: give one"
                )
            cfg = RunConfig.from_omegaconf(build_config(yaml_data, parse_overrides(overrides)))
            if cfg.general.mode != "train":
                raise ConfigError(
                    f"general_cfg.mode={cfg.general.mode}: a sweep trains (allowed: train)"
                )
            data = read_sweep_file(sweep_path) if sweep_path is not None else section
            spec = parse_sweep(data, yaml_data, overrides, default_seed=cfg.general.seed)
            _check_rungs(spec.grace_env_steps, cfg.general.max_env_steps)
            from joyrl_ray.sweep.sweep import check_tune_installed, print_sweep_result, run_sweep

            check_tune_installed(spec)
            check_ray_version()
            session = RaySession(cfg.general.ray_address, num_cpus=cfg.general.ray_num_cpus)
            request = SweepRequest(yaml_data, list(overrides), data)
            result = run_sweep(spec, request, session, resume)
        except (ConfigError, ClusterError, EnvSpecError) as exc:
            if signals.received is not None:  # a signal's exception, turned into this one
                raise
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        except Interrupted as exc:  # while starting, or a second signal during the sweep
            print(
                f"interrupted ({exc}): stopped at once; a sweep that printed its directory "
                "goes on with: python main.py --resume <that directory>",
                file=sys.stderr,
            )
            return exc.exit_code
        finally:
            if session is not None:
                session.close()
    print_sweep_result(result)
    return result.exit_code
