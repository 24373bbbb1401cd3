"""Every algorithm's :meth:`Policy.acting_graph` acts as the policy does (``act`` without
exploration, then ``env_action``), on every action space it supports, with memory and on
each kind of flat observation; a traced copy of it too, at another batch size.

The Box bounds leave out 0 and are not symmetric, so that a graph without the clipping
(PPO) or the scaling (SAC, TD3) of ``env_action`` gives other actions.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import ALGORITHMS, get_algorithm
from algos.base import Policy
from algos.export import ActingGraph, NotExportable
from algos.layers import LayerConfig
from joyrl_ray.export import formats
from tests.support.runs import needs_extra

CPU = torch.device("cpu")
FLAT = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACTION_SPACES: dict[type[gym.Space], gym.Space] = {
    gym.spaces.Discrete: gym.spaces.Discrete(3),
    gym.spaces.Box: gym.spaces.Box(
        np.array([0.2, -3.0], np.float32), np.array([0.9, -2.5], np.float32)
    ),
    gym.spaces.MultiDiscrete: gym.spaces.MultiDiscrete([3, 4]),
}
LSTM = [LayerConfig("linear", [16]), LayerConfig("lstm", [8], "none")]
GRU = [LayerConfig("linear", [16]), LayerConfig("gru", [8], "none")]
BATCH, STEPS = 5, 4


@dataclass(frozen=True)
class Case:
    algo: str
    action_space: gym.Space
    obs_space: gym.Space = field(default_factory=lambda: FLAT)
    algo_cfg: dict[str, list[LayerConfig] | bool] = field(default_factory=dict)

    @property
    def memory(self) -> str | None:
        """The recurrent layer configured (R2D2's default is an lstm)."""
        types = [v[-1].layer_type for v in self.algo_cfg.values() if isinstance(v, list)]
        return types[0] if types else ("lstm" if self.algo == "R2D2" else None)

    @property
    def id(self) -> str:
        what = [self.algo, type(self.action_space).__name__]
        if isinstance(self.action_space, gym.spaces.Box) and len(self.action_space.shape) > 1:
            what[-1] += "x".join(map(str, self.action_space.shape))
        if self.obs_space is not FLAT:
            what.append(f"{type(self.obs_space).__name__}-{self.obs_space.dtype}-obs")
        dueling = ["dueling"] if self.algo_cfg.get("dueling") else []
        return "-".join([*what, *([self.memory] if self.memory else []), *dueling])

    def policy(self) -> Policy:
        spec = get_algorithm(self.algo)
        cfg = spec.config_cls(**self.algo_cfg)
        return spec.policy_cls(cfg, self.obs_space, self.action_space, CPU)


BUILT_IN = sorted(name for name in ALGORITHMS if ":" not in name)
CASES = [
    Case(name, ACTION_SPACES[kind])
    for name in BUILT_IN
    for kind in ACTION_SPACES
    if kind in get_algorithm(name).policy_cls.action_spaces
]
CASES += [
    Case("PPO", ACTION_SPACES[gym.spaces.Discrete], algo_cfg={"actor_layers": LSTM}),
    Case("PPO", ACTION_SPACES[gym.spaces.Box], algo_cfg={"actor_layers": GRU}),
    Case("R2D2", ACTION_SPACES[gym.spaces.Discrete], algo_cfg={"value_layers": GRU}),
    Case("R2D2", ACTION_SPACES[gym.spaces.Discrete], algo_cfg={"dueling": True}),
    Case("PPO", gym.spaces.Box(np.full((2, 3), 0.1, np.float32), np.full((2, 3), 0.5, np.float32))),
    Case("DQN", gym.spaces.Discrete(2), obs_space=gym.spaces.Discrete(5, start=2)),
    Case("PPO", gym.spaces.Discrete(2), obs_space=gym.spaces.MultiDiscrete([3, 2])),
    Case("DQN", gym.spaces.Discrete(2), obs_space=gym.spaces.Box(0, 255, (6,), np.uint8)),
]


def observations(case: Case, graph: ActingGraph, rng: np.random.Generator) -> np.ndarray:
    case.obs_space.seed(int(rng.integers(2**31)))
    rows = np.stack([case.obs_space.sample() for _ in range(BATCH)])
    return rows.astype(graph.sample[0].numpy().dtype)


def lockstep(case: Case, policy: Policy, graph: ActingGraph, run: formats.Runner) -> None:
    """``policy`` and ``run`` (its graph, or a file of it) side by side for :data:`STEPS`
    steps of a batch, the memory of row 0 reset after step 1; the actions must agree."""
    rng = np.random.default_rng(0)
    policy.reset_memory(BATCH)
    state = [s.numpy() for s in graph.initial_state(BATCH)]
    for step in range(STEPS):
        obs = observations(case, graph, rng)
        expected = policy.env_action(policy.act(obs, explore=False, env_steps=0)[0])
        outputs = run([obs, *state])
        assert len(outputs) == len(graph.outputs)
        got = outputs[0]
        assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
        if np.issubdtype(expected.dtype, np.integer):
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        state = outputs[len(outputs) - len(graph.states) :] if graph.states else []
        if step == 1 and graph.states:  # row 0's episode ends: it starts again from zeros
            policy.episodes_ended(np.arange(BATCH) == 0)
            for s in state:
                s[0] = 0.0


def run_module(module: Any) -> formats.Runner:
    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        with torch.no_grad():
            return [x.numpy().copy() for x in module(*(torch.from_numpy(x) for x in inputs))]

    return run


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_graph_acts_as_the_policy(case: Case) -> None:
    policy = case.policy()
    graph = policy.acting_graph()
    assert graph.inputs[0] == "obs" and graph.outputs[0] == "action"
    assert len(graph.inputs) == len(graph.sample)
    names = [name.removeprefix("state_in_") for name in graph.states]
    assert [n for n in graph.outputs if n.startswith("state_out_")] == [
        f"state_out_{n}" for n in names
    ]
    expected_states = {None: (), "lstm": ("state_in_h", "state_in_c"), "gru": ("state_in_h",)}
    assert graph.states == expected_states[case.memory]
    lockstep(case, policy, graph, run_module(graph.module))


# torch's recurrent layers check the state's batch size in Python, which the trace keeps
# as a constant (and warns of): the run at another batch size shows it does no harm.
@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning")
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_traced_graph_acts_as_the_policy_at_another_batch_size(case: Case) -> None:
    """``torch.jit.trace`` at the sample's batch of 2, saved and loaded, run on 5 rows."""
    policy = case.policy()
    graph = policy.acting_graph()
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(graph.module, graph.sample), buffer)
    buffer.seek(0)
    lockstep(case, policy, graph, run_module(torch.jit.load(buffer)))


def test_nested_observations_are_refused_in_one_line() -> None:
    space = gym.spaces.Dict({"pos": FLAT, "goal": gym.spaces.Discrete(3)})
    spec = get_algorithm("DQN")
    policy = spec.policy_cls(spec.config_cls(), space, gym.spaces.Discrete(2), CPU)
    with pytest.raises(NotExportable) as refused:
        policy.acting_graph()
    message = str(refused.value)
    assert "\n" not in message and "nested (Dict / Tuple)" in message
    assert "allowed: Box, Discrete or MultiDiscrete observations" in message


def test_a_policy_with_memory_exports_to_onnx(tmp_path: Path) -> None:
    """R2D2's LSTM through the dynamo exporter and ONNX Runtime, its state chained by the
    caller, at a batch size the export did not see."""
    needs_extra("onnxruntime", "requirements-export.txt")
    case = Case("R2D2", ACTION_SPACES[gym.spaces.Discrete])
    policy = case.policy()
    graph = policy.acting_graph()
    path = tmp_path / "r2d2.onnx"
    formats.write("onnx", graph, path)
    lockstep(case, policy, graph, formats.load("onnx", path, graph))
