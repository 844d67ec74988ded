"""The batch runner (`run_batch`) and the group decisions it applies once per batch.

The trials are real harbor trials whose environment cannot be imported: each fails at once as a
`sandbox` error and is retried, so retries, per-job configs, the resume hook and the semaphore run
for real without a sandbox.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kwrl.rollout.failures import FailureCause
from kwrl.rollout.runner import (
    BatchJob,
    JobResult,
    RolloutConfig,
    TrialRecord,
    apply_group_decisions,
    run_batch,
)
from kwrl.sandbox.conformance.testing import make_dataset

BROKEN = RolloutConfig(agent="oracle", environment="kwrl.no_such_module:Env", retries=1)


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("ds"), 1)[0]


def _record(task: str, sample: int, cause: FailureCause, reward: float | None) -> TrialRecord:
    return TrialRecord(
        task=task, sample=sample, attempt=0, trial_name=f"{task}__s{sample}",
        trial_dir=f"/nowhere/{task}__s{sample}", cause=cause, reward=reward,
    )  # fmt: skip


async def test_each_job_retries_under_its_own_config_and_the_group_is_masked(
    task: Path, tmp_path: Path
) -> None:
    done: list[JobResult] = []
    jobs = [BatchJob(task, 0), BatchJob(task, 1, BROKEN.model_copy(update={"retries": 0}))]
    results = await run_batch(
        jobs, tmp_path, concurrency=2, config=BROKEN, on_done=done.append, train=True
    )
    assert [r.job for r in results] == jobs
    names = [[a.trial_name for a in r.attempts] for r in results]
    assert names == [[f"{task.name}__s0", f"{task.name}__s0__r1"], [f"{task.name}__s1"]]
    assert all(a.cause is FailureCause.SANDBOX for r in results for a in r.attempts)
    assert sorted(r.job.sample for r in done) == [0, 1]
    assert all(r.seconds >= r.final.seconds for r in results)
    assert [r.final.trained for r in results] == [False, False]  # an infra error masks its group


async def test_a_recovered_trial_is_adopted_without_running_and_groups_are_the_jobs(
    task: Path, tmp_path: Path
) -> None:
    adopted = _record(task.name, 0, FailureCause.NONE, 1.0)
    asked: list[tuple[str, int]] = []

    def recover(task_dir: Path, sample: int) -> TrialRecord | None:
        asked.append((task_dir.name, sample))
        return adopted if sample == 0 else None

    jobs = [BatchJob(task, 0, group="a"), BatchJob(task, 1, group="b")]
    results = await run_batch(
        jobs, tmp_path, concurrency=1, config=BROKEN, recover=recover, train=True
    )
    assert asked == [(task.name, 0), (task.name, 1)]
    assert results[0].attempts == [adopted]
    assert not (tmp_path / f"{task.name}__s0").exists()
    assert [a.trial_name for a in results[1].attempts] == [
        f"{task.name}__s1",
        f"{task.name}__s1__r1",
    ]
    # one task, two groups: the infra error masks its own group only
    assert [(r.final.trained, r.final.train_reward) for r in results] == [
        (True, 1.0),
        (False, None),
    ]


async def test_a_semaphore_the_caller_holds_keeps_the_batch_waiting(
    task: Path, tmp_path: Path
) -> None:
    sem = asyncio.Semaphore(1)
    started: list[int] = []

    def recover(task_dir: Path, sample: int) -> TrialRecord | None:
        started.append(sample)
        return None

    await sem.acquire()
    batch = asyncio.create_task(
        run_batch([BatchJob(task, 0)], tmp_path, concurrency=sem, config=BROKEN, recover=recover)
    )
    for _ in range(20):
        await asyncio.sleep(0)  # yield to the batch: it waits on the held semaphore
    assert started == [] and not batch.done()
    sem.release()
    results = await batch
    assert started == [0] and len(results[0].attempts) == 2
    assert not results[0].final.trained  # no `train`: the records stay as they ran


async def test_a_job_without_a_config_is_refused(task: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no config"):
        await run_batch([BatchJob(task, 0)], tmp_path, concurrency=1)


def test_explicit_groups_mask_only_the_group_with_an_infra_error() -> None:
    records = [
        _record("t", 0, FailureCause.NONE, 1.0),
        _record("t", 1, FailureCause.SANDBOX, None),
        _record("t", 2, FailureCause.NONE, 0.5),
        _record("t", 3, FailureCause.MAX_TOKENS, None),
    ]
    apply_group_decisions(records, ["a", "a", "b", "b"])
    assert [(r.trained, r.train_reward) for r in records] == [
        (False, None),
        (False, None),
        (True, 0.5),
        (True, 0.0),
    ]
    apply_group_decisions(records)  # by task: one group, with the infra error
    assert not any(r.trained for r in records)


def test_without_train_every_record_trains_on_its_raw_reward() -> None:
    records = [
        _record("t", 0, FailureCause.SANDBOX, None),
        _record("t", 1, FailureCause.AGENT_TIMEOUT, 0.25),
    ]
    apply_group_decisions(records, ["a", "a"], train=False)
    assert [(r.trained, r.train_reward) for r in records] == [(True, 0.0), (True, 0.25)]


def test_the_summary_counts_undecided_criteria_per_family(tmp_path: Path) -> None:
    """summary.json's `undecided_by_family` reads each graded trial's grades.json."""
    from kwrl.rollout.runner import Undecided, undecided_counts

    def trial(name: str, *undecided: bool) -> str:
        d = tmp_path / name
        (d / "verifier").mkdir(parents=True)
        grades = [{"verifier_id": f"c{i}", "criteria": "x", "score": 0.0, "method": "machine",
                   "rationale": "r", "undecided": u} for i, u in enumerate(undecided)]  # fmt: skip
        (d / "verifier" / "grades.json").write_text(json.dumps({"grades": grades}))
        return str(d)

    records = [
        _record("t1", 0, FailureCause.NONE, 0.5), _record("t1", 1, FailureCause.NONE, 1.0),
        _record("t2", 0, FailureCause.NONE, 0.0), _record("t3", 0, FailureCause.SANDBOX, None),
    ]  # fmt: skip
    for r, dirs in zip(records, (trial("a", True, False), trial("b", False, False),
                                 trial("c", True), trial("d", True)), strict=True):  # fmt: skip
        r.trial_dir = dirs
    got = undecided_counts(records, {"t1": "table_lookup", "t2": None, "t3": "chat_post"})
    assert got == {"(no family)": Undecided(criteria=1, undecided=1),
                   "table_lookup": Undecided(criteria=4, undecided=1)}  # fmt: skip
