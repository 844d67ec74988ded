"""Formula values for workbooks that carry none, computed by headless LibreOffice (as Archipelago's grader).

openpyxl (and so the excel app) writes formulas without cached results; a grader reading values sees
nothing for them. `recalculated_copy(path, dest_dir)` asks LibreOffice Calc to open a copy and save it
again, which computes every formula, and returns the converted file; the world's own file is never
touched. It returns None when LibreOffice is absent, disabled (env `KWRL_GRADER_RECALC=0`), fails or
times out: the caller then shows "(no cached value)" and a machine check on such a cell fails with a
rationale saying why, rather than inventing a value.

Non-obvious choices: one private LibreOffice profile per process and one lock, because two headless
instances sharing a profile hand their work to each other and fail; the first start costs seconds,
so this runs only for workbooks that have formula cells without cached values. LibreOffice runs in
its own process group, killed whole after it (soffice.bin outlives its launcher), and never past
the grading deadline (`kwrl.grading.budget`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from kwrl.grading import budget

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_PROFILE: Path | None = None
TIMEOUT_S = 120.0


def soffice() -> str | None:
    """The LibreOffice binary, or None when absent or disabled by KWRL_GRADER_RECALC=0."""
    if os.environ.get("KWRL_GRADER_RECALC", "1").strip().lower() in ("0", "off", "false", "no"):
        return None
    return shutil.which("soffice") or shutil.which("libreoffice")


def recalculated_copy(path: Path, dest_dir: Path, *, timeout: float = TIMEOUT_S) -> Path | None:
    """A copy of the workbook at `path`, saved by LibreOffice into `dest_dir` with formulas computed."""
    exe = soffice()
    if exe is None:
        return None
    global _PROFILE
    with _LOCK:
        if _PROFILE is None:
            _PROFILE = Path(tempfile.mkdtemp(prefix="kwrl-grader-lo-"))
        cmd = [
            exe,
            f"-env:UserInstallation={_PROFILE.as_uri()}",
            "--headless",
            "--norestore",
            "--nologo",
            "--calc",
            "--convert-to",
            "xlsx:Calc MS Excel 2007 XML",
            "--outdir",
            str(dest_dir),
            str(path),
        ]
        meter = budget.active()
        if meter is not None:  # never past the grading deadline
            meter.check_time()
            timeout = min(timeout, meter.deadline - time.monotonic())
        # Its own session: LibreOffice forks soffice.bin, which holds the pipes; on a timeout or
        # the grading deadline the whole group is killed, not just the launcher.
        proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.warning("formula recalculation of %s timed out after %.0f s", path, timeout)
            return None
        finally:
            _kill_group(proc)
    produced = dest_dir / (path.stem + ".xlsx")
    if code != 0 or not produced.is_file() or produced.stat().st_size == 0:
        log.warning("formula recalculation of %s failed (exit %s)", path, code)
        return None
    return produced


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of LibreOffice's process group and reap the launcher."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
