"""Dynamic sampling's rules: which groups are informative, how much a wave samples, what trains."""

from __future__ import annotations

from kwrl.train.batch import Trajectory
from kwrl.train.local import dynamic


def traj(group: str, reward: float, trained: bool = True) -> Trajectory:
    return Trajectory(
        prompt_ids=[1], response_ids=[2], loss_mask=[1], logprobs=[0.0], reward=reward,
        group_id=group, trained=trained,
    )  # fmt: skip


def test_group_rewards_leave_masked_members_out() -> None:
    trajs = [traj("a", 1.0), traj("a", 0.0, trained=False), traj("b", 0.5), traj("a", 1.0)]
    assert dynamic.group_rewards(trajs) == {"a": [1.0, 1.0], "b": [0.5]}


def test_informative_needs_two_trained_members_that_differ() -> None:
    assert dynamic.informative([1.0, 0.0])
    assert dynamic.informative([0.5, 0.5, 0.75])
    assert not dynamic.informative([1.0, 1.0, 1.0])
    assert not dynamic.informative([0.0] * 8)
    assert not dynamic.informative([1.0])
    assert not dynamic.informative([])


def test_waves_oversample_and_stop_at_the_cap() -> None:
    # 8 groups wanted, first wave 1.5x, at most 3x in a step
    cap = 24
    assert dynamic.first_wave(8, 1.5, cap) == 12
    assert dynamic.refill(8, have=3, sampled=12, oversample=1.5, cap=cap) == 8  # ceil(5 * 1.5)
    assert dynamic.refill(8, have=6, sampled=20, oversample=1.5, cap=cap) == 3  # 4 left in the cap
    assert dynamic.refill(8, have=6, sampled=24, oversample=1.5, cap=cap) == 0
    assert dynamic.refill(8, have=8, sampled=12, oversample=1.5, cap=cap) == 0
    assert dynamic.refill(8, have=11, sampled=12, oversample=1.5, cap=cap) == 0


def test_select_trains_informative_groups_only_up_to_the_batch_size() -> None:
    groups = {"a": [1.0, 1.0], "b": [1.0, 0.0], "c": [0.0, 0.0], "d": [0.2, 0.4], "e": [0.0, 1.0]}
    assert dynamic.select(groups, 8) == ["b", "d", "e"]
    assert dynamic.select(groups, 2) == ["b", "d"]
