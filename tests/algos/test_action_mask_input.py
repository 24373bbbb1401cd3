"""Action masks as the policies read them: from the packed Dict observation the runtime
hands over, a row without legal actions read as all legal, and a mask that cannot fit the
action space refused before a run starts (with both widths named)."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from algos import get_algorithm
from algos.masks import (
    MASKED_LOGIT,
    check_action_mask,
    masked_argmax,
    masked_logits,
    random_legal_actions,
)
from algos.observations import ACTION_MASK, ObservationInput, action_mask_space
from joyrl_ray.config import ConfigError
from joyrl_ray.run.runner import run
from tests.algos.mask_support import masked_space, packed, random_masks
from tests.support.runs import ROOT, make_cfg

CPU = torch.device("cpu")


def test_the_mask_is_read_from_packed_dict_observations_with_any_leading_shape() -> None:
    space = masked_space(5)
    rng = np.random.default_rng(0)
    masks = random_masks(rng, (3, 4), 5)
    obs = packed(space, rng.normal(size=(3, 4, 2)).astype(np.float32), masks)
    inputs = ObservationInput(space)
    mask = inputs.action_mask(obs)
    assert inputs.mask_space is space[ACTION_MASK] and action_mask_space(space) is inputs.mask_space
    assert mask is not None and mask.dtype == torch.bool and mask.shape == (3, 4, 5)
    np.testing.assert_array_equal(mask.numpy(), masks.astype(bool))
    # The network still takes every leaf: the features and the mask side by side.
    assert inputs.tensor(obs, CPU).shape == (3, 4, 2 + 5)


def test_a_row_without_legal_actions_reads_as_all_legal() -> None:
    space = masked_space(3)
    masks = np.array([[0, 0, 0], [0, 1, 0]], np.int8)
    mask = ObservationInput(space).action_mask(packed(space, np.zeros((2, 2), np.float32), masks))
    assert mask is not None
    assert mask.tolist() == [[True, True, True], [False, True, False]]
    logits = masked_logits(torch.zeros(2, 3), torch.as_tensor(masks))
    assert torch.isfinite(logits.logsumexp(-1)).all() and logits[0].eq(0).all()
    assert random_legal_actions(masks, np.random.default_rng(0)).shape == (2,)
    assert random_legal_actions(masks[:0], np.random.default_rng(0)).shape == (0,)


def test_observations_without_a_mask_have_none() -> None:
    box = gym.spaces.Box(0, 1, (3,))
    other_dict = gym.spaces.Dict({"pos": box, "goal": box})
    for space, obs in ((box, np.zeros((2, 3), np.float32)), (other_dict, None)):
        inputs = ObservationInput(space)
        assert inputs.mask_space is None and action_mask_space(space) is None
        if obs is not None:
            assert inputs.action_mask(obs) is None


def test_masked_argmax_and_logits_keep_to_legal_actions() -> None:
    q = torch.tensor([[9.0, 1.0, 2.0], [0.0, 5.0, 9.0]])
    mask = torch.tensor([[False, True, True], [True, True, False]])
    assert masked_argmax(q, mask).tolist() == [2, 1]
    assert masked_argmax(q, None).tolist() == [0, 2]
    logits = masked_logits(q, mask)
    assert logits[0, 0] == MASKED_LOGIT and logits[1, 2] == MASKED_LOGIT


def test_random_legal_actions_are_uniform_over_each_rows_legal_actions() -> None:
    mask = np.array([[1, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]], np.int8)
    rng = np.random.default_rng(0)
    draws = np.stack([random_legal_actions(mask, rng) for _ in range(4000)])
    assert set(draws[:, 0]) == {0, 2} and abs((draws[:, 0] == 0).mean() - 0.5) < 0.05
    assert set(draws[:, 1]) == {3}
    assert set(draws[:, 2]) == {0, 1, 2, 3}  # no legal action known: any


@pytest.mark.parametrize("algo", ["DQN", "R2D2", "PPO", "APPO", "IMPALA"])
def test_check_spaces_refuses_a_mask_whose_width_differs_from_the_actions(algo: str) -> None:
    policy_cls = get_algorithm(algo).policy_cls
    with pytest.raises(ValueError, match=r"has 4 entries but the action space .* has 5 actions"):
        policy_cls.check_spaces(masked_space(5, width=4), gym.spaces.Discrete(5))
    policy_cls.check_spaces(masked_space(5), gym.spaces.Discrete(5))


@pytest.mark.parametrize(
    ("algo", "actions"),
    [
        ("PPO", gym.spaces.Box(-1.0, 1.0, (2,))),
        ("PPO", gym.spaces.MultiDiscrete([2, 2])),
        ("SAC", gym.spaces.Box(-1.0, 1.0, (2,))),
    ],
)
def test_check_spaces_refuses_a_mask_on_a_non_discrete_action_space(
    algo: str, actions: gym.Space
) -> None:
    with pytest.raises(ValueError, match="masks apply to a Discrete action space only") as info:
        get_algorithm(algo).policy_cls.check_spaces(masked_space(2), actions)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="Discrete action space only"):
        check_action_mask(masked_space(2), actions)


def test_a_run_with_a_mask_that_does_not_fit_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    cfg = make_cfg(
        tmp_path,
        "env_cfg.id=tests.support.space_envs:MaskWiderThanActionsEnv",
        yaml_path=str(ROOT / "configs" / "masked_choice_dqn.yaml"),
    )
    with pytest.raises(ConfigError, match=r"algo_name=DQN .*3 entries .*Discrete\(2\) has 2"):
        run(cfg)
    assert not any(tmp_path.iterdir())
