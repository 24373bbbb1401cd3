"""The step_latency wrapper: a slow env for measurements, selected by name on any env id.

Why: the scaling benchmark needs envs whose step time dominates (as a simulator's does);
the wrapper must add exactly the configured sleep per step and reset and change nothing
else the agent sees. Sleeps are recorded through a patched ``time.sleep`` (no timing).
"""

from __future__ import annotations

import numpy as np
import pytest

import envs.latency
from envs import EnvSpecError, make_env, probe_env
from envs.latency import StepLatency
from tests.support.runs import make_cfg


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    calls: list[float] = []
    monkeypatch.setattr(envs.latency.time, "sleep", calls.append)
    return calls


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_wrapper_from_env_cfg_sleeps_per_step_and_changes_nothing_else(
    tmp_path, sleeps, env_id: str
) -> None:
    cfg = make_cfg(
        tmp_path,
        f"env_cfg.id={env_id}",
        "env_cfg.wrappers=[step_latency]",
        "env_cfg.step_latency_s=0.005",
    )
    slow = make_env(cfg.env)
    plain = make_env(make_cfg(tmp_path, f"env_cfg.id={env_id}").env)
    assert isinstance(slow, StepLatency) and slow.step_latency_s == 0.005
    assert slow.observation_space == plain.observation_space
    assert slow.action_space == plain.action_space
    obs_slow, _ = slow.reset(seed=7)
    obs_plain, _ = plain.reset(seed=7)
    np.testing.assert_array_equal(obs_slow, obs_plain)
    plain.action_space.seed(7)
    steps = 0
    while steps < 20:
        action = plain.action_space.sample()
        a, b = slow.step(action), plain.step(action)
        steps += 1
        np.testing.assert_array_equal(a[0], b[0])
        assert a[1:4] == b[1:4]
        if a[2] or a[3]:
            break
    assert sleeps == [0.005] * (1 + steps)  # one reset and each step


def test_zero_latency_never_sleeps(tmp_path, sleeps) -> None:
    cfg = make_cfg(tmp_path, "env_cfg.wrappers=[step_latency]")
    env = make_env(cfg.env)
    env.reset(seed=0)
    env.step(env.action_space.sample())
    assert sleeps == []


def test_negative_latency_is_one_line_before_the_run(tmp_path) -> None:
    cfg = make_cfg(tmp_path, "env_cfg.wrappers=[step_latency]", "env_cfg.step_latency_s=-1")
    with pytest.raises(EnvSpecError) as err:
        probe_env(cfg.env)
    text = str(err.value)
    assert "\n" not in text and "step_latency" in text and "-1" in text, text
