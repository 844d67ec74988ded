"""Formula values for workbooks that carry none, computed by headless LibreOffice (as Archipelago's grader).

openpyxl (and so the excel app) writes formulas without cached results; a grader reading values sees
nothing for them. `recalculated_copy(path, dest_dir)` asks LibreOffice Calc to open a copy and save it
again, which computes every formula, and returns the converted file; the world's own file is never
touched. It returns None when LibreOffice is absent, disabled (env `KWRL_GRADER_RECALC=0`), cannot be
sandboxed, fails or times out: the caller then shows "(no cached value)" and a machine check on such
a cell fails with a rationale saying why, rather than inventing a value.

The workbook is the agent's, so LibreOffice opening it must have no effect outside the conversion
(a linked picture once made the grader's LibreOffice send HTTP requests to the host's loopback, and
`kwrl grade` ran it as host root with every capability):
- the copy it opens has every external relationship removed (`strip_external`: `TargetMode=
  "External"` in any `.rels` part: linked pictures, external workbook links, OLE links);
- its profile (fresh per conversion) never updates links and never runs macros (`PROFILE_XCU`);
- it runs in a bubblewrap sandbox (`sandbox_argv`): its own network namespace (no interface but
  a down loopback), user, pid, ipc and uts namespaces; the system read-only (/usr, the few /etc
  entries it reads), a private tmpfs /tmp holding the profile, the input and the output, no
  capabilities, a cleared environment, a new session; where the grader is real root it first
  becomes `nobody` (`SANDBOX_UID`), so it cannot read the grader's /proc (the judge's key) either.
  The workbook goes in on stdin and the converted one comes back on stdout, so nothing on the
  host is writable from inside. The same sandbox serves the verifier (nested in the trial's
  verifier sandbox, which keeps the capabilities to switch user and map it,
  `kwrl.sandbox.base.SandboxSpec.nest`) and `kwrl grade` on the host. Which of its variants this
  host allows (a new /proc or the parent's bound read-only, a user switch or not) is probed once;
  where none works, nothing is recalculated, with a warning, unless `KWRL_GRADER_RECALC=unsandboxed`
  (for a grader already inside a disposable network-less container) allows LibreOffice without it.

Non-obvious choices: one lock, so one LibreOffice runs at a time per process (the first start of a
fresh profile costs about a second); LibreOffice runs in its own process group, killed whole after
it (its pid namespace goes with bwrap), and never past the grading deadline (`kwrl.grading.budget`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from xml.etree import ElementTree

from kwrl.grading import budget
from kwrl.grading.files import MAX_FILE_BYTES, check_zip_budget, read_all

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
TIMEOUT_S = 120.0
SANDBOX_UID = 65534
"""`nobody`: the uid LibreOffice runs as where the grader is root and may switch."""

PROFILE_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Writer/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="BlockUntrustedRefererLinks" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
</oor:items>
"""
"""LibreOffice's registrymodifications.xcu: Calc and Writer never update links (Calc 1, Writer 2:
"never"), linked images from untrusted documents are blocked, macros never run."""

# $1 the profile, $2 LibreOffice, $3 the output cap, $4 a private scratch dir (the sandbox's /tmp);
# stdin the workbook, stdout the converted one.
_CONVERT = (
    'cd "$4" && mkdir -p lo/user in out && printf %s "$1" > lo/user/registrymodifications.xcu && '
    'cat > in/book.xlsx && "$2" "-env:UserInstallation=file://$4/lo" --headless --norestore '
    "--nologo --calc --convert-to 'xlsx:Calc MS Excel 2007 XML' --outdir out in/book.xlsx "
    '> /dev/null 2>&1 && head -c "$3" out/book.xlsx'
)
_ETC = ("fonts", "libreoffice", "passwd", "group", "nsswitch.conf", "ld.so.cache", "localtime")
_USR_LINKS = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")
_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
_RELS_NS = "{http://schemas.openxmlformats.org/package/2006/relationships}"

_VARIANTS: dict[str, tuple[bool, bool] | None] = {}
"""By LibreOffice binary: the sandbox variant this host allows, (switch user, mount a new /proc),
or None where none starts; probed once."""


def _mode() -> str:
    """KWRL_GRADER_RECALC: 'off', 'on' (sandboxed only) or 'unsandboxed' (allowed without one)."""
    raw = os.environ.get("KWRL_GRADER_RECALC", "1").strip().lower()
    if raw in ("0", "off", "false", "no"):
        return "off"
    return "unsandboxed" if raw == "unsandboxed" else "on"


def soffice() -> str | None:
    """The LibreOffice binary, or None when absent or disabled by KWRL_GRADER_RECALC=0."""
    if _mode() == "off":
        return None
    return shutil.which("soffice") or shutil.which("libreoffice")


def strip_external(data: bytes) -> bytes:
    """The office file `data` (a zip) with every external relationship removed from its `.rels`
    parts (a part that does not parse is dropped whole); the other members are copied as they are."""
    src = zipfile.ZipFile(io.BytesIO(data))
    buf = io.BytesIO()
    with src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            part = src.read(info)
            if info.filename.endswith(".rels"):
                stripped = _internal_rels(part)
                if stripped is None:
                    continue
                part = stripped
            out.writestr(info, part)
    return buf.getvalue()


def _internal_rels(part: bytes) -> bytes | None:
    """A `.rels` part without its external relationships; None when it does not parse."""
    try:
        root = ElementTree.fromstring(part)
    except ElementTree.ParseError:
        return None
    external = [r for r in root if (r.get("TargetMode") or "").strip().lower() == "external"]
    if not external:
        return part
    for rel in external:
        root.remove(rel)
    ElementTree.register_namespace("", _RELS_NS[1:-1])
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)


