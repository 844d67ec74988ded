"""One reward-to-advantage path: kwrl's trainer (`trained_advantages`) and SkyRL's GRPO on the
rewards kwrl's generator hands it (`placeholder_rewards` for masked rows) give the trained rows
the same advantages."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kwrl.train.algorithms import placeholder_rewards, trained_advantages

ppo_utils = pytest.importorskip("skyrl.backends.skyrl_train.utils.ppo_utils")

CASES = [
    # rewards, groups, trained
    ([1.0, 0.0, 0.0, 1.0], ["a", "a", "b", "b"], [True, True, True, True]),
    ([1.0, 0.3, 0.0, 0.5, 0.5, 0.25], ["a", "a", "a", "b", "b", "b"], [True, False, True] * 2),
    ([0.0, 0.0, 1.0, 0.75], ["a", "a", "b", "b"], [False, False, True, True]),
    ([0.2, 0.9, 0.4, 0.4, 0.1], ["x", "x", "x", "y", "y"], [True, True, False, True, True]),
]


def skyrl_advantages(rewards: list[float], groups: list[str]) -> list[float]:
    token_rewards = torch.tensor([[r] for r in rewards])
    adv, _ = ppo_utils.compute_grpo_outcome_advantage(
        token_rewards, torch.ones_like(token_rewards), np.array(groups), grpo_norm_by_std=False
    )
    return adv[:, 0].tolist()


@pytest.mark.parametrize(("rewards", "groups", "trained"), CASES)
def test_kwrl_and_skyrl_give_trained_rows_the_same_advantages(
    rewards: list[float], groups: list[str], trained: list[bool]
) -> None:
    ours, keep = trained_advantages(torch.tensor(rewards), groups, trained)
    theirs = skyrl_advantages(placeholder_rewards(rewards, groups, trained), groups)
    for i, ok in enumerate(trained):
        if ok:
            assert theirs[i] == pytest.approx(float(ours[i]), abs=1e-6), (i, theirs, ours)
        else:
            assert float(ours[i]) == 0.0 and not keep[i]


def test_a_masked_row_with_its_raw_reward_would_move_the_baseline() -> None:
    # the placeholder matters: SkyRL given the masked row's own 0.0 shifts the others' advantages
    rewards, groups, trained = [1.0, 0.0, 0.0], ["g", "g", "g"], [True, False, True]
    ours, _ = trained_advantages(torch.tensor(rewards), groups, trained)
    assert skyrl_advantages(rewards, groups)[0] != pytest.approx(float(ours[0]))
    assert skyrl_advantages(placeholder_rewards(rewards, groups, trained), groups)[0] == (
        pytest.approx(float(ours[0]))
    )


def test_keep_drops_alike_groups_and_masked_rows() -> None:
    _, keep = trained_advantages(
        torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0]), ["a", "a", "b", "b", "b"],
        [True, True, True, True, False],
    )  # fmt: skip
    assert keep.tolist() == [False, False, True, True, False]
    _, keep_all = trained_advantages(
        torch.tensor([1.0, 1.0]), ["a", "a"], [True, True], drop_zero_variance=False
    )
    assert keep_all.tolist() == [True, True]
