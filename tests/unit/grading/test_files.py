"""What the agent made is read without following links, only from regular files, within caps."""

from __future__ import annotations

import json
import os
import resource
import tarfile
import time
import zipfile
import zlib
from pathlib import Path

import docx
import pytest

from kwrl.errors import UnsafeArchiveError
from kwrl.grading.diff import StateView, diff_states, read_changes_archive, write_changes_archive
from kwrl.grading.files import MAX_UNZIPPED_BYTES, read_answer
from kwrl.grading.render import render_file


def test_an_answer_that_is_a_link_or_a_fifo_is_no_answer(tmp_path: Path) -> None:
    gold = tmp_path / "golden_responses.json"
    gold.write_text('[{"golden_text_response": "SECRET-GOLD"}]')
    link = tmp_path / "final_answer.txt"
    link.symlink_to(gold)
    assert read_answer(link) == ""
    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    assert read_answer(fifo) == ""  # returns at once: opened non-blocking, then refused
    assert read_answer(tmp_path / "missing.txt") == ""
    big = tmp_path / "big.txt"
    big.write_bytes(b"a" * 3000)
    text = read_answer(big, max_bytes=1000)
    assert text.startswith("a" * 1000) and "[answer truncated: 2000 more bytes]" in text


def test_final_state_links_are_not_files_and_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("HOST-SECRET")
    world = tmp_path / "world"
    (world / "filesystem").mkdir(parents=True)
    final = tmp_path / "final"
    (final / "filesystem").mkdir(parents=True)
    (final / "filesystem" / "leak.txt").symlink_to(secret)
    (final / "filesystem" / "dir").symlink_to(secret.parent)
    (final / ".apps_data").symlink_to(secret.parent)  # a whole subsystem pointed elsewhere
    assert diff_states(StateView.of([world]), StateView.of([final])) == []
    assert render_file(final / "filesystem" / "leak.txt").startswith("[refused")


def _bomb_docx(path: Path, declared: int) -> None:
    """A real docx whose extra part inflates to `declared` bytes of zeros (a zip bomb)."""
    doc = docx.Document()
    doc.add_paragraph("hello")
    doc.save(str(path))
    chunk = bytes(1 << 20)
    with (
        zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED, compresslevel=9) as zf,
        zf.open("word/media/bomb.bin", "w", force_zip64=True) as f,
    ):
        for _ in range(declared // len(chunk)):
            f.write(chunk)


def test_a_zip_bomb_docx_is_refused_before_inflating(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.docx"
    _bomb_docx(bomb, MAX_UNZIPPED_BYTES + (8 << 20))
    assert bomb.stat().st_size < 1_000_000
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    text = render_file(bomb)
    assert text.startswith("[refused docx file:") and "uncompressed bytes" in text
    assert time.perf_counter() - t0 < 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 50_000  # KiB


def test_rendered_text_is_capped_without_reading_the_whole_file(tmp_path: Path) -> None:
    big = tmp_path / "notes.txt"
    big.write_bytes(b"x" * 5_000_000)
    text = render_file(big, max_chars=1000)
    assert len(text) < 1200 and "[truncated:" in text


def test_a_changes_archive_bomb_stops_at_the_cap(tmp_path: Path) -> None:
    archive = tmp_path / "changes.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("filesystem/zeros.bin")
        info.size = 20_000_000
        with open("/dev/zero", "rb") as zero:
            tf.addfile(info, zero)
    assert archive.stat().st_size < 100_000
    dest = tmp_path / "out"
    with pytest.raises(UnsafeArchiveError, match="size cap") as err:
        read_changes_archive(archive, dest, max_bytes=1_000_000)
    assert err.value.field == "filesystem/zeros.bin"
    assert sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) <= 1_000_000 + (1 << 20)


def test_a_changes_archive_with_links_or_foreign_members_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "changes.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("filesystem/x")
        info.type = tarfile.SYMTYPE
        info.linkname = "../../../etc/passwd"
        tf.addfile(info)
    with pytest.raises(UnsafeArchiveError, match="outside"):
        read_changes_archive(archive, tmp_path / "out")
    with tarfile.open(archive, "w:gz") as tf:
        info = tarfile.TarInfo("etc/cron.d/x")
        tf.addfile(info)
    with pytest.raises(UnsafeArchiveError, match=r"outside filesystem/ and \.apps_data/"):
        read_changes_archive(archive, tmp_path / "out2")


def test_the_changes_archive_is_streamed_and_capped(tmp_path: Path) -> None:
    world = tmp_path / "world"
    (world / "filesystem").mkdir(parents=True)
    final = tmp_path / "final"
    (final / "filesystem").mkdir(parents=True)
    (final / "filesystem" / "small.txt").write_text("kept")
    (final / "filesystem" / "big.bin").write_bytes(bytes(3_000_000))
    changes = diff_states(StateView.of([world]), StateView.of([final]))
    archive = tmp_path / "out" / "changes.tar.gz"
    write_changes_archive(changes, archive, max_bytes=1_000_000)
    listing = read_changes_archive(archive, tmp_path / "back")
    assert listing["created"] == ["filesystem/big.bin", "filesystem/small.txt"]
    assert (tmp_path / "back/filesystem/small.txt").read_text() == "kept"
    assert not (tmp_path / "back/filesystem/big.bin").exists()
    with tarfile.open(archive) as tf:
        member = tf.extractfile("changes.json")
        assert member is not None and json.load(member)["omitted"] == ["filesystem/big.bin"]
    assert [p.name for p in archive.parent.iterdir()] == ["changes.tar.gz"]  # no temp file left


def test_a_pdf_bomb_is_refused_before_parsing(tmp_path: Path) -> None:
    z = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    stream = b"".join(z.compress(chunk) for _ in range(MAX_UNZIPPED_BYTES // len(chunk) + 8))
    stream += z.flush()
    pdf = tmp_path / "bomb.pdf"
    pdf.write_bytes(
        b"%PDF-1.4\n1 0 obj << /Length " + str(len(stream)).encode() + b" /Filter /FlateDecode >>\n"
        b"stream\n" + stream + b"\nendstream\nendobj\ntrailer << >>\n%%EOF\n"
    )
    assert pdf.stat().st_size < 1_000_000
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = render_file(pdf)
    assert text.startswith("[refused pdf file:") and "inflate past" in text
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0 < 50_000  # KiB
