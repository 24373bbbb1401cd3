"""A sweep: many runs under Ray Tune, one trial per sampled config.

``python main.py --yaml cfg.yaml --sweep sweep.yaml [section.key=value ...]``: the run
config is the yaml and the overrides as for one run; the sweep file
(:mod:`joyrl_ray.sweep.spec`) says which keys vary, the seeds, the metric, the scheduler.
The sweep directory (``<tasks_dir>/Sweep_<env>_<algo>_<time>/``) holds ``trials/`` (each
trial's task directory, as a run writes it), ``sweep_results.csv``, ``best_config.yaml``
(``python main.py --yaml best_config.yaml`` runs the best trial's config), the figure of
every trial's evaluations, and Tune's own files (``tune/``).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joyrl_ray.config import ConfigError, RunConfig, build_config, parse_overrides
from joyrl_ray.sweep.interrupt import stopping_tune_on_signals
from joyrl_ray.sweep.request import TUNE_DIR, SweepRequest
from joyrl_ray.sweep.results import TrialRow, write_outputs
from joyrl_ray.sweep.spec import Dimension, SweepSpec
from joyrl_ray.sweep.trial import ENV_STEPS, FINISHED, TrialTemplate, run_trial, trial_bundles

TUNE_EXTRA = "pip install -r requirements-tune.txt"
ENDED_FILE = "trials_ended.txt"  # the ids of the trials that ended, one a line


def check_tune_installed(spec: SweepSpec) -> None:
    """Ray Tune (and Optuna, for its searcher) are extras: one line when missing, before
    anything starts."""
    try:
        import ray.tune  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"--sweep needs Ray Tune ({exc.name or exc}): {TUNE_EXTRA}") from None
    if spec.searcher == "optuna":
        try:
            import optuna  # noqa: F401
        except ImportError:
            raise ConfigError(f"sweep searcher optuna needs Optuna: {TUNE_EXTRA}") from None


def searcher(spec: SweepSpec) -> Any:
    """Tune's search algorithm: None (random draws and grids) or Optuna's TPE, which
    scores a finished trial by its best evaluation (or its env steps to the threshold)."""
    if spec.searcher != "optuna":
        return None
    from ray.tune.search.optuna import OptunaSearch

    if spec.metric == "env_steps_to_threshold":
        return OptunaSearch(metric="env_steps_to_threshold", mode="min")
    return OptunaSearch(metric="best_eval_return", mode="max")


@dataclass
class SweepResult:
    sweep_dir: Path
    exit_code: int
    rows: list[TrialRow]
    interrupted_by: str = ""  # SIGINT / SIGTERM: the sweep stopped before its end


def domain(dim: Dimension) -> Any:
    """Tune's search-space object of one dimension."""
    from ray import tune

    values = list(dim.values)
    if dim.kind == "choice":
        return tune.choice(values)
    if dim.kind == "grid":
        return tune.grid_search(values)
    if dim.kind == "uniform":
        return tune.uniform(*values)
    if dim.kind == "loguniform":
        return tune.loguniform(*values)
    return tune.randint(int(values[0]), int(values[1]) + 1)  # both ends included


def search_space(spec: SweepSpec) -> dict[str, Any]:
    from ray import tune

    space: dict[str, Any] = {dim.key: domain(dim) for dim in spec.space}
    seeds = list(spec.seeds)
    space["general_cfg.seed"] = tune.grid_search(seeds) if len(seeds) > 1 else seeds[0]
    return space


