"""write_task_dir writes a harbor-valid task dir; load_task reads it back and names faults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tasks_builders import WORLD_ID, make_spec, make_world

from kwrl.errors import TaskFormatError
from kwrl.tasks.taskdir import TEST_SH_TEXT, TaskSpec, load_task, write_task_dir


def test_written_task_loads_back_with_every_field(dataset: Path) -> None:
    task = load_task(dataset / "tasks" / "task-001")
    assert task.task_id == f"task_{1:032x}"
    assert task.instruction == "Answer question 1.\n"
    assert [v.verifier_id for v in task.verifiers] == ["ver_1_0", "ver_1_1"]
    assert task.verifiers[0].verifier_values.is_primary_objective
    assert task.golden == [{"golden_text_response": "answer 1"}]
    assert task.world_dir == (dataset / "worlds" / WORLD_ID).resolve()
    assert (
        task.overlay_dir == (dataset / "tasks" / "task-001" / "environment" / "overlay").resolve()
    )
    assert task.config.agent.timeout_sec == 3600.0
    assert task.config.environment.cpus == 2
    assert task.config_raw["metadata"]["world_id"] == WORLD_ID
    assert task.meta.ecr_image == f"kwrl-world-{WORLD_ID}:latest"


def test_written_task_is_a_valid_harbor_task(dataset: Path) -> None:
    from harbor.models.task.task import Task

    task_dir = dataset / "tasks" / "task-002"
    assert Task.is_valid_dir(task_dir)
    assert Task(task_dir).instruction.startswith("Answer question 2.")


def test_test_sh_runs_the_contract_command_and_is_executable(dataset: Path) -> None:
    test_sh = dataset / "tasks" / "task-001" / "tests" / "test.sh"
    assert test_sh.read_text() == TEST_SH_TEXT
    assert os.access(test_sh, os.X_OK)
    joined = " ".join(TEST_SH_TEXT.replace("\\\n", " ").split())
    assert (
        'cd / exec "${KWRL_PYTHON:-python3}" -I -m kwrl.grading.verify --tests /tests --initial /kwrl/initial/world '
        "--initial /kwrl/initial/overlay --final / --answer /logs/agent/final_answer.txt --out /logs/verifier"
    ) in joined


def test_dockerfile_names_the_world_image(dataset: Path) -> None:
    text = (dataset / "tasks" / "task-001" / "environment" / "Dockerfile").read_text()
    assert f"FROM kwrl-world-{WORLD_ID}:latest" in text


def test_overlay_solution_and_extra_files_are_written(tmp_path: Path) -> None:
    make_world(tmp_path)
    overlay = tmp_path / "src_overlay"
    (overlay / "filesystem" / "deals").mkdir(parents=True)
    (overlay / "filesystem" / "deals" / "memo.txt").write_text("memo")
    (overlay / ".apps_data" / "mail").mkdir(parents=True)
    (overlay / ".apps_data" / "mail" / "inbox.mbox").write_text("From a@b\n")
    spec = make_spec(7).model_copy(
        update={
            "overlay": overlay,
            "solution": "#!/bin/sh\nkwrl world call x\n",
            "extra_files": {"tests/gold/a.txt": b"A"},
        }
    )
    out = write_task_dir(tmp_path / "tasks" / "task-007", spec)
    assert (out / "environment/overlay/filesystem/deals/memo.txt").read_text() == "memo"
    assert (out / "environment/overlay/.apps_data/mail/inbox.mbox").exists()
    assert os.access(out / "solution/solve.sh", os.X_OK)
    assert (out / "tests/gold/a.txt").read_bytes() == b"A"
    assert load_task(out).overlay_dir.is_dir()


def test_rewriting_a_task_replaces_it_whole(dataset: Path) -> None:
    task_dir = dataset / "tasks" / "task-001"
    (task_dir / "stale.txt").write_text("old")
    write_task_dir(task_dir, make_spec(1))
    assert not (task_dir / "stale.txt").exists()
    assert not [p for p in task_dir.parent.iterdir() if p.name.startswith(".")]


def test_dir_name_must_equal_slug(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="task_slug"):
        write_task_dir(tmp_path / "tasks" / "other-name", make_spec(1))
    assert not (tmp_path / "tasks" / "other-name").exists()


def test_extra_file_outside_the_task_dir_is_refused(tmp_path: Path) -> None:
    spec = make_spec(1).model_copy(update={"extra_files": {"../escape.txt": b"x"}})
    with pytest.raises(TaskFormatError, match=r"\.\./escape\.txt"):
        write_task_dir(tmp_path / "tasks" / "task-001", spec)
    assert not (tmp_path / "tasks" / "escape.txt").exists()


def test_spec_without_a_primary_criterion_is_refused(tmp_path: Path) -> None:
    spec = make_spec(1)
    for v in spec.verifiers:
        v.verifier_values.is_primary_objective = False
    with pytest.raises(TaskFormatError, match="primary objective"):
        write_task_dir(tmp_path / "tasks" / "task-001", spec)


def test_spec_requires_a_criterion() -> None:
    with pytest.raises(ValueError, match="verifiers"):
        TaskSpec.model_validate({**make_spec(1).model_dump(), "verifiers": []})


@pytest.mark.parametrize(
    ("rel", "content", "field", "message"),
    [
        ("archipelago.json", "{not json", None, "invalid JSON at line 1"),
        ("archipelago.json", '{"task_id": "x"}', "task_name", "required field is missing"),
        ("tests/verifiers.json", "[]", None, "no verifiers"),
        (
            "tests/verifiers.json",
            '[{"verifier_id": "a", "verifier_values": {"criteria": "c"}, "colour": 1}]',
            "0.colour",
            "unknown field",
        ),
        ("task.toml", "[agent\n", None, "invalid TOML"),
        ("task.toml", "[agent]\ntimeout = 3\n", "agent.timeout", "unknown field"),
        ("task.toml", "[agent]\ntimeout_sec = 'soon'\n", "agent.timeout_sec", "valid number"),
        (
            "task.toml",
            "[metadata]\nexpected_output = 'a_poem'\n",
            "metadata.expected_output",
            "not one of",
        ),
        ("tests/golden_responses.json", '[{"answer": 1}]', "0.answer", "unknown field"),
    ],
)
def test_malformed_files_name_file_and_field(
    dataset: Path, rel: str, content: str, field: str | None, message: str
) -> None:
    task_dir = dataset / "tasks" / "task-001"
    (task_dir / rel).write_text(content)
    with pytest.raises(TaskFormatError) as err:
        load_task(task_dir)
    assert err.value.path.endswith(rel)
    assert err.value.field == field
    assert message in err.value.message


def test_missing_instruction_and_missing_world_are_named(dataset: Path) -> None:
    task_dir = dataset / "tasks" / "task-001"
    (task_dir / "instruction.md").unlink()
    with pytest.raises(TaskFormatError, match=r"instruction\.md: missing file"):
        load_task(task_dir)
    meta = json.loads((task_dir / "archipelago.json").read_text())
    (task_dir / "instruction.md").write_text("x")
    meta["world_dir"] = "../../worlds/nowhere"
    (task_dir / "archipelago.json").write_text(json.dumps(meta))
    with pytest.raises(TaskFormatError) as err:
        load_task(task_dir)
    assert err.value.field == "world_dir"
    assert load_task(task_dir, require_world=False).world_dir.name == "nowhere"


def test_archipelago_simple_task_verifiers_parse(archipelago_fixtures: Path) -> None:
    from kwrl.tasks.taskdir import parse_verifiers, read_json

    path = archipelago_fixtures / "simple_task" / "verifiers.json"
    verifiers = parse_verifiers(read_json(path), path)
    assert verifiers[0].verifier_id == "ver_001"
    assert verifiers[0].verifier_values.is_primary_objective


def test_task_toml_unknown_keys_are_found_in_nested_tables_but_legacy_keys_pass(
    dataset: Path,
) -> None:
    task_dir = dataset / "tasks" / "task-001"
    (task_dir / "task.toml").write_text(
        'version = "1.0"\n[environment]\nmemory = "2G"\n[verifier.environment]\ncpus = 1\ngpu = 1\n'
    )
    with pytest.raises(TaskFormatError) as err:
        load_task(task_dir)
    assert err.value.field == "verifier.environment.gpu"
    (task_dir / "task.toml").write_text('version = "1.0"\n[environment]\nmemory = "2G"\n')
    assert load_task(task_dir).config.environment.memory_mb == 2048
