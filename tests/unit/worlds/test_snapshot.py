"""populate refuses unsafe archives whole and layers safe ones; snapshots round-trip byte-exactly."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from kwrl.errors import UnsafeArchiveError
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.snapshot import populate, write_snapshot


def tar_of(members: list[tuple[tarfile.TarInfo, bytes | None]], mode: str = "w") -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tar:  # type: ignore[call-overload]
        for info, payload in members:
            if payload is not None:
                info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload) if payload is not None else None)
    buf.seek(0)
    return buf


def file(name: str, payload: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), payload


def special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    return info, None


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (file("/etc/evil"), "absolute"),
        (file("../evil"), "escapes"),
        (file("a/../../evil"), "escapes"),
        (special("link", tarfile.SYMTYPE, "/etc/passwd"), "outside"),
        (special("d/link", tarfile.SYMTYPE, "../../x"), "outside"),
        (special("hard", tarfile.LNKTYPE, "ok.txt"), "hard links"),
        (special("dev", tarfile.CHRTYPE), "device"),
        (special("fifo", tarfile.FIFOTYPE), "fifo"),
    ],
)
def test_unsafe_members_refuse_the_whole_archive(tmp_path: Path, bad, reason: str) -> None:
    dest = tmp_path / "dest"
    with pytest.raises(UnsafeArchiveError, match=reason):
        populate(tar_of([file("ok.txt", b"fine"), bad]), dest)
    assert list(dest.iterdir()) == []  # nothing written, not even the safe member
    assert not (tmp_path / "evil").exists()


def test_writing_through_an_existing_link_out_is_refused(tmp_path: Path) -> None:
    dest, outside = tmp_path / "dest", tmp_path / "outside"
    dest.mkdir()
    outside.mkdir()
    (dest / "sub").symlink_to(outside)
    with pytest.raises(UnsafeArchiveError, match="through a link"):
        populate(tar_of([file("sub/evil.txt")]), dest)
    assert list(outside.iterdir()) == []


def test_populate_layers_over_existing_files_and_accepts_gzip(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    populate(tar_of([file("keep.txt", b"world"), file("docs/a.txt", b"v1")]), dest)
    counts = populate(
        tar_of([file("docs/a.txt", b"v2"), file("docs/b.txt", b"new")], mode="w:gz"), dest
    )
    assert counts == {"members": 2, "files": 2, "bytes": 5}
    assert (dest / "keep.txt").read_bytes() == b"world"
    assert (dest / "docs" / "a.txt").read_bytes() == b"v2"


def test_garbage_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="not a readable tar"):
        populate(io.BytesIO(b"this is not a tar"), tmp_path / "d", source="upload.tar")


def test_snapshot_round_trips_both_subsystems(tmp_path: Path, office_fixtures: Path) -> None:
    roots = WorldRoots.of_dir(tmp_path / "w")
    roots.ensure()
    originals = {p.name: p.read_bytes() for p in sorted((office_fixtures / "xlsx").iterdir())}
    for name, payload in originals.items():
        (roots.filesystem / name).write_bytes(payload)
    (roots.app_dir("mail") / "inbox.mbox").write_bytes(
        b"From a@b Mon Jan  1 00:00:00 2024\nSubject: hi\n\nbody\n"
    )
    buf = io.BytesIO()
    write_snapshot(roots, buf)
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r:gz") as tar:
        names = tar.getnames()
        assert names[0] == "filesystem" and ".apps_data/mail/inbox.mbox" in names
        for name, payload in originals.items():
            assert tar.extractfile(f"filesystem/{name}").read() == payload  # type: ignore[union-attr]
    fs = [n for n in names if n.split("/")[0] == "filesystem"]
    assert names[: len(fs)] == fs  # filesystem/ first, then .apps_data/
