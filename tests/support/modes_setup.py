"""Settings shared by the modes-and-outputs tests (``tests/modes/``)."""

from __future__ import annotations

import math

# A tiny DQN run: enough updates for several checkpoints and online evaluations.
EPSILON_START, EPSILON_END, EPSILON_DECAY = 1.0, 0.05, 1000.0
TRAIN_OVERRIDES = (
    "general_cfg.mp_backend=single",
    "general_cfg.seed=5",
    "general_cfg.max_env_steps=1200",
    "general_cfg.model_save_fre=100",
    "general_cfg.keep_checkpoints=2",
    "general_cfg.online_eval_episode=2",
    "algo_cfg.learn_start=300",
    "algo_cfg.updates_per_step=0.5",
    "algo_cfg.batch_size=32",
    f"algo_cfg.epsilon_start={EPSILON_START}",
    f"algo_cfg.epsilon_end={EPSILON_END}",
    f"algo_cfg.epsilon_decay={EPSILON_DECAY}",
    "algo_cfg.value_layers=[{layer_type: linear, layer_dim: [32], activation: relu}]",
)


def epsilon(env_steps: int) -> float:
    """DQN's schedule with the settings above."""
    return EPSILON_END + (EPSILON_START - EPSILON_END) * math.exp(-env_steps / EPSILON_DECAY)
