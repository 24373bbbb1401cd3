"""Policies with memory (an lstm / gru layer in PPO's actor_layers), by hand: the memory is
zeroed where an episode starts inside a sequence and no gradient crosses that start; the
learner, replaying a stored rollout from the memory the worker stored, gets the worker's
own log-probabilities back; the evaluator keeps each episode's memory apart; a run with
memory on the single backend is reproducible."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from algos import get_algorithm
from algos.layers import LayerConfig
from algos.recurrent import MEMORY, RecurrentNetwork, episode_starts
from envs.config import EnvConfig
from joyrl_ray.batch import ACTIONS, NEXT_OBS, OBS, REWARDS, TERMINATED, TRUNCATED
from joyrl_ray.roles.evaluator.evaluator import Evaluator

CPU = torch.device("cpu")
OBS_SPACE = gym.spaces.Box(-5, 5, (4,))


def network(kind: str = "lstm") -> RecurrentNetwork:
    torch.manual_seed(0)
    layers = [
        LayerConfig("linear", [16], "tanh"),
        LayerConfig(kind, [8], "none"),
        LayerConfig("linear", [16], "relu"),
    ]
    return RecurrentNetwork(layers, (4,), 3)


def ppo_cfg(kind: str = "lstm", algo: str = "PPO", **overrides):
    spec = get_algorithm(algo)
    cfg = OmegaConf.structured(spec.config_cls())
    cfg.actor_layers = [LayerConfig(kind, [16], "none"), LayerConfig("linear", [16], "relu")]
    cfg.critic_layers = [LayerConfig("linear", [16], "relu")]
    for key, value in overrides.items():
        cfg[key] = value
    return spec, cfg


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_memory_is_zeroed_where_an_episode_starts_inside_a_sequence(kind: str) -> None:
    net = network(kind)
    steps, k = 12, 5
    obs = torch.randn(steps, 2, 4)
    memory = torch.randn(2, net.slots, net.hidden)
    starts = torch.zeros(steps, 2, dtype=torch.bool)
    starts[k, 0] = True  # env 0's next episode starts at step k
    _, features, _ = net.unroll(obs, memory, starts)
    _, fresh, _ = net.unroll(obs[k:], net.initial_memory(2))
    # From step k env 0 sees what a fresh episode sees; env 1 carries its memory on.
    torch.testing.assert_close(features[k:, 0], fresh[:, 0])
    assert not torch.allclose(features[k:, 1], fresh[:, 1])
    _, carried, _ = net.unroll(obs, memory)  # the same steps without the start
    assert not torch.allclose(carried[k:, 0], fresh[:, 0])


def test_no_gradient_crosses_an_episode_start() -> None:
    net = network()
    steps, k = 10, 4
    obs = torch.randn(steps, 1, 4, requires_grad=True)
    starts = torch.zeros(steps, 1, dtype=torch.bool)
    starts[k, 0] = True
    out, _, _ = net.unroll(obs, net.initial_memory(1), starts)
    out[k:].sum().backward()
    assert obs.grad is not None
    assert torch.all(obs.grad[:k] == 0)  # nothing before the start is blamed for what follows
    assert torch.any(obs.grad[k:] != 0)
    obs.grad = None
    out, _, _ = net.unroll(obs, net.initial_memory(1))  # no start: the error flows back
    out[k:].sum().backward()
    assert torch.any(obs.grad[:k] != 0)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_next_observations_are_read_with_the_memory_after_their_step(kind: str) -> None:
    """The unroll against a plain step loop, with episode ends inside."""
    net = network(kind)
    steps, envs = 16, 3
    rng = np.random.default_rng(1)
    done = rng.random((steps, envs)) < 0.15
    obs = torch.randn(steps, envs, 4)
    next_obs = torch.cat([obs[1:], torch.randn(1, envs, 4)])
    finals = torch.as_tensor(done)
    next_obs[finals] = torch.randn(int(finals.sum()), 4)  # an episode's true last observation
    starts = torch.as_tensor(episode_starts(done))
    memory = torch.randn(envs, net.slots, net.hidden)
    outs, next_outs, m = [], [], memory
    for t in range(steps):
        m = m * (~starts[t]).float()[:, None, None]
        head, _, after = net.step(obs[t], m)
        outs.append(head)
        next_outs.append(net.step(next_obs[t], after)[1])
        m = after
    out, _, next_features = net.unroll(obs, memory, starts, next_obs)
    torch.testing.assert_close(out, torch.stack(outs))
    assert next_features is not None
    torch.testing.assert_close(next_features, torch.stack(next_outs))


def rollout(policy, steps: int, envs: int, seed: int, env_action=None) -> dict[str, np.ndarray]:
    """A rollout as a worker collects it: CartPole envs stepped by the policy, whose memory
    is reset at each episode's end; columns ``[T, N]`` (``env_action`` maps the policy's
    actions to CartPole's)."""
    vector = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1") for _ in range(envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
    obs, _ = vector.reset(seed=seed)
    policy.reset_memory(envs)
    columns: dict[str, list] = {}
    for _ in range(steps):
        actions, extras = policy.act(obs, explore=True, env_steps=0)
        env_actions = actions if env_action is None else env_action(actions)
        next_obs, rewards, terminated, truncated, info = vector.step(env_actions)
        true_next = next_obs.copy()
        if "final_obs" in info:
            for i in np.flatnonzero(info["_final_obs"]):
                true_next[i] = info["final_obs"][i]
        policy.episodes_ended(terminated | truncated)
        step = {OBS: obs, ACTIONS: actions, REWARDS: rewards.astype(np.float32)}
        step.update({NEXT_OBS: true_next, TERMINATED: terminated, TRUNCATED: truncated})
        for key, value in {**step, **extras}.items():
            columns.setdefault(key, []).append(np.asarray(value))
        obs = next_obs
    vector.close()
    return {key: np.stack(values) for key, values in columns.items()}


