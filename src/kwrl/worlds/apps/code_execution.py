"""The code_execution app: run Python or shell code in the world (ARCH mcp_servers/code_execution).

Tool: code_exec(code, language="python"|"bash", timeout_seconds). The code runs as a subprocess
with the filesystem root as its working directory, in its own session (so its own process group),
with resource limits set in the child before exec (address space, file size, CPU seconds, no core
dumps). On timeout the whole process group is killed, so background children die too. stdout and
stderr are captured, each capped at `MAX_OUTPUT_CHARS` with a note saying how much was cut.

Non-obvious choice: Python runs with the gateway's own interpreter (`sys.executable`), so the office
libraries the apps use (openpyxl, python-docx, python-pptx, pypdf, pdfplumber) are importable from
agent code too, as in ARCH's image. The process isolation is the sandbox's job; this app only bounds
time, memory and output.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import sys
from typing import Annotated, Literal

from fastmcp import FastMCP
from pydantic import Field

from kwrl.worlds.apps.base import ToolError, tool
from kwrl.worlds.layout import WorldRoots

MAX_OUTPUT_CHARS = 20_000
MAX_TIMEOUT_S = 600
MEMORY_LIMIT_BYTES = 4 * 1024**3
FILE_SIZE_LIMIT_BYTES = 1024**3


def _limit_resources(cpu_seconds: int) -> None:  # runs in the child between fork and exec
    for res, value in (
        (resource.RLIMIT_AS, MEMORY_LIMIT_BYTES),
        (resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT_BYTES),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_CPU, cpu_seconds),
    ):
        soft, hard = resource.getrlimit(res)
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(res, (new, hard if soft != hard else new))


def _cap(text: str, name: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return (
        text[:MAX_OUTPUT_CHARS]
        + f"\n[{name} truncated: {len(text) - MAX_OUTPUT_CHARS} more characters]"
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_code(
    code: str, language: str, cwd: str, timeout_s: float
) -> tuple[int | None, str, str]:
    """Run `code`; return (exit code or None on timeout, stdout, stderr)."""
    if language == "python":
        argv = [sys.executable, "-c", code]
    else:
        shell = shutil.which("bash") or "/bin/sh"
        argv = [shell, "-c", code]
    env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg")
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: _limit_resources(int(timeout_s) + 5),
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    cap_bytes = 4 * MAX_OUTPUT_CHARS

    async def pump(stream: asyncio.StreamReader, buf: bytearray) -> None:
        while chunk := await stream.read(65536):
            if len(buf) < cap_bytes:  # keep draining past the cap so the child never blocks
                buf.extend(chunk[: cap_bytes - len(buf)])

    work = asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), proc.wait())
    rc: int | None
    try:
        await asyncio.wait_for(asyncio.shield(work), timeout=timeout_s)
        rc = proc.returncode
    except TimeoutError:
        rc = None
    finally:
        # Also reaps children left running in the background: they must not outlive the call.
        _kill_group(proc.pid)
    if not work.done():
        try:
            await asyncio.wait_for(work, timeout=5)
        except TimeoutError:  # a grandchild escaped the group and holds the pipes
            work.cancel()
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def build(roots: WorldRoots) -> FastMCP:
    mcp = FastMCP("code_execution")

    @tool(mcp)
    async def code_exec(
        code: Annotated[str, Field(description="Source code to run.")],
        language: Annotated[
            Literal["python", "bash"],
            Field(
                description="'python' (with openpyxl, python-docx, python-pptx, pypdf) or 'bash'."
            ),
        ] = "python",
        timeout_seconds: Annotated[
            int,
            Field(
                description="Wall-clock limit; the process is killed after it.",
                ge=1,
                le=MAX_TIMEOUT_S,
            ),
        ] = 60,
    ) -> str:
        """Run Python or bash code with the working directory at the filesystem root; returns exit code, stdout, stderr."""
        if not code.strip():
            raise ToolError("code must not be empty")
        roots.filesystem.mkdir(parents=True, exist_ok=True)
        rc, out, err = await run_code(code, language, str(roots.filesystem), timeout_seconds)
        status = (
            f"timed out after {timeout_seconds} s (killed)" if rc is None else f"exit code {rc}"
        )
        parts = [status]
        if out:
            parts.append("stdout:\n" + _cap(out, "stdout"))
        if err:
            parts.append("stderr:\n" + _cap(err, "stderr"))
        if not out and not err:
            parts.append("(no output)")
        return "\n".join(parts)

    return mcp
