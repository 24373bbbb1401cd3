"""Population-based training through ``python main.py --yaml ... --sweep sweep.yaml``.

Two PPO trials on CartPole, one process each, both at once, one with a learning rate too
small to learn in the budget (1e-5) and one that learns (1e-3); every 4,096 env steps PBT
ranks them (quantile 0.5: one is the bottom, one the top). By the second perturbation at
the latest, the top trial has a checkpoint and the bottom one restores it: its process is
replaced, and its new run resumes the other's checkpoint with the learning rate perturbed
(x0.8 or x1.2: no resampling here) and goes on from that checkpoint's env step count, its
accounting identity intact. The CSV says which trial it restored, at what env step.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import yaml

from tests.support.cli_runs import assert_accounting, summary_of
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


def run_lr(task: Path) -> float:
    return float(yaml.safe_load((task / "config.yaml").read_text())["algo_cfg"]["lr"])


@pytest.fixture(scope="module")
def pbt_sweep(tmp_path_factory):
    needs_extra("ray.tune", "requirements-tune.txt")
    tmp_path = tmp_path_factory.mktemp("pbt")
    args = sweep_args(
        tmp_path,
        PBT_SWEEP,
        "general_cfg.mp_backend=single",
        f"general_cfg.max_env_steps={BUDGET}",
    )
    return finished_sweep(tmp_path, TrackedRun(args, log_dir=tmp_path))


@pytest.mark.release
@pytest.mark.slow
@pytest.mark.ray_compat  # Tune's report with a checkpoint and its restore, on the oldest Ray too
@pytest.mark.timeout(600)
def test_a_pbt_trial_restores_another_trials_checkpoint_and_goes_on_from_its_env_steps(
    pbt_sweep,
) -> None:
    sweep_dir, rows = pbt_sweep
    assert len(rows) == 2, rows
    assert all(r["status"] == "finished" for r in rows), rows
    by_id = {r["trial_id"]: r for r in rows}
    restored = [r for r in rows if r["restored_from"]]
    assert restored, rows
    row = restored[0]
    found = re.fullmatch(r"(\S+) at (\d+) env steps", row["restored_from"].split("; ")[-1])
    assert found, row["restored_from"]
    donor, at = by_id[found.group(1)], int(found.group(2))
    assert donor is not row and 0 < at < BUDGET, (row, at)

    task = Path(row["task_dir"])
    summary = summary_of(task)
    assert Path(summary["resumed_from"]).parent == sweep_dir / "trials" / row["trial_id"]
    assert summary["env_steps"] >= BUDGET, summary["env_steps"]
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