@pytest.mark.parametrize("sequence_len", [0, 8])
def test_the_learner_replays_the_workers_log_probs_from_the_stored_memory(
    sequence_len: int,
) -> None:
    spec, cfg = ppo_cfg(rollout_len=32, sequence_len=sequence_len, n_epochs=1)
    algorithm = spec.algorithm_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    policy = spec.policy_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    policy.set_weights(algorithm.get_weights())
    policy.seed(4)
    batch = rollout(policy, 32, 4, seed=2)
    done = batch[TERMINATED] | batch[TRUNCATED]
    assert done[:-1].any()  # episodes end inside the rollout: their memory is reset there
    assert batch[MEMORY].shape == (32, 4, 2, 16)
    actor = algorithm.policy.actor
    with torch.no_grad():
        # Every sequence replayed from the memory stored at its first step, as learn() does.
        length = sequence_len or 32
        for t0 in range(0, 32, length):
            part = slice(t0, t0 + length)
            starts = torch.as_tensor(episode_starts(done[part]))
            dist, _ = actor.unroll(
                torch.as_tensor(batch[OBS][part]), torch.as_tensor(batch[MEMORY][t0]), starts
            )
            log_prob = dist.log_prob(torch.as_tensor(batch[ACTIONS][part]).flatten())
            np.testing.assert_allclose(
                log_prob.numpy(), batch["log_prob"][part].reshape(-1), rtol=1e-4, atol=1e-5
            )
    # A memory carried across an episode end would not give them back.
    with torch.no_grad():
        dist, _ = actor.unroll(
            torch.as_tensor(batch[OBS]),
            torch.as_tensor(batch[MEMORY][0]),
            torch.zeros(32, 4, dtype=torch.bool),
        )
        carried = dist.log_prob(torch.as_tensor(batch[ACTIONS]).flatten()).numpy()
    assert not np.allclose(carried, batch["log_prob"].reshape(-1), atol=1e-4)
    stats = algorithm.learn(batch).metrics
    assert stats["approx_kl"] >= 0 and np.isfinite(stats["loss"])


