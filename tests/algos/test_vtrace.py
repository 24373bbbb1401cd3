"""V-trace against a hand-computed rollout, GAE(lambda=1) on on-policy data, and the paper's
sum (written out independently) with lambda < 1 and rho_bar != c_bar."""

import numpy as np
import pytest
import torch

from algos.ppo.gae import compute_gae
from algos.vtrace import VTrace, vtrace

GAMMA = 0.9


def column(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)[:, None]  # [T=5, N=1]


def test_vtrace_clips_ratios_cuts_at_episode_ends_and_bootstraps_truncation() -> None:
    # Ratios pi/mu 2.0 and 3.0 are clipped to rho_bar = c_bar = 1; 0.5 and 0.8 are kept.
    # t=1 is truncated (bootstrapped from its final observation's value, 10.0), t=2 is
    # terminated (its next value 7.0 must be ignored), t=4 ends the rollout (bootstrap 3.0).
    ratios = column(2.0, 0.5, 1.0, 0.8, 3.0)
    rewards = column(1, 2, 3, 4, 5)
    values = column(0.5, 1.0, 1.5, 2.0, 2.5)
    next_values = column(1.0, 10.0, 7.0, 2.5, 3.0)
    terminated = column(0, 0, 1, 0, 0).bool()
    truncated = column(0, 1, 0, 0, 0).bool()

    out = vtrace(
        torch.log(ratios), rewards, values, next_values, terminated, truncated, gamma=GAMMA
    )

    # By hand, rhos = cs = [1, .5, 1, .8, 1]:
    #   deltas: t0 1*(1 + .9*1 - .5) = 1.4     t1 .5*(2 + .9*10 - 1) = 5.0
    #           t2 1*(3 - 1.5) = 1.5            t3 .8*(4 + .9*2.5 - 2) = 3.4
    #           t4 1*(5 + .9*3 - 2.5) = 5.2
    #   v - V:  t4 5.2; t3 3.4 + .9*.8*5.2 = 7.144; t2 1.5 (terminated); t1 5.0 (truncated);
    #           t0 1.4 + .9*1*5.0 = 5.9
    np.testing.assert_allclose(out.vs[:, 0], [6.4, 6.0, 3.0, 9.144, 7.7], rtol=1e-6)
    #   advantages rho_t * (r_t + gamma * v_{t+1} - V_t), v_{t+1} the bootstrap at ends:
    #           t0 1*(1 + .9*6.0 - .5) = 5.9    t1 .5*(2 + .9*10 - 1) = 5.0
    #           t2 1*(3 - 1.5) = 1.5            t3 .8*(4 + .9*7.7 - 2) = 7.144
    #           t4 1*(5 + .9*3 - 2.5) = 5.2
    np.testing.assert_allclose(out.pg_advantages[:, 0], [5.9, 5.0, 1.5, 7.144, 5.2], rtol=1e-6)
    np.testing.assert_allclose(out.rhos[:, 0], [1.0, 0.5, 1.0, 0.8, 1.0], rtol=1e-6)


def test_vtrace_on_policy_targets_equal_gae_lambda_one_returns() -> None:
    rng = np.random.default_rng(0)
    shape = (16, 3)
    rewards = rng.normal(size=shape).astype(np.float32)
    values = rng.normal(size=shape).astype(np.float32)
    next_values = np.concatenate([values[1:], rng.normal(size=(1, 3))]).astype(np.float32)
    terminated = rng.random(shape) < 0.1
    truncated = (rng.random(shape) < 0.1) & ~terminated
    # At an episode end the next value is the final observation's, not the next row's.
    ends = terminated | truncated
    next_values[ends] = rng.normal(size=int(ends.sum()))

    out = vtrace(
        torch.zeros(shape),
        *(torch.as_tensor(a) for a in (rewards, values, next_values, terminated, truncated)),
        gamma=0.97,
    )
    _, returns = compute_gae(rewards, values, next_values, terminated, truncated, 0.97, 1.0)
    np.testing.assert_allclose(out.vs.numpy(), returns, rtol=1e-5, atol=1e-5)


def test_vtrace_refuses_non_positive_clipping_thresholds() -> None:
    zeros = torch.zeros((2, 1))
    with pytest.raises(ValueError, match="rho_bar and c_bar must be > 0"):
        vtrace(zeros, zeros, zeros, zeros, zeros, zeros, gamma=0.9, rho_bar=0.0)


