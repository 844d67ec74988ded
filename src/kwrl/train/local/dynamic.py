"""Dynamic sampling's bookkeeping (`rl.dynamic`, `DynamicSampling`): pure functions over a step's
groups, so the trainer's sampling loop stays short and the rules are tested on their own.

A group is *informative* when its trained members' training rewards differ: GRPO gives it
non-zero advantages. A group whose members all scored alike (all solved, all failed, or the same
partial score) trains nothing, and neither does a group with fewer than two trained members.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kwrl.train.batch import Trajectory


def group_rewards(trajs: Sequence[Trajectory]) -> dict[str, list[float]]:
    """Each group's trained members' training rewards, groups in first-seen order (masked trials,
    `Trajectory.trained` False, are left out as the GRPO baseline leaves them out)."""
    out: dict[str, list[float]] = {}
    for t in trajs:
        rewards = out.setdefault(str(t.group_id), [])
        if t.trained:
            rewards.append(float(t.reward))
    return out


def informative(rewards: Sequence[float]) -> bool:
    """Whether a group with these trained rewards has a GRPO signal (module doc)."""
    return len(rewards) >= 2 and max(rewards) != min(rewards)


def first_wave(target: int, oversample: float, cap: int) -> int:
    """Tasks the first wave samples: `ceil(oversample * target)`, at most `cap`."""
    return min(math.ceil(oversample * target), cap)


def refill(target: int, have: int, sampled: int, oversample: float, cap: int) -> int:
    """Tasks the next wave samples when `have` informative groups of `target` are in after
    `sampled` tasks: the missing ones times `oversample`, within what `cap` leaves; 0 when none
    is missing or the cap is reached."""
    missing = target - have
    if missing <= 0:
        return 0
    return max(0, min(math.ceil(missing * oversample), cap - sampled))


def select(groups: dict[str, list[float]], target: int) -> list[str]:
    """The groups a step trains on: its informative ones, in sampling order, up to `target`; the
    alike ones never reach the learner (they would train nothing and cost its forward passes)."""
    return [g for g, r in groups.items() if informative(r)][:target]
