"""Formula values for workbooks that carry none, computed by headless LibreOffice (as Archipelago's grader).

openpyxl (and so the excel app) writes formulas without cached results; a grader reading values sees
nothing for them. `recalculated_copy(path, dest_dir)` asks LibreOffice Calc to open a copy and save it
again, which computes every formula, and returns the converted file; the world's own file is never
touched. It returns None when LibreOffice is absent, disabled (env `KWRL_GRADER_RECALC=0`), fails or
times out: the caller then shows "(no cached value)" and a machine check on such a cell fails with a
rationale saying why, rather than inventing a value.

Non-obvious choices: one private LibreOffice profile per process and one lock, because two headless
instances sharing a profile hand their work to each other and fail; the first start costs seconds,
so this runs only for workbooks that have formula cells without cached values.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

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
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            log.warning("formula recalculation of %s timed out after %.0f s", path, timeout)
            return None
    produced = dest_dir / (path.stem + ".xlsx")
    if proc.returncode != 0 or not produced.is_file() or produced.stat().st_size == 0:
        log.warning("formula recalculation of %s failed (exit %s)", path, proc.returncode)
        return None
    return produced