def sandbox_argv(exe: str, *, switch_user: bool, new_proc: bool) -> list[str]:
    """argv that runs `_CONVERT` with LibreOffice `exe` in the sandbox (module doc)."""
    argv = (
        ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups", "--"]
        if switch_user
        else []
    )
    argv += [
        "bwrap", "--unshare-user", "--disable-userns", "--unshare-net", "--unshare-pid",
        "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--new-session",
        "--die-with-parent", "--tmpfs", "/tmp", "--ro-bind", "/usr", "/usr",
    ]  # fmt: skip
    for name in _USR_LINKS:
        p = Path("/") / name
        if p.is_symlink():
            argv += ["--symlink", os.readlink(p), str(p)]
        elif p.is_dir():
            argv += ["--ro-bind", str(p), str(p)]
    for name in _ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    home = Path(exe).resolve().parents[1]  # /opt/libreofficeX.Y/program/soffice
    if not home.is_relative_to("/usr"):
        argv += ["--ro-bind", str(home), str(home)]
    argv += ["--proc", "/proc"] if new_proc else ["--ro-bind", "/proc", "/proc"]
    argv += ["--dev", "/dev", "--clearenv", "--setenv", "PATH", "/usr/bin:/bin"]
    argv += ["--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8", "--chdir", "/tmp"]
    return [*argv, "--cap-drop", "ALL", "--", "/bin/sh", "-c"]


def _variants() -> list[tuple[bool, bool]]:
    """Sandbox variants worth probing here, best first: a user switch only where root may make
    one to a mapped `nobody`; a new /proc before the parent's bound read-only (a bwrap parent
    covers parts of its /proc, so a nested one cannot mount another)."""
    switch = [True, False] if os.geteuid() == 0 and _uid_mapped(SANDBOX_UID) else [False]
    return [(s, p) for s in switch for p in (True, False)]


def _uid_mapped(uid: int) -> bool:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/uid_map").read_text().splitlines():
            inside, _, count = (int(x) for x in line.split())
            if inside <= uid < inside + count:
                return True
    return False


def _sandbox_variant(exe: str) -> tuple[bool, bool] | None:
    """The first variant whose sandbox starts here (probed once per binary), or None."""
    if exe in _VARIANTS:
        return _VARIANTS[exe]
    errors: list[str] = []
    found = None
    for switch, new_proc in _variants():
        argv = sandbox_argv(exe, switch_user=switch, new_proc=new_proc)
        try:
            done = subprocess.run(
                [*argv, "exit 0"], capture_output=True, timeout=30, check=False,
                stdin=subprocess.DEVNULL, env=_ENV,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            errors.append(str(e))
            continue
        if done.returncode == 0:
            found = (switch, new_proc)
            break
        errors.append(done.stderr.decode(errors="replace").strip()[-300:])
    _VARIANTS[exe] = found
    if found is None:
        log.warning(
            "formula recalculation: LibreOffice cannot be sandboxed here (%s); workbooks are not "
            "recalculated (KWRL_GRADER_RECALC=unsandboxed allows it without one)",
            "; ".join(errors) or "no bwrap",
        )
    return found


def recalculated_copy(path: Path, dest_dir: Path, *, timeout: float = TIMEOUT_S) -> Path | None:
    """A copy of the workbook at `path`, saved by LibreOffice into `dest_dir` with formulas computed."""
    exe = soffice()
    if exe is None:
        return None
    data = read_all(path, MAX_FILE_BYTES)  # the agent's file: no link, capped
    check_zip_budget(data)
    try:
        data = strip_external(data)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
        log.warning("formula recalculation of %s: unreadable zip (%s)", path, e)
        return None
    with _LOCK:
        variant = _sandbox_variant(exe) if shutil.which("bwrap") else None
        if variant is not None:
            argv = sandbox_argv(exe, switch_user=variant[0], new_proc=variant[1])
        elif _mode() == "unsandboxed":
            argv = ["/bin/sh", "-c"]
        else:
            return None
        meter = budget.active()
        if meter is not None:  # never past the grading deadline
            meter.check_time()
            timeout = min(timeout, meter.deadline - time.monotonic())
        with _scratch(variant is None) as scratch:
            args = [_CONVERT, "kwrl-recalc", PROFILE_XCU, exe, str(MAX_FILE_BYTES + 1), scratch]
            code, out = _run([*argv, *args], data, timeout, path)
    if code != 0 or not out or len(out) > MAX_FILE_BYTES:
        log.warning("formula recalculation of %s failed (exit %s)", path, code)
        return None
    produced = dest_dir / (path.stem + ".xlsx")
    produced.write_bytes(out)
    return produced


@contextlib.contextmanager
def _scratch(unsandboxed: bool) -> Iterator[str]:
    """The conversion's scratch dir: the sandbox's own /tmp, else a private temp dir."""
    if not unsandboxed:
        yield "/tmp"
        return
    with tempfile.TemporaryDirectory(prefix="kwrl-grader-lo-") as d:
        yield d


def _run(argv: Sequence[str], data: bytes, timeout: float, path: Path) -> tuple[int | None, bytes]:
    """Run the conversion, feeding `data`; (exit code or None on a timeout, stdout)."""
    # Its own session: LibreOffice forks soffice.bin, which holds the pipes; on a timeout or
    # the grading deadline the whole group is killed, not just the launcher.
    # A minimal env: bwrap (as `nobody`) is visible to LibreOffice where /proc is the parent's.
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True, env=_ENV,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        log.warning("formula recalculation of %s timed out after %.0f s", path, timeout)
        return None, b""
    finally:
        _kill_group(proc)
    return proc.returncode, out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of LibreOffice's process group and reap the launcher."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
