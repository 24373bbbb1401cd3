"""Population-based training through ``python main.py --yaml ... --sweep sweep.yaml``.

Two PPO trials on CartPole, one process each, both at once, one with a learning rate too
small to learn in the budget (1e-5) and one that learns (1e-3); every 4,096 env steps PBT
ranks them (quantile 0.5: one is the bottom, one the top). By the second perturbation at
the latest, the top trial has a checkpoint and the bottom one restores it: its process is
replaced, and its new run resumes the other's checkpoint with the learning rate perturbed
(x0.8 or x1.2: no resampling here) and goes on from that checkpoint's env step count, its
accounting identity intact. The CSV says which trial it restored, at what env step.

That sweep (16k env steps a trial) is the release tier's. Each commit runs the same
hand-off at 2,048 env steps, an evaluation and a perturbation every 512, with a ranking
that is never in doubt: the bottom trial's episodes end after 4 steps
(``general_cfg.max_step``), so its every evaluation returns at most 4, below any CartPole
policy's (an episode lasts 8 steps or more). Whichever trial reports first, the top one has
a checkpoint by its second report and the bottom one restores it by its third, while the
top one still runs.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from tests.support.cli_runs import assert_accounting, step_latency, summary_of
from tests.support.procs import TrackedRun
from tests.support.runs import needs_extra
from tests.support.sweeps import finished_sweep, sweep_args

BUDGET = 16_384  # PPO on CartPole: an update every 1,024 env steps, an evaluation every 2
PBT_SWEEP = """\
space:
  algo_cfg.lr: {grid: [0.00001, 0.001]}
scheduler: pbt
pbt:
  perturbation_env_steps: 4096
  mutations:
    algo_cfg.lr: {loguniform: [0.00001, 0.003]}
  quantile_fraction: 0.5
  resample_probability: 0.0
max_concurrent_trials: 2
"""


def evals(task: Path) -> list[tuple[int, float]]:
    with (task / "results" / "evals.csv").open() as f:
        return [(int(r["env_steps"]), float(r["return_mean"])) for r in csv.DictReader(f)]


def run_config(task: Path) -> dict:
    return yaml.safe_load((task / "config.yaml").read_text())


def run_lr(task: Path) -> float:
    return float(run_config(task)["algo_cfg"]["lr"])


def pbt_sweep_of(
    tmp_path: Path, sweep: str, budget: int, *overrides: str
) -> tuple[Path, list[dict[str, str]]]:
    needs_extra("ray.tune", "requirements-tune.txt")
    args = sweep_args(
        tmp_path,
        sweep,
        "general_cfg.mp_backend=single",
        f"general_cfg.max_env_steps={budget}",
        *overrides,
    )
    return finished_sweep(tmp_path, TrackedRun(args, log_dir=tmp_path))


@pytest.fixture(scope="module")
def pbt_sweep(tmp_path_factory):
    return pbt_sweep_of(tmp_path_factory.mktemp("pbt"), PBT_SWEEP, BUDGET)


SMALL_BUDGET = 4096
#: The bottom trial is capped at 4 steps an episode; the mutation is the learning rate, which
#: PBT draws for each trial at its start and perturbs at a restore.
CAPPED_PBT_SWEEP = """\
space:
  general_cfg.max_step: {grid: [4, -1]}
scheduler: pbt
pbt:
  perturbation_env_steps: 1024
  mutations:
    algo_cfg.lr: {loguniform: [0.0001, 0.003]}
  quantile_fraction: 0.5
  resample_probability: 0.0
