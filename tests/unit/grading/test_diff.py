from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest
from grading_testkit import copy_state, write_files

from kwrl.errors import TaskFormatError
from kwrl.grading.diff import (
    StateView,
    diff_states,
    read_changes_archive,
    task_layers,
    write_changes_archive,
)


@pytest.fixture
def layers(tmp_path: Path) -> tuple[Path, Path]:
    world = write_files(
        tmp_path / "world",
        {
            "filesystem/a.txt": "alpha",
            "filesystem/docs/b.txt": "beta",
            "filesystem/docs/c.txt": "gamma",
            ".apps_data/chat/state.json": "{}",
        },
    )
    overlay = write_files(
        tmp_path / "overlay", {"filesystem/docs/b.txt": "beta from the task overlay"}
    )
    return world, overlay


def test_a_missing_layer_is_an_error_naming_it_never_an_empty_state(
    tmp_path: Path, layers: tuple[Path, Path]
) -> None:
    world, overlay = layers
    with pytest.raises(TaskFormatError, match=r"/initial/overlay: state layer not found"):
        StateView.of([world, tmp_path / "initial" / "overlay"])
    assert task_layers(world, tmp_path / "no-overlay") == [world]
    assert task_layers(world, overlay) == [world, overlay]


def test_overlay_wins_over_world_and_a_copy_is_unchanged(
    tmp_path: Path, layers: tuple[Path, Path]
) -> None:
    initial = StateView.of(layers)
    assert initial.get("filesystem/docs/b.txt").read_text() == "beta from the task overlay"  # type: ignore[union-attr]
    final = copy_state(layers[0], tmp_path / "final")
    copy_state(layers[1], final)
    assert diff_states(initial, StateView.of([final])) == []


def test_created_modified_deleted_are_found(tmp_path: Path, layers: tuple[Path, Path]) -> None:
    final = copy_state(layers[0], tmp_path / "final")
    copy_state(layers[1], final)
    (final / "filesystem/a.txt").write_text("alpha, edited")
    (final / "filesystem/docs/c.txt").unlink()
    write_files(final, {"filesystem/out/report.txt": "new", "filesystem/~$lock.docx": "x"})
    changes = diff_states(StateView.of(layers), StateView.of([final]))
    assert [(c.path, c.change) for c in changes] == [
        ("filesystem/a.txt", "modified"),
        ("filesystem/docs/c.txt", "deleted"),
        ("filesystem/out/report.txt", "created"),
    ]


def test_same_size_different_bytes_is_modified(tmp_path: Path, layers: tuple[Path, Path]) -> None:
    final = copy_state(layers[0], tmp_path / "final")
    copy_state(layers[1], final)
    p = final / "filesystem/a.txt"
    p.write_text("ALPHA")  # same size, new mtime
    st = (layers[0] / "filesystem/a.txt").stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert [c.path for c in diff_states(StateView.of(layers), StateView.of([final]))] == [
        "filesystem/a.txt"
    ]


def test_glob_is_relative_to_the_filesystem_root(layers: tuple[Path, Path]) -> None:
    view = StateView.of(layers)
    assert view.glob("/docs/*.txt") == ["filesystem/docs/b.txt", "filesystem/docs/c.txt"]
    assert view.glob("/filesystem/docs/b.txt") == ["filesystem/docs/b.txt"]
    assert view.glob("c.txt") == ["filesystem/docs/c.txt"]
    assert view.glob("*.json") == []


def test_changes_archive_rebuilds_the_final_state(
    tmp_path: Path, layers: tuple[Path, Path]
) -> None:
    final = copy_state(layers[0], tmp_path / "final")
    copy_state(layers[1], final)
    (final / "filesystem/a.txt").write_text("alpha, edited")
    (final / "filesystem/docs/c.txt").unlink()
    write_files(
        final, {"filesystem/new/x.bin": b"\x00\x01", ".apps_data/chat/state.json": '{"a": 1}'}
    )
    initial = StateView.of(layers)
    changes = diff_states(initial, StateView.of([final]))
    archive = tmp_path / "out" / "changes.tar.gz"
    write_changes_archive(changes, archive)

    dest = tmp_path / "extracted"
    listing = read_changes_archive(archive, dest)
    assert listing["deleted"] == ["filesystem/docs/c.txt"]
    assert sorted(listing["created"]) == ["filesystem/new/x.bin"]
    rebuilt = StateView.of([*layers, dest], deleted=listing["deleted"])
    assert {k: v.read_bytes() for k, v in rebuilt.files().items()} == {
        k: v.read_bytes() for k, v in StateView.of([final]).files().items()
    }
    regraded = diff_states(initial, rebuilt)
    assert [(c.path, c.change) for c in regraded] == [(c.path, c.change) for c in changes]


def test_an_archive_member_outside_the_subsystems_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "changes.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escape.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(TaskFormatError, match="escape"):
        read_changes_archive(archive, tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()
