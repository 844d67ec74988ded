"""The code_execution app: run a shell command in the world (ARCH mcp_servers/code).

Tool: code_exec(request={code}), upstream's contract: `code` is a SHELL command (bash), run with a
`COMMAND_TIMEOUT_S` limit (env `CODE_EXEC_COMMAND_TIMEOUT`, upstream's name, overrides it); the result is `{"success", "output"}` as upstream words it (stdout, then
"Stderr output:"; on failure "Error output:" and "Command failed with exit code N"; raw Python
passed as the command is refused with upstream's hint). The command runs as a subprocess
with the filesystem root as its working directory, in its own session (so its own process group),
with resource limits set in the child before exec (address space, file size, CPU seconds, no core
dumps). On timeout the whole process group is killed, so background children die too. stdout and
stderr are captured, each capped at `MAX_OUTPUT_CHARS` with a note saying how much was cut.

Non-obvious choice: `python` on the command's PATH is the gateway's own interpreter (its directory
comes first), so the office
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
from typing import Any

from kwrl.worlds.apps.base import WorldApp, tool

MAX_OUTPUT_CHARS = 20_000
COMMAND_TIMEOUT_S = 300
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
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    env = dict(os.environ, PYTHONUNBUFFERED="1", MPLBACKEND="Agg", PATH=path)
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


_PY_STARTS = ("from ", "def ", "class ", "async def ", "@")


def _looks_like_python(code: str) -> bool:
    """Upstream's guard: a command starting like Python source is not run."""
    if code.startswith("import "):
        rest = code[7:].strip()
        first = rest.split()[0] if rest else ""
        image = "." in first and first.rsplit(".", 1)[-1].lower() in (
            "png", "jpg", "jpeg", "gif", "bmp", "tiff", "webp", "pdf", "ps", "eps",
        )  # fmt: skip
        return not (rest.startswith("-") or "/" in first or image)
    return code.startswith(_PY_STARTS)


PYTHON_HINT = (
    "Error: It looks like you passed raw Python code. This tool executes shell commands, not "
    "Python directly. To run Python:\n• One-liner: python -c 'your_code_here'\n• Multi-line: "
    "Write to file first, then run:\n  cat > script.py << 'EOF'\n  your_code\n  EOF && python script.py"
)


class CodeExecutionApp(WorldApp):
    """The code_execution app: one tool, a shell command in the world (module docstring)."""

    @tool
    async def code_exec(self, code: str | None = None) -> dict[str, Any]:
        if code is None:
            return {
                "success": False,
                "output": "Error: Required parameter 'code' (command to execute)",
            }
        if _looks_like_python(code.strip()):
            return {"success": False, "output": PYTHON_HINT}
        self.root.mkdir(parents=True, exist_ok=True)
        timeout_s = int(os.environ.get("CODE_EXEC_COMMAND_TIMEOUT", COMMAND_TIMEOUT_S))
        rc, out, err = await run_code(code, "bash", str(self.root), timeout_s)
        out, err = _cap(out, "stdout"), _cap(err, "stderr")
        if rc is None:
            text = f"Command execution timed out after {timeout_s} seconds"
            if out or err:
                text += "\n\nPartial output before timeout:"
                text += f"\nStdout:\n{out}" if out else ""
                text += f"\nStderr:\n{err}" if err else ""
            return {"success": False, "output": text}
        if rc != 0:
            text = out + (f"\nError output:\n{err}" if err else "")
            return {"success": False, "output": f"{text}\n\nCommand failed with exit code {rc}"}
        if err.strip():
            out = f"{out.rstrip()}\n\nStderr output:\n{err.strip()}" if out.strip() else err.strip()
        return {"success": True, "output": out}
