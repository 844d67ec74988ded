"""code_exec runs Python and bash in the filesystem root, bounded in time, memory and output."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from apps_testkit import error, text
from fastmcp import Client

from kwrl.worlds.apps import code_execution
from kwrl.worlds.layout import WorldRoots


@pytest.fixture
async def client(tmp_path: Path):
    roots = WorldRoots.of_dir(tmp_path / "world")
    roots.ensure()
    (roots.filesystem / "data.csv").write_text("a,b\n1,2\n3,4\n")
    async with Client(code_execution.build(roots)) as c:
        yield c, roots


async def test_python_runs_in_the_filesystem_root_with_office_libraries(client) -> None:
    c, roots = client
    code = (
        "import csv, openpyxl\n"
        "rows = list(csv.reader(open('data.csv')))\n"
        "wb = openpyxl.Workbook(); wb.active.append([int(r[0]) for r in rows[1:]]); wb.save('out.xlsx')\n"
        "print(sum(int(r[1]) for r in rows[1:]))"
    )
    out = await text(c, "code_exec", {"code": code})
    assert out.splitlines()[:3] == ["exit code 0", "stdout:", "6"]
    assert (roots.filesystem / "out.xlsx").stat().st_size > 0


async def test_bash_and_nonzero_exit_codes_are_reported(client) -> None:
    c, _ = client
    out = await text(c, "code_exec", {"code": "ls; echo oops >&2; exit 3", "language": "bash"})
    assert out.startswith("exit code 3")
    assert "data.csv" in out and "stderr:\noops" in out


async def test_timeout_kills_the_whole_process_group(client, tmp_path: Path) -> None:
    c, roots = client
    code = "sleep 60 & echo $! > bg.pid; sleep 60"
    t0 = time.monotonic()
    out = await text(c, "code_exec", {"code": code, "language": "bash", "timeout_seconds": 1})
    assert out.startswith("timed out after 1 s")
    assert time.monotonic() - t0 < 20
    pid = int((roots.filesystem / "bg.pid").read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split()[2] == "Z":
            break  # killed, waiting to be reaped by init
        time.sleep(0.05)
    else:
        pytest.fail(f"background child {pid} survived the timeout")


async def test_output_is_capped_and_memory_is_limited(client) -> None:
    c, _ = client
    out = await text(c, "code_exec", {"code": "print('x' * 100_000)"})
    assert len(out) < code_execution.MAX_OUTPUT_CHARS + 200
    assert "stdout truncated" in out
    out = await text(c, "code_exec", {"code": "b = bytearray(8 * 1024**3)"})
    assert out.startswith("exit code 1") and "MemoryError" in out


async def test_bad_input_is_a_tool_error(client) -> None:
    c, _ = client
    assert "must not be empty" in await error(c, "code_exec", {"code": "  "})
    assert await error(c, "code_exec", {"code": "print(1)", "language": "cobol"})
    assert await error(c, "code_exec", {"code": "print(1)", "timeout_seconds": 10_000})
