"""A checkpoint loaded into an algorithm built with other learning rates keeps its Adam
moments and trains at the new rates: a resume with a changed ``algo_cfg.lr`` (and a
population-based sweep's mutated one) takes effect, as SB3's ``load(custom_objects=...)``.
"""

from __future__ import annotations

import pytest
import torch

from algos import get_algorithm
from envs.probe import probe_env
from joyrl_ray.config import RunConfig, build_config

CASES = {
    "DQN": ("CartPole-v1", ("lr",)),
    "PPO": ("CartPole-v1", ("lr", "critic_lr")),
    "SAC": ("Pendulum-v1", ("actor_lr", "critic_lr", "alpha_lr")),
    "TD3": ("Pendulum-v1", ("actor_lr", "critic_lr")),
}


def build(algo: str, lr: float) -> object:
    env_id, keys = CASES[algo]
    data = {"general_cfg": {"algo_name": algo}, "env_cfg": {"id": env_id}}
    cfg = RunConfig.from_omegaconf(build_config(data, {"algo_cfg": dict.fromkeys(keys, lr)}))
    torch.manual_seed(0)
    spaces = probe_env(cfg.env)
    return get_algorithm(algo).algorithm_cls(cfg.algo, *spaces, torch.device("cpu"))


def optimizers(algorithm: object) -> dict[str, torch.optim.Optimizer]:
    return {
        name: getattr(algorithm, name)
        for name in algorithm.state_attrs  # type: ignore[attr-defined]
        if isinstance(getattr(algorithm, name), torch.optim.Optimizer)
    }


def take_a_step(optimizer: torch.optim.Optimizer) -> None:
    """One Adam step on a made-up loss, so that the optimizer has moments to carry."""
    optimizer.zero_grad()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    sum(p.square().sum() for p in params).backward()  # type: ignore[union-attr]
    optimizer.step()


@pytest.mark.parametrize("algo", list(CASES))
def test_a_checkpoint_loaded_with_new_learning_rates_keeps_its_moments_and_uses_the_new_rates(
    algo: str,
) -> None:
    trained = build(algo, lr=1e-3)
    for optimizer in optimizers(trained).values():
        take_a_step(optimizer)
    checkpoint = trained.state_dict()  # type: ignore[attr-defined]

    resumed = build(algo, lr=2.5e-4)
    resumed.load_state_dict(checkpoint)  # type: ignore[attr-defined]

    for name, optimizer in optimizers(resumed).items():
        old = optimizers(trained)[name]
        assert [g["lr"] for g in optimizer.param_groups] == [2.5e-4] * len(old.param_groups)
        moments = [s["exp_avg"] for s in optimizer.state.values()]
        expected = [s["exp_avg"] for s in old.state.values()]
        assert len(moments) == len(expected) > 0, name
        assert all(torch.equal(a, b) for a, b in zip(moments, expected, strict=True)), name
