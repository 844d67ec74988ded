"""Parquet bundles: pack -> extract reproduces a dataset (tasks and worlds) byte for byte; bad rows
and inputs that cannot round-trip are refused."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwrl.errors import OutputError, TaskFormatError, UnsafeArchiveError
from kwrl.io import OUTPUT_MARKER
from kwrl.tasks.bundles import extract_bundles, pack_bundles, resolve_source
from kwrl.tasks.taskdir import load_task


def _tree(root: Path) -> dict[str, tuple[bytes | str, int]]:
    out: dict[str, tuple[bytes | str, int]] = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if rel == OUTPUT_MARKER:
            continue
        if p.is_symlink():
            out[rel] = (str(p.readlink()), 0)
        elif p.is_file():
            out[rel] = (p.read_bytes(), p.stat().st_mode & 0o111)
        else:
            out[rel] = (b"<dir>", 0)
    return out


def _shard(
    path: Path,
    rows: list[tuple[object, object]],
    columns: tuple[str, str] = ("path", "task_binary"),
) -> Path:
    table = pa.table({columns[0]: [r[0] for r in rows], columns[1]: [r[1] for r in rows]})
    pq.write_table(table, path)
    return path


def _tgz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_pack_extract_pack_is_byte_identical(dataset: Path, tmp_path: Path) -> None:
    tasks = dataset / "tasks"
    (tasks / "task-001" / "environment" / "overlay" / "filesystem").mkdir(parents=True)
    (
        tasks / "task-001" / "environment" / "overlay" / "filesystem" / "ünïcode name.txt"
    ).write_bytes(b"\x00\x01")
    first = pack_bundles(dataset, tmp_path / "b1", rows_per_shard=2)
    assert [p.name for p in first] == [
        "train-00000-of-00002.parquet",
        "train-00001-of-00002.parquet",
        "worlds-00000-of-00001.parquet",
    ]
    names = extract_bundles(resolve_source(tmp_path / "b1"), tmp_path / "x")
    world = next((dataset / "worlds").iterdir()).name
    assert names == ["tasks/task-001", "tasks/task-002", "tasks/task-003", f"worlds/{world}"]
    assert _tree(tmp_path / "x") == _tree(dataset)
    second = pack_bundles(tmp_path / "x", tmp_path / "b2", rows_per_shard=2)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_extracted_tasks_load_with_their_world(dataset: Path, tmp_path: Path) -> None:
    pack_bundles(dataset, tmp_path / "b")
    extract_bundles(resolve_source(tmp_path / "b"), tmp_path / "x")
    task = load_task(tmp_path / "x" / "tasks" / "task-002")
    assert task.world_dir == (tmp_path / "x" / "worlds" / load_task(
        dataset / "tasks" / "task-002").world_dir.name).resolve()  # fmt: skip


def test_task_bundles_without_world_shards_extract_one_dir_per_row(
    dataset: Path, tmp_path: Path
) -> None:
    shards = pack_bundles(dataset, tmp_path / "b")
    names = extract_bundles([s for s in shards if s.name.startswith("train-")], tmp_path / "x")
    assert names == ["task-001", "task-002", "task-003"]
    assert (tmp_path / "x" / "task-001" / "instruction.md").is_file()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("tasks", "outside .*tasks, so a bundle of it would lose the world: pack the dataset"),
        ("worlds", "holds a dataset.s worlds, not tasks: pack .*ds"),
        ("tasks/task-001", "is one task dir"),
        ("missing", "not a dir"),
    ],
)
def test_inputs_that_cannot_round_trip_are_refused_with_the_reason(
    dataset: Path, tmp_path: Path, given: str, message: str
) -> None:
    with pytest.raises(TaskFormatError, match=message):
        pack_bundles(dataset / given, tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_a_dataset_with_other_top_level_entries_is_refused(dataset: Path, tmp_path: Path) -> None:
    (dataset / "notes.txt").write_text("mine")
    with pytest.raises(TaskFormatError, match="tasks/ and worlds/ only") as err:
        pack_bundles(dataset, tmp_path / "b")
    assert err.value.field == "notes.txt"


def test_rows_wrapped_in_a_top_folder_named_path_are_unwrapped(tmp_path: Path) -> None:
    shard = _shard(
        tmp_path / "s.parquet",
        [("t1", _tgz({"t1/instruction.md": b"hi", "t1/tests/test.sh": b"x"}))],
    )
    extract_bundles([shard], tmp_path / "out")
    assert (tmp_path / "out/t1/instruction.md").read_bytes() == b"hi"
    assert (tmp_path / "out/t1/tests/test.sh").exists()


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        ("../escape", UnsafeArchiveError, "'..'"),
        ("/abs", UnsafeArchiveError, "absolute path"),
        ("a/b", UnsafeArchiveError, "single dir name"),
        ("", TaskFormatError, "empty"),
        (None, TaskFormatError, "empty"),
    ],
)
def test_unsafe_row_paths_are_refused(
    tmp_path: Path, path: str | None, error: type[Exception], message: str
) -> None:
    shard = _shard(
        tmp_path / "s.parquet",
        [("ok", _tgz({"instruction.md": b"x"})), (path, _tgz({"instruction.md": b"x"}))],
    )
    with pytest.raises(error, match=message):
        extract_bundles([shard], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["s.parquet"]


def test_unsafe_member_inside_a_row_names_shard_row_and_member(tmp_path: Path) -> None:
    shard = _shard(tmp_path / "s.parquet", [("t", _tgz({"../../evil.sh": b"x"}))])
    with pytest.raises(UnsafeArchiveError) as err:
        extract_bundles([shard], tmp_path / "out")
    assert err.value.path == f"{shard} row 0"
    assert err.value.field == "../../evil.sh"
    assert not (tmp_path / "out").exists()


def test_duplicate_paths_and_missing_columns_are_refused(tmp_path: Path) -> None:
    blob = _tgz({"instruction.md": b"x"})
    dup = _shard(tmp_path / "d.parquet", [("t", blob), ("t", blob)])
    with pytest.raises(TaskFormatError, match="duplicate path 't'") as err:
        extract_bundles([dup], tmp_path / "out")
    assert err.value.field == "row 1.path"
    wrong = _shard(tmp_path / "w.parquet", [("t", blob)], columns=("name", "task_binary"))
    with pytest.raises(TaskFormatError, match="missing column") as err:
        extract_bundles([wrong], tmp_path / "out")
    assert err.value.field == "path"
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TaskFormatError, match="not a readable parquet"):
        extract_bundles([tmp_path / "junk.parquet"], tmp_path / "out")


def test_size_cap_spans_all_rows(tmp_path: Path) -> None:
    rows = [(f"t{i}", _tgz({"data.bin": bytes(400)})) for i in range(3)]
    shard = _shard(tmp_path / "s.parquet", rows)
    with pytest.raises(UnsafeArchiveError, match="size cap of 1000 bytes") as err:
        extract_bundles([shard], tmp_path / "out", max_bytes=1000)
    assert err.value.path.endswith("row 2")
    extract_bundles([shard], tmp_path / "out", max_bytes=1200)


def test_existing_output_is_kept_unless_overwrite(dataset: Path, tmp_path: Path) -> None:
    pack_bundles(dataset, tmp_path / "b")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    with pytest.raises(OutputError, match="--overwrite"):
        extract_bundles(resolve_source(tmp_path / "b"), out)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    extract_bundles(resolve_source(tmp_path / "b"), out, overwrite=True)
    assert (out / "mine.txt").read_text() == "keep"
    assert (out / "tasks" / "task-001" / "instruction.md").exists()


def test_a_second_pack_replaces_only_its_own_shards(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    pack_bundles(dataset, out, rows_per_shard=1)
    (out / "README.md").write_text("mine")
    with pytest.raises(OutputError, match="earlier `kwrl data pack`; pass --overwrite"):
        pack_bundles(dataset, out)
    pack_bundles(dataset, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == [
        OUTPUT_MARKER,
        "README.md",
        "train-00000-of-00001.parquet",
        "worlds-00000-of-00001.parquet",
    ]
    assert (out / "README.md").read_text() == "mine"


def test_resolve_source_rejects_what_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match=r"no \*\.parquet"):
        resolve_source(tmp_path)
    with pytest.raises(TaskFormatError, match="HF dataset id"):
        resolve_source(tmp_path / "missing" / "deeper")


def test_hf_dataset_id_is_fetched_with_parquet_patterns(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    pack_bundles(dataset, tmp_path / "hub")
    calls: list[dict[str, object]] = []

    def fake_snapshot_download(**kwargs: object) -> str:
        calls.append(kwargs)
        return str(tmp_path / "hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    shards = resolve_source("org/apex-bundles", revision="v1")
    assert calls == [
        {
            "repo_id": "org/apex-bundles",
            "repo_type": "dataset",
            "allow_patterns": ["*.parquet"],
            "revision": "v1",
        }
    ]
    assert shards == sorted((tmp_path / "hub").glob("*.parquet"))


def test_outputs_are_world_readable_dirs(dataset: Path, tmp_path: Path) -> None:
    pack_bundles(dataset, tmp_path / "b")
    extract_bundles(resolve_source(tmp_path / "b"), tmp_path / "x")
    assert (tmp_path / "b").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "x").stat().st_mode & 0o777 == 0o755


_names = st.text(alphabet="abcXYZ019_-. é", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.lists(_names, min_size=1, max_size=3).map(tuple),
        st.tuples(st.binary(max_size=64), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_any_tree_round_trips_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory, files: dict
) -> None:
    base = tmp_path_factory.mktemp("rt")
    src = base / "src" / "t"
    for parts, (data, executable) in files.items():
        target = src.joinpath(*parts)
        if any(p.is_file() for p in [*target.parents][: len(parts) - 1]) or target.is_dir():
            continue  # a name used both as file and as dir
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        target.chmod(0o755 if executable else 0o644)
    src.mkdir(parents=True, exist_ok=True)
    (src / "instruction.md").write_bytes(b"a task dir")  # the alphabet cannot spell this name
    first = pack_bundles(base / "src", base / "b1")
    extract_bundles(first, base / "x")
    assert _tree(base / "x") == _tree(base / "src")
    second = pack_bundles(base / "x", base / "b2")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_a_failed_hub_download_is_a_task_format_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def offline(**kwargs: object) -> str:
        raise OSError("offline mode is enabled")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(TaskFormatError, match="fetching it as a HF dataset failed: offline") as err:
        resolve_source("org/missing")
    assert err.value.path == "org/missing"


def test_a_link_chain_in_a_row_is_refused_naming_shard_row_and_member(tmp_path: Path) -> None:
    """`x` is inside alone; `s/up -> ..` written after it makes `x` climb out of the output."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, link in [("s", None), ("a/b/c/d/e/f", None),
                           ("x", "s/up/a/b/c/d/e/f/../../../../../../../../s.parquet"),
                           ("s/up", "..")]:  # fmt: skip
            info = tarfile.TarInfo(name)
            info.type = tarfile.DIRTYPE if link is None else tarfile.SYMTYPE
            info.linkname = link or ""
            tf.addfile(info)
    shard = _shard(tmp_path / "s.parquet", [("t", buf.getvalue())])
    with pytest.raises(UnsafeArchiveError, match="resolves outside the destination") as err:
        extract_bundles([shard], tmp_path / "out")
    assert (err.value.path, err.value.field) == (f"{shard} row 0", "x")
    assert not (tmp_path / "out").exists()
