"""Archive extraction refuses every unsafe member with a message naming archive and member."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from kwrl.errors import UnsafeArchiveError
from kwrl.tasks.archive import ByteBudget, extract_tar, extract_zip, pack_tar_gz


def _zip(path: Path, members: list[tuple[str, bytes, int | None]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


def _tar(members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for m in members:
            payload = (data or {}).get(m.name)
            if payload is not None:
                m.size = len(payload)
                tf.addfile(m, io.BytesIO(payload))
            else:
                tf.addfile(m)
    return buf.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    m = tarfile.TarInfo(name)
    m.type = kind
    m.linkname = link
    return m


def test_zip_extracts_files_dirs_and_exec_bits(tmp_path: Path) -> None:
    z = _zip(
        tmp_path / "ok.zip",
        [
            ("filesystem/", b"", stat.S_IFDIR | 0o755),
            ("filesystem/a.txt", b"abc", None),
            ("run.sh", b"#!", stat.S_IFREG | 0o755),
        ],
    )
    budget = ByteBudget(100)
    written = extract_zip(z, tmp_path / "out", budget)
    assert {str(p) for p in written} == {"filesystem", "filesystem/a.txt", "run.sh"}
    assert (tmp_path / "out/filesystem/a.txt").read_bytes() == b"abc"
    assert (tmp_path / "out/run.sh").stat().st_mode & 0o111
    assert budget.used == 5


@pytest.mark.parametrize(
    ("name", "mode", "data", "message"),
    [
        ("/etc/passwd", None, b"x", "absolute path"),
        ("C:/windows/x", None, b"x", "absolute path"),
        ("filesystem/../../evil", None, b"x", "'..'"),
        ("filesystem\\..\\evil", None, b"x", "backslash"),
        ("link", stat.S_IFLNK | 0o777, b"../../outside", "points outside"),
        ("abs-link", stat.S_IFLNK | 0o777, b"/etc/passwd", "absolute path"),
        ("dev", stat.S_IFCHR | 0o600, b"", "device file"),
        ("fifo", stat.S_IFIFO | 0o600, b"", "FIFO"),
    ],
)
def test_zip_unsafe_members_are_refused(
    tmp_path: Path, name: str, mode: int | None, data: bytes, message: str
) -> None:
    z = _zip(tmp_path / "bad.zip", [("filesystem/ok.txt", b"fine", None), (name, data, mode)])
    with pytest.raises(UnsafeArchiveError) as err:
        extract_zip(z, tmp_path / "out", ByteBudget())
    assert message in str(err.value)
    assert err.value.path == str(z)
    assert err.value.field is not None
    assert not (tmp_path / "evil").exists()


def test_zip_symlink_inside_is_kept(tmp_path: Path) -> None:
    z = _zip(
        tmp_path / "l.zip", [("d/a.txt", b"a", None), ("d/b.txt", b"a.txt", stat.S_IFLNK | 0o777)]
    )
    extract_zip(z, tmp_path / "out", ByteBudget())
    assert (tmp_path / "out/d/b.txt").read_text() == "a"


def test_zip_write_through_a_link_leaving_dest_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "up").symlink_to(outside)
    z = _zip(tmp_path / "t.zip", [("up/x.txt", b"x", None)])
    with pytest.raises(UnsafeArchiveError, match="outside the destination"):
        extract_zip(z, dest, ByteBudget())
    assert not (outside / "x.txt").exists()


def test_zip_size_cap_counts_written_bytes(tmp_path: Path) -> None:
    z = _zip(tmp_path / "big.zip", [("a", b"x" * 600, None), ("b", b"y" * 600, None)])
    with pytest.raises(UnsafeArchiveError, match="size cap of 1000 bytes") as err:
        extract_zip(z, tmp_path / "out", ByteBudget(1000))
    assert err.value.field == "b"


def test_zip_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.zip"
    bad.write_bytes(b"PK not really")
    with pytest.raises(UnsafeArchiveError, match="not a zip archive"):
        extract_zip(bad, tmp_path / "out", ByteBudget())


def test_the_archipelago_snapshot_zip_extracts(archipelago_fixtures: Path, tmp_path: Path) -> None:
    written = extract_zip(
        archipelago_fixtures / "simple_task" / "original_snapshot.zip", tmp_path, ByteBudget()
    )
    assert (tmp_path / "filesystem/animals/xk92m/qz7fw.png").stat().st_size == 20860
    assert all(p.parts[0] == "filesystem" for p in written)


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("/abs.txt"), "absolute path"),
        (_member("a/../../up.txt"), "'..'"),
        (_member("s", tarfile.SYMTYPE, "../../etc/passwd"), "points outside"),
        (_member("s", tarfile.SYMTYPE, "/etc/passwd"), "absolute path"),
        (_member("h", tarfile.LNKTYPE, "../outside"), "'..'"),
        (_member("dev", tarfile.CHRTYPE), "device file"),
        (_member("blk", tarfile.BLKTYPE), "device file"),
        (_member("fifo", tarfile.FIFOTYPE), "FIFO"),
    ],
)
def test_tar_unsafe_members_are_refused(
    tmp_path: Path, member: tarfile.TarInfo, message: str
) -> None:
    blob = _tar([_member("ok.txt"), member], {"ok.txt": b"fine"})
    with pytest.raises(UnsafeArchiveError) as err:
        extract_tar(blob, tmp_path / "out", ByteBudget(), source="bundle.parquet row 3")
    assert message in err.value.message
    assert err.value.path == "bundle.parquet row 3"
    assert err.value.field == member.name


def test_tar_size_cap_holds_against_a_compression_bomb(tmp_path: Path) -> None:
    blob = _tar([_member("zeros")], {"zeros": bytes(5_000_000)})
    assert len(blob) < 20_000
    with pytest.raises(UnsafeArchiveError, match="size cap"):
        extract_tar(blob, tmp_path / "out", ByteBudget(1_000_000))


def test_tar_corrupt_and_truncated_are_refused(tmp_path: Path) -> None:
    blob = _tar([_member("a.txt")], {"a.txt": b"x" * 10_000})
    with pytest.raises(UnsafeArchiveError, match=r"not a readable tar|corrupt"):
        extract_tar(b"garbage" * 100, tmp_path / "o1", ByteBudget())
    with pytest.raises(UnsafeArchiveError, match=r"corrupt|not a readable"):
        extract_tar(blob[: len(blob) // 2], tmp_path / "o2", ByteBudget())


def test_tar_links_inside_are_kept_and_hardlinks_copied(tmp_path: Path) -> None:
    blob = _tar(
        [
            _member("d", tarfile.DIRTYPE),
            _member("d/a.txt"),
            _member("d/s", tarfile.SYMTYPE, "a.txt"),
            _member("h", tarfile.LNKTYPE, "d/a.txt"),
        ],
        {"d/a.txt": b"data"},
    )
    extract_tar(blob, tmp_path / "out", ByteBudget())
    assert (tmp_path / "out/d/s").is_symlink() and (tmp_path / "out/d/s").read_text() == "data"
    assert not (tmp_path / "out/h").is_symlink() and (tmp_path / "out/h").read_text() == "data"


def test_pack_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "tests").mkdir(parents=True)
    (src / "tests/test.sh").write_text("#!/bin/sh\n")
    (src / "tests/test.sh").chmod(0o755)
    (src / "instruction.md").write_text("do it\n")
    (src / "link.md").symlink_to("instruction.md")
    first = pack_tar_gz(src)
    (src / "instruction.md").touch()  # a new mtime must not change the bytes
    assert pack_tar_gz(src) == first
    extract_tar(first, tmp_path / "back", ByteBudget())
    assert pack_tar_gz(tmp_path / "back") == first
    assert (tmp_path / "back/tests/test.sh").stat().st_mode & 0o111
    with tarfile.open(fileobj=io.BytesIO(first)) as tf:
        names = tf.getnames()
        assert names == sorted(names, key=lambda n: n.split("/"))
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tf.getmembers())


def test_pack_refuses_a_link_leaving_the_dir(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/bad").symlink_to("/etc/passwd")
    with pytest.raises(UnsafeArchiveError, match="points outside"):
        pack_tar_gz(tmp_path / "src")


# A link that is harmless when written, made to escape by a link written after it: `x` resolves
# lexically inside the destination while `s/up` does not exist; once `s/up -> ..` exists it climbs
# out to the secret beside the destination.
CHAIN = [("s/", None), ("a/b/", None), ("x", "s/up/a/b/../../../secret.txt"), ("s/up", "..")]


def test_zip_link_chain_leaving_dest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("host secret")
    members: list[tuple[str, bytes, int | None]] = [
        (name, b"", stat.S_IFDIR | 0o755)
        if link is None
        else (name, link.encode(), stat.S_IFLNK | 0o777)
        for name, link in CHAIN
    ]
    z = _zip(tmp_path / "chain.zip", members)
    with pytest.raises(UnsafeArchiveError) as err:
        extract_zip(z, tmp_path / "out", ByteBudget())
    assert err.value.path == str(z) and err.value.field == "x"
    assert "resolves outside the destination" in err.value.message


def test_tar_link_chain_leaving_dest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("host secret")
    blob = _tar(
        [
            _member(n.rstrip("/"), tarfile.DIRTYPE)
            if link is None
            else _member(n, tarfile.SYMTYPE, link)
            for n, link in CHAIN
        ]
    )
    with pytest.raises(UnsafeArchiveError) as err:
        extract_tar(blob, tmp_path / "out", ByteBudget(), source="b.parquet row 0")
    assert (err.value.path, err.value.field) == ("b.parquet row 0", "x")


def test_tar_hardlink_through_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("host secret")
    blob = _tar([_member("s", tarfile.SYMTYPE, "d"), _member("d", tarfile.DIRTYPE),
                 _member("h", tarfile.LNKTYPE, "s")])  # fmt: skip
    with pytest.raises(UnsafeArchiveError, match="not a regular member file"):
        extract_tar(blob, tmp_path / "out", ByteBudget())