@pytest.mark.parametrize("algo", ["APPO", "IMPALA"])
def test_v_trace_reads_log_pi_over_the_rollout_from_the_stored_memory(algo: str) -> None:
    """Acted by the learner's own weights, the rollout's ``log pi`` is its ``log mu``: every
    importance ratio is 1."""
    spec, cfg = ppo_cfg("gru", algo, rollout_len=32)
    algorithm = spec.algorithm_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    policy = spec.policy_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    policy.set_weights(algorithm.get_weights())
    batch = rollout(policy, 32, 4, seed=5)
    assert (batch[TERMINATED] | batch[TRUNCATED])[:-1].any()
    obs = torch.as_tensor(batch[OBS]).flatten(0, 1)
    actions = algorithm._flat_actions(batch[ACTIONS], 32 * 4)
    values = torch.zeros(32, 4)
    _, _, log_pi = algorithm._targets(batch, obs, actions, values, values)
    np.testing.assert_allclose(log_pi.numpy(), batch["log_prob"].reshape(-1), atol=1e-5)
    assert np.isfinite(algorithm.learn(batch).metrics["loss"])


@pytest.mark.parametrize("algo", ["APPO", "IMPALA"])
def test_a_rollout_acted_by_older_weights_starts_its_update_at_ratio_one(algo: str) -> None:
    """The rollout's ``log pi`` (the ratio's reference) is read the way the minibatches read
    it, each sequence from the memory stored at its first step: before the first gradient
    step the ratio is 1 and the KL 0, however old the weights that acted."""
    spec, cfg = ppo_cfg("lstm", algo, rollout_len=32, sequence_len=8, n_epochs=1)
    cfg.minibatch_size = 32 * 4  # one minibatch: its statistics are those before any step
    cfg.state_dependent_std = False
    space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    algorithm = spec.algorithm_cls(cfg, OBS_SPACE, space, CPU)
    policy = spec.policy_cls(cfg, OBS_SPACE, space, CPU)
    policy.set_weights(algorithm.get_weights())
    policy.seed(3)
    stale = rollout(policy, 32, 4, seed=6, env_action=lambda a: (a[:, 0] > 0).astype(np.int64))
    torch.manual_seed(0)
    with torch.no_grad():  # the learner's weights moved on since the workers acted
        for parameter in algorithm.policy.actor.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    stats = algorithm.learn(stale).metrics
    assert stats["approx_kl"] < 1e-6, stats
    assert stats["clip_frac"] == 0.0, stats


def recurrent_evaluator(mode: str) -> Evaluator:
    spec, cfg = ppo_cfg()
    torch.manual_seed(3)
    policy = spec.policy_cls(cfg, OBS_SPACE, gym.spaces.Discrete(2), CPU)
    env_cfg = OmegaConf.structured(EnvConfig(id="CartPole-v1"))
    return Evaluator(env_cfg, policy, seed=1, vector_mode=mode)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_evaluation_keeps_each_episodes_memory_apart(mode: str) -> None:
    """Episodes side by side (ending at different steps, new ones starting in their envs)
    return what the same episodes played one at a time return."""
    one_by_one, side_by_side = recurrent_evaluator("sync"), recurrent_evaluator(mode)
    try:
        alone = sorted(one_by_one.run_episode()[0] for _ in range(8))
        together = side_by_side.evaluate(8)
        assert sorted(together.returns) == alone
        assert len(set(alone)) > 1  # episodes of different lengths
    finally:
        one_by_one.close()
        side_by_side.close()


@pytest.mark.parametrize(
    ("algo", "override", "message"),
    [
        ("DQN", "value_layers", "algo_cfg.value_layers[0].layer_type"),
        ("SAC", "actor_layers", "algo_cfg.actor_layers[0].layer_type"),
        ("PPO", "critic_layers", "algo_cfg.critic_layers[0].layer_type"),
    ],
)
def test_recurrent_layers_where_no_sequence_learning_exists_are_refused(
    algo: str, override: str, message: str
) -> None:
    spec = get_algorithm(algo)
    cfg = spec.config_cls()
    setattr(cfg, override, [LayerConfig("lstm", [16], "none")])
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cfg.check()


def test_a_sequence_length_that_does_not_divide_the_rollout_is_refused() -> None:
    spec = get_algorithm("PPO")
    cfg = spec.config_cls()
    cfg.rollout_len, cfg.sequence_len = 32, 5
    with pytest.raises(ValueError, match="sequence_len=5 does not divide"):
        cfg.check()
