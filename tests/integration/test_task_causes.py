"""A task or dataset that cannot be read is the input's fault (`task`), said in one line before
any trial starts; a run that meets one anyway records cause `task`, not retried.

Before, `kwrl eval D/worlds` (not a dataset) and `kwrl eval` of a task copied out of its dataset
(its world seed not found) filed every trial as `sandbox` (infrastructure), retried each twice and
pointed at trial dirs that did not exist; `kwrl data validate` of a dir without tasks said
`ok: 0 tasks valid` and exited 0."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import kwrl, snapshot

from kwrl.rollout.failures import FailureCause
from kwrl.rollout.runner import BatchJob, RolloutConfig, run_batch
from kwrl.sandbox.conformance.testing import make_dataset


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """D (a dataset: tasks/, worlds/), lone/<task> (a task copied out of it), empty/."""
    cwd = tmp_path_factory.mktemp("user")
    (task,) = make_dataset(cwd / "D", 1)
    (cwd / "lone").mkdir()
    shutil.copytree(task, cwd / "lone" / task.name)
    (cwd / "empty").mkdir()
    return cwd


def lone(work: Path) -> str:
    return "lone/" + next((work / "lone").iterdir()).name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "D/worlds", "--model", "oracle", "--out", "R"],
         "not a task dir (no instruction.md): a world seed, not a task; give the dataset that holds it"),
        (["eval", "lone", "--model", "oracle", "--out", "R"], "world seed dir not found"),
        (["rollout", "D/worlds", "--out", "R"], "a world seed, not a task"),
        (["rollout", "lone", "--out", "R"], "world seed dir not found"),
        (["trial", "run", "LONE", "--out", "R"], "world seed dir not found"),
        (["data", "validate", "empty"], "empty: no task dirs here"),
    ],
)  # fmt: skip
def test_an_unreadable_task_is_one_line_before_any_trial(
    work: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    before = snapshot(work)
    code, stdout, stderr = kwrl(
        work, [lone(work) if a == "LONE" else a for a in argv], capsys, monkeypatch
    )
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), stdout + stderr
    assert message in lines[0]
    assert snapshot(work) == before  # no run dir, no trial dir


async def test_a_run_that_meets_a_task_without_its_world_records_task_once(
    work: Path, tmp_path: Path
) -> None:
    """The runner's own path (the trainers' rollouts do not pre-check): cause `task`, one attempt
    though retries allow two more, the group masked."""
    (result,) = await run_batch(
        [BatchJob(work / lone(work), 0)], tmp_path, concurrency=1,
        config=RolloutConfig(agent="oracle", retries=2), train=True,
    )  # fmt: skip
    assert [a.cause for a in result.attempts] == [FailureCause.TASK]
    assert "TaskFormatError" in (result.final.error or "")
    assert "world seed dir not found" in (result.final.error or "")
    assert not result.final.trained
