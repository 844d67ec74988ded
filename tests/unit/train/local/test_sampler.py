"""The prompt sampler: the seeded order with exact resume, and pass-rate steering."""

from __future__ import annotations

from collections import Counter

from kwrl.train.local.sampler import PromptSampler, SamplerState, Steering, saturated

TASKS = [f"t{i:02d}" for i in range(20)]


def test_without_steering_each_epoch_is_one_seeded_permutation() -> None:
    s = PromptSampler(TASKS, seed=3, epochs=2)
    got = s.next(7) + s.next(13)
    assert sorted(got) == TASKS
    assert got == s._order(0)
    assert s.next(20) == s._order(1)
    assert s.exhausted and s.next(1) == []


def test_saturated_means_recent_rewards_all_alike() -> None:
    assert not saturated([1.0, 1.0, 1.0], 4)
    assert saturated([1.0] * 4, 4)
    assert saturated([0.0] * 5, 4)
    assert saturated([0.5] * 4, 4)
    assert not saturated([1.0, 1.0, 0.0, 1.0], 4)


def test_history_keeps_the_last_window_rewards() -> None:
    st = SamplerState()
    st.record("a", [1, 0, 1], window=4)
    st.record("a", [0, 0], window=4)
    assert st.history["a"] == [0.0, 1.0, 0.0, 0.0]


def draws(steer: bool, epochs: int = 40) -> Counter[str]:
    s = PromptSampler(TASKS, seed=0, epochs=epochs, steering=Steering(on=steer, keep=0.25))
    for t in TASKS[:10]:  # half the tasks: every recent trial solved (or failed) them
        s.state.record(t, [float(TASKS.index(t) % 2)] * 8, window=16)
    for t in TASKS[10:]:
        s.state.record(t, [1.0, 0.0] * 4, window=16)
    return Counter(s.next(10_000))


def test_steering_draws_saturated_tasks_less_but_never_drops_them() -> None:
    plain, steered = draws(False), draws(True)
    assert all(plain[t] == 40 for t in TASKS)
    assert all(steered[t] == 40 for t in TASKS[10:])  # informative tasks: every epoch
    for t in TASKS[:10]:
        assert 0 < steered[t] < 25, (t, steered[t])  # about keep = 0.25 of the epochs
    assert sum(steered[t] for t in TASKS[:10]) < 0.4 * 400


def test_one_varied_group_clears_saturation() -> None:
    s = PromptSampler(TASKS, seed=0, epochs=50, steering=Steering(on=True, keep=0.25, window=4))
    s.record("t00", [1.0] * 4)
    assert saturated(s.state.history["t00"], 4)
    s.record("t00", [0.0])
    assert not saturated(s.state.history["t00"], 4)


def test_resume_from_a_state_draws_the_same_tasks_with_steering() -> None:
    def sampler() -> PromptSampler:
        s = PromptSampler(TASKS, seed=1, epochs=10, steering=Steering(on=True))
        for t in TASKS[:12]:
            s.record(t, [0.0] * 6)
        return s

    a = sampler()
    a.next(17)
    saved = a.state.model_copy(deep=True)
    rest = a.next(60)
    b = PromptSampler(TASKS, seed=1, epochs=10, steering=Steering(on=True))
    b.load_state(saved)
    assert b.next(60) == rest


def test_without_steering_no_history_is_kept() -> None:
    # a run without steering checkpoints the sampler state it always did
    s = PromptSampler(TASKS, seed=0)
    s.record("t00", [1.0, 1.0])
    assert s.state.history == {}
