"""What leaves a trial's sandbox: capped output, the verifier dir emptied, agent files copied out."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from kwrl.errors import SandboxError
from kwrl.sandbox.outputs import (
    DROPPED_LISTED,
    Copied,
    Dropped,
    capped,
    copy_out,
    empty_dir,
    pump_log,
    sync_out,
)


async def _read(data: bytes, cap: int) -> bytes:
    stream = asyncio.StreamReader()
    for i in range(0, len(data), 1000):
        stream.feed_data(data[i : i + 1000])
    stream.feed_eof()
    return await capped(stream, cap)


async def test_output_under_the_cap_is_kept_whole() -> None:
    data = os.urandom(5000)
    assert await _read(data, 8192) == data


async def test_output_over_the_cap_keeps_head_and_tail_with_a_marker() -> None:
    data = b"H" * 3000 + b"m" * 50_000 + b"T" * 3000
    out = await _read(data, 8000)
    head, marker, tail = out.partition(b"\n[kwrl: 48000 bytes of output cut]\n")
    assert marker and head == b"H" * 3000 + b"m" * 1000 and tail == b"m" * 1000 + b"T" * 3000


def test_empty_dir_removes_links_not_their_targets(tmp_path: Path) -> None:
    keep = tmp_path / "keep.txt"
    keep.write_text("host file")
    d = tmp_path / "verifier"
    (d / "grades.json").mkdir(parents=True)
    (d / "reward.json").symlink_to(keep)
    (d / "sub").symlink_to(tmp_path)
    empty_dir(d)
    assert list(d.iterdir()) == [] and keep.read_text() == "host file"
    with pytest.raises(SandboxError):
        empty_dir(tmp_path / "keep.txt")


def test_copy_out_copies_files_and_dirs_only_and_keeps_host_files(tmp_path: Path) -> None:
    host_file = tmp_path / "host.txt"
    host_file.write_text("host file")
    private, host = tmp_path / "private", tmp_path / "host"
    (private / "sub").mkdir(parents=True)
    host.mkdir()
    (private / "final_answer.txt").symlink_to(host_file)
    (private / "sub" / "up").symlink_to(tmp_path)
    os.mkfifo(private / "sub" / "pipe")
    (private / "sub" / "ok.txt").write_text("kept")
    (private / "trajectory.json").write_text("forged")
    (host / "trajectory.json").write_text("written by the host")
    deep = private.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    ours = Copied()
    dropped, count = copy_out(private, host, ours)
    assert set(dropped) == {"d/" * 32 + "d", "final_answer.txt", "sub/pipe", "sub/up"}
    assert count == 4
    assert (host / "sub" / "ok.txt").read_text() == "kept"
    assert (host / "trajectory.json").read_text() == "written by the host"
    assert not (host / "final_answer.txt").exists() and host_file.read_text() == "host file"
    (private / "sub" / "ok.txt").write_text("changed")  # a second sync updates what it copied
    copy_out(private, host, ours)
    assert (host / "sub" / "ok.txt").read_text() == "changed"
    assert not [p for p in host.rglob("*") if p.is_symlink() or p.name.startswith(".kwrl-")]


def test_sync_out_names_what_it_left_out_once_as_paths_inside(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "a.txt").write_text("a")
    os.symlink("/etc/passwd", src / "link")
    copied = Copied()
    dropped = Dropped(["/logs/agent/link"])
    sync_out(src, dst, "/logs/agent", copied, dropped)
    sync_out(src, dst, "/logs/agent", copied, dropped)
    assert (dst / "a.txt").read_text() == "a" and copied == Copied({"a.txt": 1}, 1)
    assert dropped == Dropped(["/logs/agent/link"], {"/logs/agent": 1})
    sync_out(tmp_path / "gone", dst, "/logs/artifacts", Copied(), dropped)
    assert dropped.listed == ["/logs/agent/link", "/logs/artifacts/."] and dropped.total == 2


def test_a_flood_of_files_lands_on_the_host_up_to_the_caps_and_is_counted(tmp_path: Path) -> None:
    """Every empty file an agent made in /logs/agent (300,000 in 0.9 s) once landed in the
    trial dir: at most `max_entries` do, over every copy of the dir, and the rest are counted."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "d").mkdir(parents=True)
    dst.mkdir()
    for i in range(500):
        (src / "d" / f"f{i:03d}").touch()
    copied, dropped = Copied(), Dropped()
    sync_out(src, dst, "/logs/agent", copied, dropped, max_entries=100)
    assert sum(1 for _ in dst.rglob("*")) == 100 and len(copied.sizes) == 100
    assert dropped.total == 401 and len(dropped.listed) == DROPPED_LISTED
    for i in range(500):  # a second copy after the agent swapped its files for others
        (src / "d" / f"f{i:03d}").unlink()
        (src / "d" / f"g{i:03d}").touch()
    sync_out(src, dst, "/logs/agent", copied, dropped, max_entries=100)
    assert sum(1 for _ in dst.rglob("*")) == 100 and dropped.total == 500


def test_files_past_the_byte_cap_are_left_out_and_a_rewrite_counts_its_own_size(
    tmp_path: Path,
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "a").write_bytes(b"a" * 600)
    (src / "b").write_bytes(b"b" * 600)
    (src / "c").write_bytes(b"c" * 300)
    copied = Copied()
    left, count = copy_out(src, dst, copied, max_bytes=1000)
    assert (left, count) == (["b"], 1) and sorted(p.name for p in dst.iterdir()) == ["a", "c"]
    assert copied.bytes == 900
    (src / "a").write_bytes(b"a" * 700)  # rewritten: 700 of its own, 1000 in all
    assert copy_out(src, dst, copied, max_bytes=1000) == (["b"], 1)
    assert (dst / "a").stat().st_size == 700 and copied.bytes == 1000


async def test_a_log_pumped_from_a_pipe_keeps_its_head_up_to_the_cap(tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    log.write_bytes(b"before\n")
    r, w = os.pipe()
    pump = asyncio.create_task(pump_log(r, log, cap=1000))
    for _ in range(50):  # the writer is never refused: 50 KB through a cap of 1000 bytes
        os.write(w, b"x" * 999 + b"\n")
        await asyncio.sleep(0)
    os.close(w)
    await pump
    head, _, marker = log.read_bytes().partition(b"\n[kwrl: ")
    assert head == b"before\n" + (b"x" * 999 + b"\n")[:1000]
    assert marker == b"log capped at 1000 bytes; 49000 more dropped]\n"


async def test_a_cancelled_pump_says_what_it_dropped_and_a_short_log_is_kept_whole(
    tmp_path: Path,
) -> None:
    r, w = os.pipe()
    pump = asyncio.create_task(pump_log(r, tmp_path / "a.log", cap=10))
    os.write(w, b"0123456789abc")
    for _ in range(100_000):  # yield to the loop (no sleep) until the pump has read it
        if (tmp_path / "a.log").is_file() and (tmp_path / "a.log").stat().st_size:
            break
        await asyncio.sleep(0)
    pump.cancel()
    await asyncio.gather(pump, return_exceptions=True)
    os.close(w)
    assert (
        tmp_path / "a.log"
    ).read_bytes() == b"0123456789\n[kwrl: log capped at 10 bytes; 3 more dropped]\n"
    r, w = os.pipe()
    os.write(w, b"short\n")
    os.close(w)
    await pump_log(r, tmp_path / "b.log", cap=10)
    assert (tmp_path / "b.log").read_bytes() == b"short\n"
