"""APEX HF layout -> kwrl dataset: worlds once, task dirs that validate, counts that agree."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from tasks_builders import OVERLAY_TASK, WORLD_IB, WORLD_LAW, make_apex_layout

from kwrl.errors import OutputError, TaskFormatError, UnsafeArchiveError
from kwrl.tasks.apex import ConvertConfig, convert_apex, slugify, task_slug, world_short_name
from kwrl.tasks.models import ApexTask, ApexWorld
from kwrl.tasks.stats import dataset_stats
from kwrl.tasks.taskdir import load_task, task_dirs
from kwrl.tasks.validate import validate_dataset


@pytest.fixture
def apex(tmp_path: Path) -> Path:
    return make_apex_layout(tmp_path / "apex")


@pytest.fixture
def converted(apex: Path, tmp_path: Path) -> Path:
    convert_apex(apex, tmp_path / "ds")
    return tmp_path / "ds"


def _source(apex: Path) -> tuple[list[dict], list[dict]]:
    return (
        json.loads((apex / "tasks_and_rubrics.json").read_text()),
        json.loads((apex / "world_descriptions.json").read_text()),
    )


def test_convert_gives_a_dataset_that_validates_and_counts_agree(
    apex: Path, tmp_path: Path
) -> None:
    report = convert_apex(apex, tmp_path / "ds")
    tasks, worlds = _source(apex)
    assert (report.tasks, report.worlds, report.overlays) == (len(tasks), len(worlds), 1)
    assert validate_dataset(tmp_path / "ds").ok
    stats = dataset_stats(tmp_path / "ds")
    assert stats.tasks == len(tasks)
    assert stats.domains == {"Investment Banking": 3, "Law": 3}
    assert {w.world_id: w.tasks for w in stats.worlds} == {WORLD_IB: 3, WORLD_LAW: 3}
    assert {w.world_id: w.name for w in stats.worlds} == {
        WORLD_IB: "World 221",
        WORLD_LAW: "World 433",
    }
    counts = [len(t["rubric"]) for t in tasks]
    assert (stats.criteria.min, stats.criteria.max, stats.criteria.total) == (
        min(counts),
        max(counts),
        sum(counts),
    )
    assert stats.expected_outputs["none"] == 1
    assert stats.expected_outputs["make_new_sheet"] == 1


def test_each_world_is_unpacked_once_and_shared(converted: Path) -> None:
    assert sorted(p.name for p in (converted / "worlds").iterdir()) == [WORLD_IB, WORLD_LAW]
    ib = converted / "worlds" / WORLD_IB
    assert (ib / "filesystem/models/book1.xlsx").stat().st_size > 0
    assert (ib / ".apps_data/mail/inbox.mbox").read_text().count("Subject: Deal update") == 3
    assert (ib / ".apps_data/chat").is_dir()
    assert json.loads((ib / "world.json").read_text())["world_name"] == "World 221"
    for d in task_dirs(converted):
        assert not (d / "filesystem").exists()
        assert load_task(d).world_dir in {
            (converted / "worlds" / w).resolve() for w in (WORLD_IB, WORLD_LAW)
        }


def test_task_dir_contents_follow_the_source(apex: Path, converted: Path) -> None:
    tasks, _ = _source(apex)
    by_id = {load_task(d).task_id: load_task(d) for d in task_dirs(converted)}
    for src in tasks:
        task = by_id[src["task_id"]]
        assert task.instruction.rstrip("\n") == src["prompt"]
        assert [v.verifier_values.criteria for v in task.verifiers] == [
            r["criteria"] for r in src["rubric"]
        ]
        assert [v.verifier_index for v in task.verifiers] == list(range(len(src["rubric"])))
        assert task.verifiers[0].verifier_values.is_primary_objective is True
        assert not any(v.verifier_values.is_primary_objective for v in task.verifiers[1:])
        assert all(
            v.task_id == src["task_id"] and v.world_id == src["world_id"] for v in task.verifiers
        )
        assert task.meta.expected_output == src["expected_output"]
        assert task.config_raw["metadata"]["source"] == "apex-hf"
        golden = task.golden or []
        key = (
            "golden_text_response"
            if src["gold_response_type"] == "text"
            else "golden_file_responses"
        )
        assert src["gold_response"] in json.dumps(golden[0][key])


def test_expected_file_type_is_derived_like_archipelago(converted: Path) -> None:
    types = {}
    for d in task_dirs(converted):
        task = load_task(d)
        types[task.meta.expected_output] = task.verifiers[0].verifier_values.expected_file_type
    assert types["make_new_sheet"] == "Spreadsheets (.xlsx, .xls, .xlsm, .ods)"
    assert types["edit_existing_doc"] == "Word Documents (.docx, .doc, .odt)"
    assert types["make_new_slide_deck"] == "Presentations (.pptx, .ppt, .odp)"
    assert types["message_in_console"] == "Final Answer Only (No Files)"
    assert types[None] is None


def test_task_files_become_the_overlay(converted: Path) -> None:
    (task,) = [load_task(d) for d in task_dirs(converted) if load_task(d).task_id == OVERLAY_TASK]
    assert (task.overlay_dir / "filesystem/inputs/extra.xlsx").stat().st_size > 0
    assert (task.overlay_dir / ".apps_data/mail/task.mbox").exists()
    others = [load_task(d) for d in task_dirs(converted) if load_task(d).task_id != OVERLAY_TASK]
    assert not any(t.overlay_dir.exists() for t in others)


def test_world_short_name_and_slug() -> None:
    world = ApexWorld(
        world_id=WORLD_LAW, world_name="World 433", world_description="", domain="Law"
    )
    assert world_short_name(world) == "law-world-433"
    task = ApexTask.model_validate(
        {
            "task_id": "task_" + "e" * 24 + "12345678",
            "task_name": "Draft: SPA / Redline!",
            "domain": "Law",
            "world_id": WORLD_LAW,
            "prompt": "p",
            "rubric": [{"verifier_id": "v", "criteria": "c"}],
        }
    )
    assert task_slug(task) == "draft-spa-redline-12345678"
    assert slugify("  ") == "task"


def test_archipelago_snapshot_serves_as_a_world_zip(
    archipelago_fixtures: Path, apex: Path, tmp_path: Path
) -> None:
    shutil.copy(
        archipelago_fixtures / "simple_task/original_snapshot.zip",
        apex / "world_files_zipped" / f"{WORLD_LAW}.zip",
    )
    convert_apex(apex, tmp_path / "ds")
    assert (
        tmp_path / "ds/worlds" / WORLD_LAW / "filesystem/animals/xk92m/qz7fw.png"
    ).stat().st_size == 20860
    assert (tmp_path / "ds/worlds" / WORLD_LAW / ".apps_data/mail").is_dir()


# --------------------------------------------------------------------------- refusals


def _rewrite(apex: Path, name: str, edit) -> None:
    data = json.loads((apex / name).read_text())
    edit(data)
    (apex / name).write_text(json.dumps(data))


def _assert_nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "ds").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["apex"]


@pytest.mark.parametrize(
    ("name", "edit", "field", "message"),
    [
        (
            "tasks_and_rubrics.json",
            lambda d: d[2].pop("prompt"),
            "2.prompt",
            "required field is missing",
        ),
        (
            "tasks_and_rubrics.json",
            lambda d: d[1].update(colour="red"),
            "1.colour",
            "unknown field",
        ),
        (
            "tasks_and_rubrics.json",
            lambda d: d[0].update(domain="Astrology"),
            "0.domain",
            "Investment Banking",
        ),
        (
            "tasks_and_rubrics.json",
            lambda d: d[3].update(expected_output="a_poem"),
            "3.expected_output",
            "make_new_doc",
        ),
        ("tasks_and_rubrics.json", lambda d: d[4].update(rubric=[]), "4.rubric", "at least 1"),
        (
            "tasks_and_rubrics.json",
            lambda d: d[5].update(task_id=d[0]["task_id"]),
            "5.task_id",
            "duplicate task id",
        ),
        (
            "tasks_and_rubrics.json",
            lambda d: d[5].update(world_id="world_nowhere"),
            "5.world_id",
            "not in world_descriptions.json",
        ),
        (
            "tasks_and_rubrics.json",
            lambda d: d[0].update(task_id="../../etc"),
            "0.task_id",
            "not a safe id",
        ),
        (
            "world_descriptions.json",
            lambda d: d.append(dict(d[0])),
            "2.world_id",
            "duplicate world id",
        ),
        (
            "world_descriptions.json",
            lambda d: d[0].update(world_id="../up"),
            "0.world_id",
            "not a safe id",
        ),
    ],
)
def test_bad_source_json_is_refused_naming_file_and_field(
    apex: Path,
    tmp_path: Path,
    name: str,
    edit,
    field: str,
    message: str,
) -> None:
    _rewrite(apex, name, edit)
    with pytest.raises(TaskFormatError) as err:
        convert_apex(apex, tmp_path / "ds")
    assert err.value.path.endswith(name)
    assert err.value.field == field
    assert message in err.value.message
    _assert_nothing_written(tmp_path)


def test_malformed_json_is_refused(apex: Path, tmp_path: Path) -> None:
    (apex / "world_descriptions.json").write_text('[{"world_id": ')
    with pytest.raises(TaskFormatError, match=r"world_descriptions\.json: invalid JSON at line 1"):
        convert_apex(apex, tmp_path / "ds")
    _assert_nothing_written(tmp_path)


def test_missing_world_zip_is_refused(apex: Path, tmp_path: Path) -> None:
    (apex / "world_files_zipped" / f"{WORLD_LAW}.zip").unlink()
    with pytest.raises(TaskFormatError, match="world zip is missing"):
        convert_apex(apex, tmp_path / "ds")
    _assert_nothing_written(tmp_path)


@pytest.mark.parametrize(
    ("member", "message"),
    [
        ("filesystem/../../escape.txt", "'..'"),
        ("/abs.txt", "absolute path"),
        ("secrets/key.pem", "outside the world's top dirs"),
    ],
)
def test_unsafe_world_zip_leaves_nothing(
    apex: Path, tmp_path: Path, member: str, message: str
) -> None:
    with zipfile.ZipFile(apex / "world_files_zipped" / f"{WORLD_LAW}.zip", "a") as zf:
        zf.writestr(member, b"x")
    with pytest.raises(UnsafeArchiveError) as err:
        convert_apex(apex, tmp_path / "ds")
    assert message in err.value.message
    assert err.value.path.endswith(f"{WORLD_LAW}.zip")
    _assert_nothing_written(tmp_path)


def test_a_link_chain_in_a_world_zip_is_refused_naming_zip_and_member(
    apex: Path, tmp_path: Path
) -> None:
    """`filesystem/x` is inside alone; `filesystem/s/up -> ..` written after it lets it climb out."""
    with zipfile.ZipFile(apex / "world_files_zipped" / f"{WORLD_LAW}.zip", "a") as zf:
        for name, link in [("filesystem/s/", None), ("filesystem/a/b/", None),
                           ("filesystem/x", "s/up/a/b/../../../../../secret.txt"),
                           ("filesystem/s/up", "..")]:  # fmt: skip
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o40755 if link is None else 0o120777) << 16
            zf.writestr(info, b"" if link is None else link.encode())
    with pytest.raises(UnsafeArchiveError) as err:
        convert_apex(apex, tmp_path / "ds")
    assert err.value.path.endswith(f"{WORLD_LAW}.zip") and err.value.field == "filesystem/x"
    assert "resolves outside the destination" in err.value.message
    _assert_nothing_written(tmp_path)


def test_size_cap_covers_world_zips_and_overlays(apex: Path, tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="size cap of 100000 bytes"):
        convert_apex(apex, tmp_path / "ds", ConvertConfig(max_bytes=100_000))
    _assert_nothing_written(tmp_path)


def test_existing_output_needs_overwrite(apex: Path, converted: Path) -> None:
    (converted / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="earlier `kwrl data convert`; pass --overwrite"):
        convert_apex(apex, converted)
    report = convert_apex(apex, converted, ConvertConfig(overwrite=True))
    assert report.tasks == 6
    assert (converted / "notes.txt").read_text() == "mine"  # an overwrite replaces kwrl's only


def test_task_dir_settings_reach_task_toml(apex: Path, tmp_path: Path) -> None:
    cfg = ConvertConfig.model_validate(
        {
            "task_dir": {
                "cpus": 8,
                "agent_timeout_sec": 120,
                "world_image": "reg/w:{world_short_name}",
            }
        }
    )
    convert_apex(apex, tmp_path / "ds", cfg)
    task = load_task(task_dirs(tmp_path / "ds")[0])
    assert task.config.environment.cpus == 8
    assert task.config.agent.timeout_sec == 120
    assert (
        "FROM reg/w:investment-banking-world-221"
        in (task.path / "environment/Dockerfile").read_text()
    )


def test_hf_dataset_id_is_fetched_with_the_apex_patterns(
    apex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[dict[str, object]] = []

    def fake_snapshot_download(**kwargs: object) -> str:
        calls.append(kwargs)
        return str(apex)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    report = convert_apex("mercor/apex-agents", tmp_path / "ds")
    assert report.tasks == 6
    assert calls[0]["repo_id"] == "mercor/apex-agents" and calls[0]["repo_type"] == "dataset"
    assert "world_files_zipped/*.zip" in calls[0]["allow_patterns"]  # type: ignore[operator]
    assert (tmp_path / "ds").stat().st_mode & 0o777 == 0o755
