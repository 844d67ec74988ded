"""Formula recalculation for workbooks the excel app wrote (ARCH sheets_server `recalculate_formulas`).

openpyxl writes formulas without cached results, so a reader that looks at values (`read_tab`,
a grader loading with `data_only=True`) sees nothing for them. When LibreOffice is installed,
`recalculate` opens the saved workbook headless, lets Calc compute every formula, and writes the
result back atomically, so formulas carry values again. Without LibreOffice it does nothing and
`read_tab` says "(no cached value)": degrade, never invent a value.

Env `KWRL_FORMULA_RECALC`: `0` (default: never) or `1`/`auto` (recalculate when `soffice` is on
PATH, as Archipelago's sheets server does). Off by default because one recalculation costs a
LibreOffice start (seconds on a loaded 2-core machine) per excel write; graders evaluate formulas
themselves, so this only changes what the agent reads back.
Non-obvious choices: one process-wide lock and one private LibreOffice profile per process,
because two headless instances sharing a profile hand their work to each other and fail; and
a failure or timeout is logged and leaves the openpyxl file in place (the edit itself succeeded).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from kwrl.worlds.office.common import write_atomic

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_PROFILE: Path | None = None


def soffice() -> str | None:
    """The LibreOffice binary to use, or None when recalculation is off or impossible."""
    if os.environ.get("KWRL_FORMULA_RECALC", "0").strip().lower() not in (
        "1",
        "auto",
        "on",
        "true",
        "yes",
    ):
        return None
    return shutil.which("soffice") or shutil.which("libreoffice")


def recalculate(path: Path, *, timeout: float = 120.0) -> bool:
    """Recalculate `path` in place with LibreOffice; True when the file now holds computed values."""
    exe = soffice()
    if exe is None:
        return False
    global _PROFILE
    with _LOCK:
        if _PROFILE is None:
            _PROFILE = Path(tempfile.mkdtemp(prefix="kwrl-lo-profile-"))
        with tempfile.TemporaryDirectory(prefix="kwrl-recalc-") as out:
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
                out,
                str(path),
            ]
            try:
                proc = subprocess.run(cmd, capture_output=True, timeout=timeout, check=False)
            except subprocess.TimeoutExpired:
                log.warning("formula recalculation of %s timed out after %.0f s", path, timeout)
                return False
            produced = Path(out) / (path.stem + ".xlsx")
            if proc.returncode != 0 or not produced.is_file() or produced.stat().st_size == 0:
                log.warning(
                    "formula recalculation of %s failed (exit %s): %s",
                    path,
                    proc.returncode,
                    proc.stderr.decode(errors="replace")[-500:],
                )
                return False
            write_atomic(path, produced.read_bytes())
    return True
