"""The RL math against hand-computed values and against SkyRL 0.3.0's own functions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kwrl.train.algorithms import (
    dppo_loss,
    group_ids_to_boundaries,
    grpo_advantages,
    kl_k3,
    ppo_clip_loss,
    reduce_loss,
    reduction_weights,
    zero_variance_keep,
)


def test_grpo_advantages_subtract_the_group_mean_by_hand() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.0, 0.5, 0.5]), [0, 0, 1, 1])
    assert adv.tolist() == [0.5, -0.5, 0.0, 0.0]


def test_grpo_std_normalisation_uses_the_unbiased_std_by_hand() -> None:
    adv = grpo_advantages(torch.tensor([1.0, 0.0]), ["a", "a"], norm_by_std=True, eps=0.0)
    # mean 0.5, unbiased std sqrt(0.5)
    assert adv.tolist() == pytest.approx([0.5 / 0.5**0.5, -0.5 / 0.5**0.5])


def test_zero_variance_groups_are_dropped() -> None:
    keep = zero_variance_keep(torch.tensor([1.0, 1.0, 0.0, 1.0, 0.2, 0.2]), [0, 0, 1, 1, 2, 2])
    assert keep.tolist() == [False, False, True, True, False, False]


def test_a_masked_member_is_not_in_its_groups_baseline() -> None:
    # group 0: rewards 1, 0.5 and a masked placeholder 0; the baseline is 0.75, not 0.5
    rewards, groups = torch.tensor([1.0, 0.5, 0.0, 0.0, 1.0]), [0, 0, 0, 1, 1]
    valid = [True, True, False, True, True]
    adv = grpo_advantages(rewards, groups, valid_B=valid)
    assert adv.tolist() == [0.25, -0.25, 0.0, -0.5, 0.5]
    # [1, 1, masked 0] has no variance among its scored members: dropped whole
    keep = zero_variance_keep(torch.tensor([1.0, 1.0, 0.0]), [0, 0, 0], valid_B=[True, True, False])
    assert keep.tolist() == [False, False, False]
    with pytest.raises(ValueError, match="valid flags"):
        grpo_advantages(rewards, groups, valid_B=[True])


def test_group_boundaries_reject_non_contiguous_groups() -> None:
    assert group_ids_to_boundaries([3, 3, 1, 1, 1]) == [(0, 2), (2, 5)]
    with pytest.raises(ValueError, match="not contiguous"):
        group_ids_to_boundaries([0, 1, 0])


def test_ppo_clip_by_hand() -> None:
    lp = torch.tensor([[np.log(1.5), np.log(0.5)]], dtype=torch.float32)
    old = torch.zeros(1, 2)
    adv = torch.tensor([[1.0, 1.0]])
    out = ppo_clip_loss(lp, old, adv, torch.ones(1, 2), eps_low=0.2, eps_high=0.2)
    # ratio 1.5 clipped to 1.2 for A>0; ratio 0.5: min(0.5, 0.8) = 0.5
    assert out.loss_B_T.tolist()[0] == pytest.approx([-1.2, -0.5], abs=1e-6)
    assert out.clip_frac == pytest.approx(0.5)


def test_dppo_binary_tv_masks_tokens_that_moved_too_far_by_hand() -> None:
    mu = torch.log(torch.tensor([[0.5, 0.5, 0.5, 0.5]]))
    p = torch.log(torch.tensor([[0.7, 0.6, 0.3, 0.4]]))
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    out = dppo_loss(p, mu, adv, torch.ones(1, 4), delta_low=0.15, delta_high=0.15)
    # token 0: +0.2 > 0.15 with A>0 -> masked; token 2: -0.2 with A<0 -> masked
    expected = [0.0, -(0.6 / 0.5), 0.0, 0.4 / 0.5]
    assert out.loss_B_T.tolist()[0] == pytest.approx(expected, abs=1e-6)
    assert out.clip_frac == pytest.approx(0.5)


def test_reductions_by_hand() -> None:
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    loss = torch.tensor([[1.0, 2.0, 3.0], [10.0, 99.0, 99.0]])
    assert float(reduce_loss(loss, reduction_weights(mask, "token_mean"))) == pytest.approx(16 / 4)
    assert float(reduce_loss(loss, reduction_weights(mask, "sequence_mean"))) == pytest.approx(
        (2 + 10) / 2
    )
    w = reduction_weights(mask, "prompt_mean", [(0, 1), (1, 2)])
    assert float(reduce_loss(loss, w)) == pytest.approx((2 + 10) / 2)


def test_kl_k3_is_zero_at_equal_policies_and_positive_elsewhere() -> None:
    a = torch.randn(2, 5)
    assert torch.allclose(kl_k3(a, a), torch.zeros(2, 5))
    assert (kl_k3(a, a + 0.3) > 0).all()


# --------------------------------------------------------------------------- against SkyRL


skyrl_ppo = pytest.importorskip("skyrl.backends.skyrl_train.utils.ppo_utils")


def _skyrl_cfg(loss: str) -> object:
    from skyrl.train.config.config import AlgorithmConfig, DPPOConfig

    return AlgorithmConfig(
        policy_loss_type=loss,
        eps_clip_low=0.2,
        eps_clip_high=0.28,
        loss_reduction="token_mean",
        dppo=DPPOConfig(dppo_type="binary_tv", delta_low=0.15, delta_high=0.15),
    )


def _random_batch(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    B, T = 6, 9
    lp = -torch.rand(B, T, generator=g) * 3
    old = lp + torch.randn(B, T, generator=g) * 0.3
    old = old.clamp(max=0)
    adv = torch.randn(B, 1, generator=g).expand(B, T).clone()
    mask = (torch.rand(B, T, generator=g) > 0.2).float()
    return lp, old, adv, mask


@pytest.mark.parametrize("seed", range(5))
def test_grpo_matches_skyrl(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    rewards = torch.rand(8, generator=g).round(decimals=1)
    index = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    mask = torch.ones(8, 4)
    for norm in (False, True):
        theirs, _ = skyrl_ppo.compute_grpo_outcome_advantage(
            token_level_rewards=rewards.unsqueeze(-1) * torch.tensor([[0, 0, 0, 1.0]]),
            response_mask=mask,
            index=index,
            grpo_norm_by_std=norm,
        )
        ours = grpo_advantages(rewards, index.tolist(), norm_by_std=norm)
        assert torch.allclose(theirs[:, 0], ours, atol=1e-5)


@pytest.mark.parametrize("seed", range(5))
def test_ppo_and_dppo_losses_match_skyrl(seed: int) -> None:
    lp, old, adv, mask = _random_batch(seed)
    w = reduction_weights(mask, "token_mean")
    theirs, _ = skyrl_ppo.ppo_policy_loss(lp, old, adv * w, _skyrl_cfg("regular"), mask, None)
    ours = reduce_loss(ppo_clip_loss(lp, old, adv, mask, eps_low=0.2, eps_high=0.28).loss_B_T, w)
    assert float(theirs) == pytest.approx(float(ours), rel=1e-5, abs=1e-6)

    # DPPO's divergence mask depends on the sign of A only, so SkyRL's pre-scaled advantages agree.
    theirs, _ = skyrl_ppo.dppo_policy_loss(lp, old, adv * w, _skyrl_cfg("dppo"), mask, old)
    ours = reduce_loss(dppo_loss(lp, old, adv, mask).loss_B_T, w)
    assert float(theirs) == pytest.approx(float(ours), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean", "prompt_mean"])
def test_reduction_weights_match_skyrl(reduction: str) -> None:
    _, _, adv, mask = _random_batch(7)
    bounds = [(0, 3), (3, 6)]
    theirs = skyrl_ppo.apply_loss_reduction_to_advantages_minibatch(
        adv, mask, reduction, micro_batch_size=6, max_seq_len=9, prompt_boundaries=bounds
    )
    ours = adv * reduction_weights(mask, reduction, bounds)  # type: ignore[arg-type]
    assert torch.allclose((theirs * mask).sum(), ours.sum(), atol=1e-6)


def test_kl_matches_skyrl() -> None:
    lp, old, _, mask = _random_batch(3)
    theirs = skyrl_ppo.compute_approx_kl(lp, old, mask, kl_estimator_type="k3")
    assert torch.allclose(theirs, kl_k3(lp, old) * mask, atol=1e-6)
