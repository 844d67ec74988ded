"""kwrl.io: atomic writes get the mode the umask gives; `claim_output` refuses what would change
what the user did not ask to change, and an overwrite replaces only what kwrl wrote."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kwrl.errors import OutputError
from kwrl.io import (
    OUTPUT_MARKER,
    atomic_dir,
    claim_output,
    read_marker,
    umask,
    write_bytes,
    write_json,
)


@pytest.fixture
def mask() -> Iterator[None]:
    """Run under umask 022, as a user's shell does."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_umask_is_read_without_changing_it(mask: None) -> None:
    assert umask() == 0o022
    assert umask() == 0o022


def test_new_files_get_the_umask_mode_and_replaced_ones_keep_theirs(
    tmp_path: Path, mask: None
) -> None:
    write_json(tmp_path / "eval.json", {"a": 1})
    assert _mode(tmp_path / "eval.json") == 0o644  # mkstemp's 0600 before
    os.umask(0o077)
    write_bytes(tmp_path / "private", b"x")
    assert _mode(tmp_path / "private") == 0o600
    (tmp_path / "eval.json").chmod(0o640)
    write_json(tmp_path / "eval.json", {"a": 2})
    assert _mode(tmp_path / "eval.json") == 0o640


def test_atomic_dir_gets_the_umask_mode(tmp_path: Path, mask: None) -> None:
    with atomic_dir(tmp_path / "d") as tmp:
        (tmp / "f").write_text("x")
    assert _mode(tmp_path / "d") == 0o755


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def test_an_existing_file_the_input_and_its_parent_or_child_are_refused(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    src = tmp_path / "D" / "tasks"
    src.mkdir(parents=True)
    before = _tree(tmp_path)
    cases = {
        tmp_path / "notes.txt": "is an existing file",
        src: "is the input",
        tmp_path / "D": "holds the input",
        src / "x": "is inside the input",
    }
    for out, message in cases.items():
        with pytest.raises(OutputError, match=message):
            claim_output(out, "kwrl data pack", inputs=[src])
    assert _tree(tmp_path) == before


def test_a_dir_of_the_users_is_refused_and_an_overwrite_keeps_its_files(tmp_path: Path) -> None:
    out = tmp_path / "keep"
    out.mkdir()
    (out / "a.txt").write_text("mine")
    with pytest.raises(OutputError, match="kwrl did not write what it holds; pass --overwrite"):
        claim_output(out, "kwrl data pack")
    with claim_output(out, "kwrl data pack", overwrite=True).staged() as stage:
        (stage / "train.parquet").write_text("new")
    assert (out / "a.txt").read_text() == "mine"
    assert read_marker(out) == {
        "verb": "kwrl data pack",
        "entries": ["train.parquet"],
        "kept": ["a.txt"],
    }
    # A second write: refused without the flag, and with it replaces only kwrl's own entries.
    with pytest.raises(OutputError, match="earlier `kwrl data pack`; pass --overwrite"):
        claim_output(out, "kwrl data pack")
    with claim_output(out, "kwrl data pack", overwrite=True).staged() as stage:
        (stage / "other.parquet").write_text("newer")
    assert sorted(p.name for p in out.iterdir()) == [OUTPUT_MARKER, "a.txt", "other.parquet"]


def test_a_staged_write_never_replaces_a_users_file_of_the_same_name(tmp_path: Path) -> None:
    out = tmp_path / "keep"
    out.mkdir()
    (out / "tasks").write_text("mine")
    output = claim_output(out, "kwrl data synth", overwrite=True)
    with (
        pytest.raises(OutputError, match="tasks there was not written by kwrl"),
        output.staged() as stage,
    ):
        (stage / "tasks").mkdir()
    assert sorted(p.name for p in out.iterdir()) == ["tasks"]
    assert (out / "tasks").read_text() == "mine"


def test_a_failed_staged_write_leaves_nothing(tmp_path: Path) -> None:
    output = claim_output(tmp_path / "new" / "out", "kwrl data extract")
    assert not (tmp_path / "new").exists()  # nothing is made until the verb writes
    with pytest.raises(RuntimeError), output.staged() as stage:
        (stage / "half").write_text("x")
        raise RuntimeError("unsafe member")
    assert not (tmp_path / "new" / "out").exists()


def test_a_resumed_run_dir_goes_on_and_an_old_one_without_marker_is_adopted(
    tmp_path: Path,
) -> None:
    run = tmp_path / "R"
    with claim_output(run, "kwrl eval", resume=True).writing(["eval.toml"]):
        (run / "eval.toml").write_text("model = 'oracle'")
        (run / "trials").mkdir()
    again = claim_output(run, "kwrl eval", resume=True)
    assert again.resumed and again.entries == {"eval.toml", "trials"}
    with pytest.raises(OutputError, match="earlier `kwrl eval`"):
        claim_output(run, "kwrl rollout")
    old = tmp_path / "old"
    old.mkdir()
    (old / "eval.toml").write_text("model = 'oracle'")
    assert claim_output(old, "kwrl eval", resume=True, signature="eval.toml").resumed
    # An overwrite of a run dir removes kwrl's entries and nothing else.
    (run / "notes.txt").write_text("added later")
    claim_output(run, "kwrl eval", overwrite=True, resume=True).open(["eval.toml"])
    assert sorted(p.name for p in run.iterdir()) == [OUTPUT_MARKER, "notes.txt"]


def test_the_current_dir_is_refused_when_it_holds_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "D").mkdir()
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match=r"--out \.: holds the input D"):
        claim_output(Path("."), "kwrl data pack", inputs=[Path("D")])
