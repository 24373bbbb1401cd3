"""A seeded on-policy run learns and is evaluated the same on Ray as in one process, a
policy with memory (an LSTM, on CartPole without its velocities) included.

On Ray, two workers' rollouts reach the DataServer in whatever order their pushes race;
it joins each iteration's rollouts in worker order, so a seeded PPO run takes the very
same gradient steps as with ``mp_backend: single`` and ends with the same parameters;
also when one worker starts so late that the other has already reported a rollout (a
loaded machine), since a worker's random streams start from where the run began.
Its checkpoints come faster than the driver takes them (a few at a time); each is still
evaluated, with the same episodes, so the two backends report the same evaluations.

Both runs go through the runner as ``main.py`` calls it, in the test's process: the Ray run
on the test session's Ray (its workers, learner and DataServer real Ray actors).
"""

from __future__ import annotations

import pytest

from tests.support.cli_runs import evaluations, train_in_process

COMMON = (
    "general_cfg.n_workers=2",
    "general_cfg.n_envs_per_worker=4",
    "algo_cfg.rollout_len=64",
    "general_cfg.max_env_steps=4096",  # 8 iterations of 2 x 4 x 64 env steps
    "general_cfg.model_save_fre=1",  # a checkpoint, and an evaluation, every update
)
#: case -> (config, the run's overrides). The feed-forward case starts its second worker
#: late on Ray (tests/support/staggered_envs.py): the first has reported a rollout by then.
RUNS = {
    "mlp-late-worker": (
        "cartpole_ppo",
        (
            *COMMON,
            "env_cfg.id=tests.support.staggered_envs:LateSecondWorkerEnv",
            "env_cfg.kwargs.marks={marks}",
        ),
    ),
    "lstm": (
        "cartpole_novel_ppo_lstm",
        (
            *COMMON,
            "algo_cfg.sequence_len=16",  # 4 sequences an env, each from its stored memory
            "algo_cfg.n_minibatches=2",
            "algo_cfg.n_epochs=4",
        ),
    ),
}


@pytest.mark.slow
@pytest.mark.timeout(420)
@pytest.mark.parametrize("case", list(RUNS))
def test_seeded_ppo_on_ray_learns_and_is_evaluated_as_on_the_single_backend(
    ray_session, tmp_path, case: str
) -> None:
    config, overrides = RUNS[case]
    (tmp_path / "marks").mkdir()
    overrides = tuple(o.format(marks=tmp_path / "marks") for o in overrides)
    single, ray = (
        train_in_process(
            tmp_path / backend, config, (*overrides, f"general_cfg.mp_backend={backend}"), None
        )
        for backend in ("single", "ray")
    )
    assert single["updates"] == ray["updates"] >= 6, (single["updates"], ray["updates"])
    assert ray["learners"][0]["params_digest"] == single["learners"][0]["params_digest"]
    evaluated = evaluations(ray)
    assert evaluated == evaluations(single)
    assert len(evaluated) >= 6 and ray["evals_skipped"] == 0