def scheduler(spec: SweepSpec, budget: int) -> Any:
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler

    if spec.scheduler == "asha":
        grace = spec.grace_env_steps or max(1, budget // 8)
        # ASHA compares the trials' latest evaluations at each rung, whatever the sweep's
        # metric: env steps to the threshold tie for every trial not solved yet (and a
        # solved trial stops before the next rung), so it could not tell them apart.
        # max_t past the budget: a trial that ASHA keeps ends its run itself (its summary,
        # last checkpoint and final report); ASHA would stop it on reaching max_t.
        return ASHAScheduler(
            metric="eval_return_mean",
            mode="max",
            time_attr=ENV_STEPS,
            max_t=2 * budget,
            grace_period=grace,
            reduction_factor=spec.reduction_factor,
        )
    if spec.pbt is not None:
        from ray.tune.schedulers import PopulationBasedTraining

        pbt = spec.pbt
        # A choice mutates to a neighbouring value (Tune takes a list for that); a range
        # is scaled by 0.8 or 1.2, or drawn again.
        mutations = {
            dim.key: list(dim.values) if dim.kind == "choice" else domain(dim)
            for dim in pbt.mutations
        }
        return PopulationBasedTraining(
            time_attr=ENV_STEPS,
            metric="eval_return_mean",
            mode="max",
            perturbation_interval=pbt.perturbation_env_steps,
            hyperparam_mutations=mutations,
            quantile_fraction=pbt.quantile_fraction,
            resample_probability=pbt.resample_probability,
        )
    return FIFOScheduler()


def sweep_dir_for(cfg: RunConfig) -> Path:
    """A new sweep directory under ``tasks_dir``, as an absolute path: Ray Tune takes a
    relative storage path for a URI without a scheme, and its trials run in directories
    of their own, where the relative path would name another place."""
    env = cfg.env.id.replace("/", "-").replace(":", "-")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = Path(cfg.general.tasks_dir).resolve() / f"Sweep_{env}_{cfg.general.algo_name}_{stamp}"
    root.mkdir(parents=True, exist_ok=False)
    return root


def check_trial_fits(bundles: list[dict[str, float]], nodes: list[Any]) -> None:
    """A trial's layout must fit the cluster; one line naming the largest node otherwise."""
    need: dict[str, float] = {}
    for bundle in bundles:
        for key, value in bundle.items():
            need[key] = need.get(key, 0.0) + value
    have: dict[str, float] = {}
    for node in nodes:
        for key, value in node.resources.items():
            have[key] = have.get(key, 0.0) + value
    short = [k for k, v in need.items() if v > have.get(k, 0.0) + 1e-9]
    if short:
        largest = max(nodes, key=lambda n: n.resources.get("CPU", 0.0))
        raise ConfigError(
            f"a sweep trial needs {_shown(need)} (its driver, learners and workers), the "
            f"cluster has {_shown(have)} (largest node {largest.ip}: {_shown(largest.resources)}); "
            "lower general_cfg.n_workers / n_learners or worker_num_cpus / learner_num_cpus"
        )


def _shown(resources: dict[str, float]) -> str:
    keys = [k for k in ("CPU", "GPU") if k in resources] + sorted(
        k
        for k in resources
        if k not in ("CPU", "GPU", "memory", "object_store_memory") and not k.startswith("node:")
    )
    return ", ".join(f"{resources[k]:g} {k}" for k in keys)


def run_sweep(
    spec: SweepSpec, request: SweepRequest, session: Any, resume: Path | None = None
) -> SweepResult:
    """Run the sweep on ``session``'s Ray (started or attached as for one run); ``resume``:
    the directory of an interrupted one to go on with (finished trials stay as they are,
    unfinished ones start again from their last checkpoint, or from the start)."""
    from ray import tune
    from ray.tune import PlacementGroupFactory

    from joyrl_ray.backends.placement import alive_nodes

    base = parse_overrides(request.overrides)
    cfg = RunConfig.from_omegaconf(build_config(request.run_yaml, base))
    bundles = trial_bundles(cfg)
    session.wait()
    check_trial_fits(bundles, alive_nodes())
    root = resume.resolve() if resume is not None else sweep_dir_for(cfg)
    if resume is not None and not tune.Tuner.can_restore(str(root / TUNE_DIR)):
        raise ConfigError(f"--resume {root}: Ray Tune saved no state there to go on from")
    # Before Tune starts: whatever fails from here on, the directory it left is named.
    print(f"sweep: {root}", flush=True)
    every = spec.pbt.perturbation_env_steps if spec.pbt is not None else None
    template = TrialTemplate(
        request.run_yaml, base, str(root / "trials"), checkpoint_env_steps=every
    )
    trainable = tune.with_resources(
        tune.with_parameters(run_trial, template=template),
        PlacementGroupFactory(bundles, strategy="PACK"),
    )
    budget = cfg.general.max_env_steps
    if resume is not None:
        tuner = tune.Tuner.restore(
            str(root / TUNE_DIR), trainable, resume_unfinished=True, resume_errored=False
        )
    else:
        request.save(root)
        tuner = tune.Tuner(
            trainable,
            param_space=search_space(spec),
            # The sweep's metric picks the best trial (results.pick_best); the scheduler has
            # its own.
            tune_config=tune.TuneConfig(
                scheduler=scheduler(spec, budget),
                search_alg=searcher(spec),
                num_samples=spec.num_samples,
                max_concurrent_trials=spec.max_concurrent_trials,
                time_budget_s=spec.time_budget_s,
                reuse_actors=False,  # a restored trial is a new process: its run starts afresh
            ),
            run_config=tune.RunConfig(
                name=TUNE_DIR,
                storage_path=str(root),
                verbose=0,
                callbacks=[trial_lines(root / ENDED_FILE)],
            ),
        )
    # verbose=0 is quiet only with Tune's older console output: no start box, no result
    # tables; the sweep prints its own line per trial (trial_lines).
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"
    with stopping_tune_on_signals() as signals:
        results = tuner.fit()
    # Stopped by a signal: a trial that had not ended was cut short (a resume runs it).
    cut = signals.exit_code is not None
    ended = ended_trials(root / ENDED_FILE)
    rows = [TrialRow.of(r, spec, root / "trials", budget, cut, ended) for r in results]
    write_outputs(root, rows, spec, cfg)
    if signals.exit_code is not None:
        return SweepResult(root, signals.exit_code, rows, interrupted_by=signals.name)
    failed = sum(row.status == "error" for row in rows)
    return SweepResult(root, 1 if failed == len(rows) else 0, rows)


def trial_lines(ended: Path) -> Any:
    """A Tune callback printing a line per trial that ended (Tune's own table is off:
    ``verbose=0``) and adding its id to the file ``ended`` (how a sweep stopped by a signal
    tells the trials that had ended from those it cut short). Made here, not at import:
    Ray Tune is an extra."""
    from ray.tune import Callback

    class TrialLines(Callback):
        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _line(trial, "finished" if trial.last_result.get(FINISHED) else "stopped early")
            _note_ended(ended, trial.trial_id)

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            _line(trial, "failed")
            _note_ended(ended, trial.trial_id)

    return TrialLines()


def _note_ended(file: Path, trial_id: str) -> None:
    with file.open("a") as f:
        f.write(trial_id + "\n")


def ended_trials(file: Path) -> set[str]:
    return set(file.read_text().split()) if file.is_file() else set()


def _line(trial: Any, what: str) -> None:
    last = trial.last_result or {}
    sampled = ", ".join(f"{k}={_short(v)}" for k, v in sorted(trial.config.items()))
    steps = last.get(ENV_STEPS)
    print(
        f"trial {trial.trial_id} {what}: best eval {_short(last.get('best_eval_return'))} at "
        f"{steps if steps is not None else '-'} env steps ({sampled})",
        flush=True,
    )


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def print_sweep_result(result: SweepResult) -> None:
    rows = result.rows
    finished = [r for r in rows if r.status != "error"]
    best = next((r for r in rows if r.best), None)
    line = f"sweep: {len(rows)} trials, {len(finished)} ran"
    if best is not None:
        line += (
            f"; best {best.trial_id}: best eval {_short(best.best_eval)} ({best.overrides_text})"
        )
    print(line)
    if result.interrupted_by:
        done = sum(r.status in ("finished", "stopped early") for r in rows)
        print(
            f"sweep interrupted ({result.interrupted_by}) with {done} trials run to their end; "
            f"resume with: python main.py --resume {result.sweep_dir}",
            file=sys.stderr,
        )
    elif result.exit_code != 0:
        print("error: every trial failed; see sweep_results.csv", file=sys.stderr)
    print(result.sweep_dir, flush=True)
