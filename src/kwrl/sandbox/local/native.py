"""Small C programs the local sandbox compiles once per host: the sandbox's init, and the helper
that enters a running sandbox (`kwrl.sandbox.local.init`, `kwrl.sandbox.local.enter`).

`compiled(cache_dir, stem, source)` compiles `source` into `cache_dir/<stem>-<hash of source>`
(`cc -O2 -static`, else dynamically linked; written to a temp name, then renamed) and returns the
binary, or None where this host has no C compiler or the compile fails; each caller then runs the
same duty in Python. A binary is used only if this user owns it and its dir and nobody else may
write either: these programs run as root on the host (the enter helper) or as every sandbox's
pid 1 (the init).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


@functools.cache
def compiled(cache_dir: Path, stem: str, source: str) -> Path | None:
    """The compiled `source` under `cache_dir` (compiled now if missing), or None (module doc)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    binary = cache_dir / f"{stem}-{digest}"
    if binary.is_file():
        return binary if _own(cache_dir) and _own(binary) else None
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not _own(cache_dir):
        return None
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=f".{stem}-") as d:
        src = Path(d) / f"{stem}.c"
        src.write_text(source)
        out = Path(d) / stem
        for static in (["-static"], []):
            done = subprocess.run(
                [cc, "-O2", *static, "-o", str(out), str(src)],
                capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
            if done.returncode == 0:
                os.chmod(out, 0o755)
                os.replace(out, binary)
                return binary
        logging.getLogger(__name__).warning(
            "cannot compile the sandbox's %s (%s), using the Python one: %s",
            stem, cc, done.stderr.strip()[-500:],
        )  # fmt: skip
    with contextlib.suppress(OSError):
        binary.unlink()
    return None


def _own(p: Path) -> bool:
    """`p` is this user's and nobody else may write it."""
    st = p.stat()
    return st.st_uid == os.geteuid() and not st.st_mode & 0o022