def reference_vtrace(
    ratios: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    *,
    gamma: float,
    rho_bar: float,
    c_bar: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The paper's sum, written out for each step and env of a ``[T, N]`` rollout:
    ``v_s = V(x_s) + sum_{t=s}^{e} gamma^(t-s) (prod_{i=s}^{t-1} c_i) delta_t``, where ``e``
    is the step that ends the episode (terminated or truncated) or the rollout,
    ``c_i = lam * min(c_bar, pi/mu)``, ``delta_t = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))``
    with ``V(x_{t+1})`` the step's own next value (0 when terminated) and
    ``rho_t = min(rho_bar, pi/mu)``. Returns ``vs`` and the policy-gradient advantages
    ``rho_s (r_s + gamma v_{s+1} - V(x_s))``, ``v_{s+1}`` the next value at an end."""
    steps, envs = rewards.shape
    vs = np.zeros((steps, envs))
    advantages = np.zeros((steps, envs))
    for n in range(envs):
        for s in range(steps):
            v = values[s, n]
            trace = 1.0  # gamma^(t-s) * prod_{i=s}^{t-1} c_i
            for t in range(s, steps):
                rho = min(rho_bar, ratios[t, n])
                bootstrap = 0.0 if terminated[t, n] else next_values[t, n]
                v += trace * rho * (rewards[t, n] + gamma * bootstrap - values[t, n])
                if terminated[t, n] or truncated[t, n]:
                    break
                trace *= gamma * lam * min(c_bar, ratios[t, n])
            vs[s, n] = v
    for n in range(envs):
        for s in range(steps):
            ends = terminated[s, n] or truncated[s, n] or s == steps - 1
            next_v = next_values[s, n] if ends else vs[s + 1, n]
            next_v = 0.0 if terminated[s, n] else next_v
            rho = min(rho_bar, ratios[s, n])
            advantages[s, n] = rho * (rewards[s, n] + gamma * next_v - values[s, n])
    return vs, advantages


def off_policy_rollout(seed: int) -> dict[str, np.ndarray]:
    """A ``[T=24, N=3]`` rollout whose ratios pi/mu spread over [0.2, 5] (both sides of
    every threshold below), with episode ends of both kinds inside it."""
    rng = np.random.default_rng(seed)
    shape = (24, 3)
    terminated = rng.random(shape) < 0.08
    return {
        "ratios": np.exp(rng.uniform(np.log(0.2), np.log(5.0), shape)),
        "rewards": rng.normal(size=shape),
        "values": rng.normal(size=shape),
        "next_values": rng.normal(size=shape),
        "terminated": terminated,
        "truncated": (rng.random(shape) < 0.08) & ~terminated,
    }


def vtrace_and_reference(seed: int, **clipping: float) -> tuple[VTrace, np.ndarray, np.ndarray]:
    data = off_policy_rollout(seed)
    out = vtrace(
        torch.as_tensor(np.log(data["ratios"]), dtype=torch.float32),
        *(
            torch.as_tensor(data[key])
            for key in ("rewards", "values", "next_values", "terminated", "truncated")
        ),
        gamma=0.97,
        **clipping,
    )
    vs, advantages = reference_vtrace(**data, gamma=0.97, **clipping)
    return out, vs, advantages


@pytest.mark.parametrize("seed", [0, 1])
def test_vtrace_with_lambda_below_one_matches_the_papers_sum(seed: int) -> None:
    # APPO's shipped CartPole config: lambda 0.95, rho_bar = c_bar = 1.
    clipping = {"rho_bar": 1.0, "c_bar": 1.0, "lam": 0.95}
    out, vs, advantages = vtrace_and_reference(seed, **clipping)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), advantages, rtol=1e-5, atol=1e-5)
    # lambda matters here: the targets differ from lambda = 1's.
    lambda_one, _ = reference_vtrace(
        **off_policy_rollout(seed), gamma=0.97, rho_bar=1.0, c_bar=1.0, lam=1.0
    )
    assert np.abs(lambda_one - vs).max() > 0.05


@pytest.mark.parametrize(
    "clipping",
    [
        {"rho_bar": 1.5, "c_bar": 0.6, "lam": 1.0},
        {"rho_bar": 0.6, "c_bar": 1.5, "lam": 1.0},
        {"rho_bar": 2.0, "c_bar": 0.8, "lam": 0.9},
    ],
    ids=["rho_bar-above-c_bar", "c_bar-above-rho_bar", "lambda-0.9"],
)
def test_vtrace_clips_importance_weights_at_rho_bar_and_traces_at_c_bar(
    clipping: dict[str, float],
) -> None:
    out, vs, advantages = vtrace_and_reference(0, **clipping)
    np.testing.assert_allclose(out.vs.numpy(), vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.pg_advantages.numpy(), advantages, rtol=1e-5, atol=1e-5)
    expected_rhos = np.minimum(clipping["rho_bar"], off_policy_rollout(0)["ratios"])
    np.testing.assert_allclose(out.rhos.numpy(), expected_rhos, rtol=1e-5)
