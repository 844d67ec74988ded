"""code_exec runs a shell command in the filesystem root (upstream's contract), bounded in time,
memory and output."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from apps_testkit import error, text
from fastmcp import Client

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build, code_execution


@pytest.fixture
async def client(tmp_path: Path):
    roots = WorldRoots.of_dir(tmp_path / "world")
    roots.ensure()
    (roots.filesystem / "data.csv").write_text("a,b\n1,2\n3,4\n")
    async with Client(build("code_execution", roots)) as c:
        yield c, roots


async def result(c: Client, code: str | None) -> dict[str, Any]:
    return json.loads(await text(c, "code_exec", {} if code is None else {"code": code}))


async def test_code_is_a_shell_command_in_the_filesystem_root_with_office_libraries(client) -> None:
    c, roots = client
    script = (
        "import csv, openpyxl\n"
        "rows = list(csv.reader(open('data.csv')))\n"
        "wb = openpyxl.Workbook(); wb.active.append([int(r[0]) for r in rows[1:]]); wb.save('out.xlsx')\n"
        "print(sum(int(r[1]) for r in rows[1:]))"
    )
    cmd = f"cat > s.py << 'EOF'\n{script}\nEOF\npython s.py"
    assert await result(c, cmd) == {"success": True, "output": "6\n"}
    assert (roots.filesystem / "out.xlsx").stat().st_size > 0
    assert await result(c, "ls -la") == {
        "success": True,
        "output": (await result(c, "ls -la"))["output"],
    }
    assert "data.csv" in (await result(c, "ls -la"))["output"]


async def test_nonzero_exit_codes_and_stderr_in_upstreams_words(client) -> None:
    c, _ = client
    r = await result(c, "ls; echo oops >&2; exit 3")
    assert r["success"] is False
    assert r["output"] == "data.csv\n\nError output:\noops\n\n\nCommand failed with exit code 3"
    r = await result(c, "echo hi; echo note >&2")
    assert r == {"success": True, "output": "hi\n\nStderr output:\nnote"}


async def test_raw_python_and_a_missing_command_are_refused_not_run(client) -> None:
    c, roots = client
    r = await result(c, "import os\nopen('made.txt', 'w')")
    assert r["success"] is False and "passed raw Python code" in r["output"]
    assert not (roots.filesystem / "made.txt").exists()
    assert (await result(c, None))[
        "output"
    ] == "Error: Required parameter 'code' (command to execute)"
    assert (await result(c, "import screenshot.png"))[
        "success"
    ] is False  # ImageMagick: a shell command


async def test_timeout_kills_the_whole_process_group(
    client, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, roots = client
    monkeypatch.setenv("CODE_EXEC_COMMAND_TIMEOUT", "1")
    t0 = time.monotonic()
    r = await result(c, "sleep 60 & echo $! > bg.pid; sleep 60")
    assert r["success"] is False and r["output"].startswith(
        "Command execution timed out after 1 seconds"
    )
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
    r = await result(c, "python -c \"print('x' * 100_000)\"")
    assert len(r["output"]) < code_execution.MAX_OUTPUT_CHARS + 200
    assert "stdout truncated" in r["output"]
    r = await result(c, "python -c 'b = bytearray(8 * 1024**3)'")
    assert r["success"] is False and "MemoryError" in r["output"]


async def test_bad_arguments_are_validation_errors_naming_the_tool(client) -> None:
    c, _ = client
    msg = await error(c, "code_exec", {"code": 5})
    assert msg.startswith("Error calling tool 'code_exec': Validation error: request.code")
    # upstream's request model ignores unknown keys: the command still runs as a shell command
    assert (await result_with(c, {"code": "echo $0", "language": "python"}))["success"] is True
    raw = await c.call_tool(
        "code_exec", {"request": {"code": "ls"}, "other": 1}, raise_on_error=False
    )
    assert raw.is_error and "other: Extra inputs are not permitted" in raw.content[0].text  # type: ignore[union-attr]


async def result_with(c: Client, args: dict[str, Any]) -> dict[str, Any]:
    return json.loads(await text(c, "code_exec", args))
