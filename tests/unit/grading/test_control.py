"""The no-op control: a generated task's criteria all fail on its untouched world with no answer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tasks"))
from tasks_builders import reward_doing_nothing, synth_dataset

from kwrl.grading.control import control_dataset, control_task, main


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_dataset(tmp_path_factory.mktemp("control") / "ds", worlds=2, tasks=6)


def test_every_criterion_of_a_generated_dataset_fails_the_control(generated: Path) -> None:
    report = control_dataset(generated)
    assert report.ok and report.tasks == 12
    assert report.graded >= 12 and report.unjudged == 0
    assert not report.passes and not report.unloadable and not report.errors


def test_a_check_on_a_file_the_world_already_holds_is_flagged(tmp_path: Path) -> None:
    ds = synth_dataset(tmp_path / "ds")
    task, vid = reward_doing_nothing(ds)
    report = control_dataset(ds)
    assert not report.ok
    [p] = report.passes
    assert (p.task, p.verifier_id, p.index, p.method) == (task, vid, 0, "machine")
    assert p.field == "0.verifier_values"
    assert "passes the no-op control" in p.message and ".docx exists" in p.message


def test_an_answer_check_the_empty_answer_satisfies_is_flagged(tmp_path: Path) -> None:
    ds = synth_dataset(tmp_path / "ds", tasks=1)
    [task] = (ds / "tasks").iterdir()
    path = task / "tests" / "verifiers.json"
    verifiers = json.loads(path.read_text())
    values = verifiers[-1]["verifier_values"]
    values["kwrl_check"] = {"kind": "contains", "none_of": ["TBD"]}
    values["expected_file_type"] = None
    path.write_text(json.dumps(verifiers))
    passes, graded, unjudged = control_task(task)
    assert [p.index for p in passes] == [len(verifiers) - 1]
    assert (graded, unjudged) == (len(verifiers), 0)


def test_criteria_only_a_judge_grades_are_counted_not_run(tmp_path: Path) -> None:
    ds = synth_dataset(tmp_path / "ds", tasks=1)
    [task] = (ds / "tasks").iterdir()
    path = task / "tests" / "verifiers.json"
    verifiers = json.loads(path.read_text())
    for v in verifiers:
        v["verifier_values"]["kwrl_check"] = None
        v["verifier_values"]["expected_file_type"] = "Final Answer Only"
    path.write_text(json.dumps(verifiers))
    assert control_task(task) == ([], 0, len(verifiers))


def test_the_module_prints_json_and_exits_1_on_a_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ds = synth_dataset(tmp_path / "ds", tasks=2)
    (ds / "tasks" / "stray").mkdir()  # no instruction.md: validate's to report, skipped here
    assert main([str(ds)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["unloadable"] == ["stray"]
    task, vid = reward_doing_nothing(ds)
    assert main([str(ds)]) == 1
    [p] = json.loads(capsys.readouterr().out)["passes"]
    assert (p["task"], p["verifier_id"], p["field"]) == (task, vid, "0.verifier_values")
    assert main([str(tmp_path / "missing")]) == 2