max_concurrent_trials: 2
"""


@pytest.fixture(scope="module")
def capped_pbt_sweep(tmp_path_factory):
    # A checkpoint and an evaluation (one episode) with every PPO update, 1,024 env steps;
    # every env step sleeps 3 ms, so that an interval lasts seconds in either trial (their
    # processes start a second or two apart) at little CPU.
    return pbt_sweep_of(
        tmp_path_factory.mktemp("capped_pbt"),
        CAPPED_PBT_SWEEP,
        SMALL_BUDGET,
        "general_cfg.model_save_fre=1",
        "general_cfg.online_eval_episode=1",
        *step_latency(0.003),
    )


def assert_went_on_from_its_donor(
    sweep_dir: Path, rows: list[dict[str, str]], row: dict[str, str], budget: int
) -> dict[str, str]:
    """Trial ``row`` restored another's checkpoint and went on from its env steps to
    ``budget``, with the donor's curve up to there and its learning rate perturbed; the
    donor's row."""
    assert len(rows) == 2, rows
    assert all(r["status"] == "finished" for r in rows), rows
    by_id = {r["trial_id"]: r for r in rows}
    found = re.fullmatch(r"(\S+) at (\d+) env steps", row["restored_from"].split("; ")[-1])
    assert found, row["restored_from"]
    donor, at = by_id[found.group(1)], int(found.group(2))
    assert donor is not row and 0 < at < budget, (row, at)

    task = Path(row["task_dir"])
    summary = summary_of(task)
    assert Path(summary["resumed_from"]).parent == sweep_dir / "trials" / row["trial_id"]
    assert summary["env_steps"] >= budget, summary["env_steps"]
    assert_accounting(summary)
    # Its curve is the donor's up to the checkpoint, then its own from there on.
    mine = evals(task)
    steps = [s for s, _ in mine]
    assert steps == sorted(set(steps)), steps
    inherited = [e for e in mine if e[0] <= at]
    assert inherited and inherited == evals(Path(donor["task_dir"]))[: len(inherited)]
    assert any(s > at for s in steps), (steps, at)
    # It trains with the donor's learning rate perturbed, not its own.
    if not donor["restored_from"]:
        donor_lr = run_lr(Path(donor["task_dir"]))
        lr = run_lr(task)
        assert any(lr == pytest.approx(f * donor_lr) for f in (0.8, 1.2)), (lr, donor_lr)
    return donor


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.ray_compat  # Tune's report with a checkpoint and its restore, on the oldest Ray too
@pytest.mark.timeout(600)
def test_a_pbt_trial_restores_another_trials_checkpoint_and_goes_on_from_its_env_steps(
    pbt_sweep,
) -> None:
    sweep_dir, rows = pbt_sweep
    restored = [r for r in rows if r["restored_from"]]
    assert restored, rows
    assert_went_on_from_its_donor(sweep_dir, rows, restored[0], BUDGET)


def trial_runs(sweep_dir: Path, row: dict[str, str]) -> list[Path]:
    """A trial's runs, oldest first: a restore (of another's checkpoint or, after a pause,
    of its own) adds one beside the first."""
    return sorted((sweep_dir / "trials" / row["trial_id"]).glob("Train_*"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pbt_trial_ranked_last_goes_on_from_the_others_checkpoint_its_env_steps_and_evals(
    capped_pbt_sweep,
) -> None:
    sweep_dir, rows = capped_pbt_sweep
    assert len(rows) == 2 and all(r["status"] == "finished" for r in rows), rows
    # The trial that began capped (a row's overrides are its trial's config at its end).
    first_cap = {r["trial_id"]: run_config(trial_runs(sweep_dir, r)[0]) for r in rows}
    (capped,) = [r for r in rows if first_cap[r["trial_id"]]["general_cfg"]["max_step"] == 4]
    (donor,) = [r for r in rows if r is not capped]
    # Its first restore: the other trial's checkpoint, taken before that trial's end.
    found = re.fullmatch(r"(\S+) at (\d+) env steps", capped["restored_from"].split("; ")[0])
    assert found and found.group(1) == donor["trial_id"], capped["restored_from"]
    at = int(found.group(2))
    assert 0 < at < SMALL_BUDGET, capped["restored_from"]
    first, restored = trial_runs(sweep_dir, capped)[:2]
    assert run_config(first)["general_cfg"]["max_step"] == 4
    # The restored run is the donor's config (episodes no longer capped), its learning rate
    # perturbed, and its curve is the donor's up to the checkpoint, then its own from the
    # checkpoint's env steps on (an update is 1,024 env steps; from zero, it would evaluate
    # at 1,024 again).
    config = run_config(restored)
    assert config["general_cfg"]["max_step"] == -1
    donor_lr = float(first_cap[donor["trial_id"]]["algo_cfg"]["lr"])
    lr = float(config["algo_cfg"]["lr"])
    assert any(lr == pytest.approx(f * donor_lr) for f in (0.8, 1.2)), (lr, donor_lr)
    curve = evals(restored)
    inherited = [e for e in curve if e[0] <= at]
    assert inherited and inherited == evals(trial_runs(sweep_dir, donor)[0])[: len(inherited)], (
        curve
    )
    assert inherited[-1][0] == at, (curve, at)
    own = [s for s, _ in curve[len(inherited) :]]
    assert own and own[0] == at + 1024, (curve, at)
    # The trial ends at the budget, its last run's accounting intact.
    summary = summary_of(Path(capped["task_dir"]))
    assert Path(summary["resumed_from"]).parent == sweep_dir / "trials" / capped["trial_id"]
    assert summary["env_steps"] >= SMALL_BUDGET
    assert_accounting(summary)
