"""validate reports every fault of every task, each with its file and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tasks_builders import make_spec, reward_doing_nothing, synth_dataset

from kwrl.sandbox.conformance.testing import make_task, make_world
from kwrl.tasks.taskdir import write_task_dir
from kwrl.tasks.validate import report_json, run_control, validate_dataset, validate_task


def _edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_a_written_dataset_is_valid(dataset: Path) -> None:
    report = validate_dataset(dataset)
    assert report.ok and report.tasks == 3


def test_every_problem_is_listed_with_file_and_field(dataset: Path) -> None:
    t1, t2, t3 = (dataset / "tasks" / f"task-00{i}" for i in (1, 2, 3))
    (t1 / "instruction.md").unlink()
    (t1 / "tests" / "verifiers.json").write_text("[]")
    (t2 / "task.toml").write_text('[environment]\ncpus = "many"\n')
    _edit_json(t2 / "archipelago.json", expected_output="a_poem")
    _edit_json(t3 / "archipelago.json", world_id="world_" + "f" * 32)
    (t3 / "tests" / "test.sh").unlink()
    report = validate_dataset(dataset)
    found = {(p.task, p.file, p.field) for p in report.problems}
    assert found == {
        ("task-001", "tasks/task-001/instruction.md", None),
        ("task-001", "tasks/task-001/tests/verifiers.json", None),
        ("task-002", "tasks/task-002/task.toml", "environment.cpus"),
        ("task-002", "tasks/task-002/archipelago.json", "expected_output"),
        ("task-003", "tasks/task-003/archipelago.json", "world_id"),
        ("task-003", "tasks/task-003/tests/test.sh", None),
        ("task-003", "tasks/task-003/tests/verifiers.json", "0.world_id"),
        ("task-003", "tasks/task-003/tests/verifiers.json", "1.world_id"),
    }
    assert report.bad_tasks == ["task-001", "task-002", "task-003"]
    messages = " ".join(p.message for p in report.problems)
    assert "world seed dir not found" in messages and "no verifiers" in messages


def test_duplicate_task_ids_across_the_dataset(dataset: Path) -> None:
    spec = make_spec(1).model_copy(deep=True)
    spec.meta.task_slug = "task-001-copy"
    write_task_dir(dataset / "tasks" / "task-001-copy", spec)
    report = validate_dataset(dataset)
    (dup,) = report.problems
    assert (dup.task, dup.field) == ("task-001-copy", "task_id")
    assert "duplicate task id" in dup.message and "task-001" in dup.message


def test_slug_must_match_dir_and_world_json_must_agree(dataset: Path) -> None:
    shutil.move(dataset / "tasks" / "task-002", dataset / "tasks" / "renamed")
    world = dataset / "worlds" / ("world_" + "a" * 32)
    (world / "world.json").write_text(json.dumps({"world_id": "world_other"}))
    report = validate_dataset(dataset)
    fields = sorted((p.task, p.field) for p in report.problems)
    assert ("renamed", "task_slug") in fields
    assert sum(1 for _, f in fields if f == "world_id") == 3


def test_a_stray_dir_without_instruction_is_reported(dataset: Path) -> None:
    (dataset / "tasks" / "notes").mkdir()
    report = validate_dataset(dataset)
    assert {p.file for p in report.problems if p.task == "notes"} >= {"tasks/notes/instruction.md"}


def test_single_task_dir_and_folder_of_tasks_are_accepted(dataset: Path) -> None:
    assert validate_dataset(dataset / "tasks").tasks == 3
    single = validate_dataset(dataset / "tasks" / "task-001")
    assert single.ok and single.tasks == 1


def test_overlay_may_hold_only_the_world_subsystems(dataset: Path) -> None:
    overlay = dataset / "tasks" / "task-001" / "environment" / "overlay"
    (overlay / "filesystem").mkdir(parents=True)
    (overlay / "etc").mkdir()
    (problem,) = validate_dataset(dataset).problems
    assert (problem.file, problem.field) == ("tasks/task-001/environment/overlay", "etc")


def test_symlinks_resolving_outside_the_task_or_world_are_reported(dataset: Path) -> None:
    """A chain (`x -> s/up/a/../../secret`, `s/up -> ..`) is judged by where it resolves."""
    task = dataset / "tasks" / "task-001"
    fs = task / "environment" / "overlay" / "filesystem"
    (fs / "s").mkdir(parents=True)
    (fs / "a").mkdir()
    (fs / "x").symlink_to("s/up/a/../../../../../../../etc/hostname")
    (fs / "s" / "up").symlink_to("..")
    (fs / "ok").symlink_to("a")
    world = next((dataset / "worlds").iterdir())
    (world / "filesystem" / "leak").symlink_to("/etc/hostname")
    problems = validate_dataset(dataset).problems
    files = {p.file for p in problems}
    assert "tasks/task-001/environment/overlay/filesystem/x" in files
    assert any(f.endswith("filesystem/leak") for f in files)
    assert all("resolves outside" in p.message for p in problems)
    assert not any(f.endswith("/ok") for f in files)


# The grader's time: harbor cutting the grader off while it reads is a 0 that trains (grader_budget).
TIMEOUT = "verifier.timeout_sec"
DEADLINE = "verifier.env.KWRL_GRADER_DEADLINE_S"


@pytest.mark.parametrize(
    ("timeout", "env", "fields"),
    [
        (900.0, None, []),  # kwrl's own defaults: 180 s + 20 s watchdog + 30 s margin
        (230.0, None, []),  # exactly enough
        (229.0, None, [TIMEOUT]),  # the default deadline does not fit
        (200.0, {"KWRL_GRADER_DEADLINE_S": "150"}, []),  # a lowered deadline fits
        (6.0, {"KWRL_GRADER_DEADLINE_S": "600"}, [TIMEOUT]),
        (100.0, {"KWRL_GRADER_DEADLINE_S": "${GRADER_DEADLINE:-60}"}, [TIMEOUT]),  # its default
        (10.0, {"KWRL_GRADER_DEADLINE_S": "${GRADER_DEADLINE}"}, []),  # the host's: not known
        (900.0, {"KWRL_GRADER_DEADLINE_S": "soon"}, [DEADLINE]),
        (900.0, {"KWRL_GRADER_DEADLINE_S": "-5"}, [DEADLINE]),
        (900.0, {"KWRL_GRADER_DEADLINE_S": "inf"}, [DEADLINE]),
        (900.0, {"KWRL_GRADER_DEADLINE_S": "", "KWRL_GRADER_RECALC": "0"}, []),
    ],
)
def test_the_verifier_timeout_must_outlast_the_graders_deadline(
    tmp_path: Path, timeout: float, env: dict[str, str] | None, fields: list[str]
) -> None:
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "t", world_id=world, grader="kwrl", verifier_timeout_sec=timeout,
                     verifier_env=env)  # fmt: skip
    problems, _ = validate_task(task)
    assert [(p.file, p.field) for p in problems] == [("t/task.toml", f) for f in fields]


def test_the_timeout_problem_says_why_and_both_fixes(tmp_path: Path) -> None:
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "t", world_id=world, grader="kwrl", verifier_timeout_sec=120.0,
                     verifier_env={"KWRL_GRADER_DEADLINE_S": "100"})  # fmt: skip
    (problem,) = validate_task(task)[0]
    assert "120 s is under the grader's deadline (100 s, KWRL_GRADER_DEADLINE_S from " in (
        problem.message
    )
    assert "= 150 s" in problem.message and "grader_budget" in problem.message
    assert "raise timeout_sec to at least 150" in problem.message
    assert "lower KWRL_GRADER_DEADLINE_S in [verifier].env to at most 70" in problem.message
    env = {"KWRL_GRADER_DEADLINE_S": "soon"}
    bad_task = make_task(tmp_path, "u", world_id=world, grader="kwrl", verifier_env=env)
    (bad,) = validate_task(bad_task)[0]
    assert bad.message.startswith("'soon': ") and "a positive number of seconds" in bad.message


def test_a_task_not_graded_by_kwrl_has_its_own_timeout(tmp_path: Path) -> None:
    world = make_world(tmp_path).name
    task = make_task(tmp_path, "t", world_id=world, grader="shell", verifier_timeout_sec=10.0)
    assert validate_task(task)[0] == []


def test_data_validate_reports_a_short_verifier_timeout(tmp_path: Path) -> None:
    """Through the real CLI: exit 1, the task.toml field named, JSON too."""
    from typer.testing import CliRunner

    from kwrl.cli import app

    world = make_world(tmp_path).name
    make_task(tmp_path, "ok", world_id=world, grader="kwrl")
    make_task(tmp_path, "short", world_id=world, grader="kwrl", verifier_timeout_sec=60.0)
    runner = CliRunner(env={"COLUMNS": "250"})
    r = runner.invoke(app, ["data", "validate", str(tmp_path), "--json"])
    assert r.exit_code == 1, r.output
    (problem,) = json.loads(r.output)["problems"]
    assert problem["task"] == "short" and problem["file"] == "tasks/short/task.toml"
    assert problem["field"] == TIMEOUT and "raise timeout_sec to at least 230" in problem["message"]
    r = runner.invoke(app, ["data", "validate", str(tmp_path / "tasks" / "ok")])
    assert r.exit_code == 0 and "1 tasks valid" in r.output, r.output


def test_a_task_that_rewards_doing_nothing_fails_the_no_op_control(tmp_path: Path) -> None:
    ds = synth_dataset(tmp_path / "ds", tasks=3)
    report = validate_dataset(ds, control=True)
    assert report.ok and report.control is not None
    assert report.control.graded >= 3 and report.control.unjudged == 0
    task, vid = reward_doing_nothing(ds)
    assert validate_dataset(ds).ok  # the structural checks alone see nothing wrong
    report = validate_dataset(ds, control=True)
    assert report.bad_tasks == [task]
    [p] = report.problems
    assert (p.file, p.field) == (f"tasks/{task}/tests/verifiers.json", "0.verifier_values")
    assert vid in p.message and "passes the no-op control" in p.message
    assert run_control(ds / "tasks" / task)[0][0].file == f"{task}/tests/verifiers.json"


def test_the_control_counts_criteria_only_a_judge_grades(dataset: Path) -> None:
    report = validate_dataset(dataset, control=True)
    assert report.ok and report.control is not None
    assert (report.control.graded, report.control.unjudged) == (0, 6)
    assert json.loads(report_json(report))["control"]["unjudged"] == 6


def test_a_generated_criterion_needs_a_contract_slot_or_the_judge(
    tmp_path: Path, dataset: Path
) -> None:
    """Every criterion `kwrl data synth` writes reads a slot its instruction names, reads no value
    (a file, an event, a cell), or is left to the judge; anything else is a problem naming the
    task's verifiers.json and the criterion."""
    ds = synth_dataset(tmp_path / "synth", tasks=3)
    assert validate_dataset(ds).ok
    t1, t2, t3 = sorted((ds / "tasks").iterdir())
    path = t1 / "tests" / "verifiers.json"
    vs = json.loads(path.read_text())
    vs[0]["verifier_values"]["kwrl_check"] = {"kind": "number", "value": 1.0}  # prose reading
    path.write_text(json.dumps(vs))
    path = t2 / "tests" / "verifiers.json"
    vs = json.loads(path.read_text())
    slot = next(i for i, v in enumerate(vs) if v["verifier_values"]["kwrl_check"]["kind"] == "slot")
    vs[slot]["verifier_values"]["kwrl_check"]["label"] = "A label the task never names"
    path.write_text(json.dumps(vs))
    path = t3 / "tests" / "verifiers.json"
    vs = json.loads(path.read_text())
    vs[0]["verifier_values"]["kwrl_check"] = None  # judge-only: fine
    path.write_text(json.dumps(vs))
    report = validate_dataset(ds)
    found = {(p.task, p.file, p.field) for p in report.problems}
    assert found == {
        (t1.name, f"tasks/{t1.name}/tests/verifiers.json", "0.verifier_values.kwrl_check"),
        (t2.name, f"tasks/{t2.name}/tests/verifiers.json", f"{slot}.verifier_values.kwrl_check"),
    }
    messages = " ".join(p.message for p in report.problems)
    assert "no contract slot" in messages and "'number'" in messages
    assert "not named in instruction.md" in messages
    # a task kwrl did not generate (an imported one) keeps whatever checks it has
    t = dataset / "tasks" / "task-001"
    path = t / "tests" / "verifiers.json"
    vs = json.loads(path.read_text())
    vs[0]["verifier_values"]["kwrl_check"] = {"kind": "number", "value": 1.0}
    path.write_text(json.dumps(vs))
    assert validate_dataset(dataset).ok
