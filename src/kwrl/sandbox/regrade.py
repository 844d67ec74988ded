"""`kwrl grade`'s sandbox: a finished trial is regraded where its files cannot reach the host.

Everything in a trial dir was written by the agent or its sandbox, so `kwrl grade` (the command in
`kwrl.grading.cli`) does not parse it in the user's own process: it runs this module by name
(`python -I -m kwrl.sandbox.regrade --ro P ... [--rw P ...] -- GRADE_ARGS`), which runs the grader's
command again (`python -I -m kwrl.cli grade GRADE_ARGS --in-sandbox`) inside bubblewrap, as the
verifier phase runs test.sh:

- its own pid, ipc, uts and network namespaces and session; a read-only root; the host's system
  paths, the interpreter and kwrl read-only (`kwrl.sandbox.base.host_binds`); a private `/tmp`
  for the extracted changes; the trial dir, the task dir and its world read-only at their own paths
  (`--ro`), and writable only what `--write` and `--cache` name (`--rw`);
- no capabilities, but (as root) those the grader needs to start LibreOffice's own network-less
  sandbox as `nobody` (`kwrl.grading.recalc`), as in the verifier phase;
- an env of the sandbox's base variables plus the judge's and the grader's settings (`KWRL_*`, the
  judge's key variables) and nothing else of the user's;
- the judge reachable through the egress proxy (`kwrl.sandbox.network.egress`: the judge's endpoint and
  nothing else, never the host's loopback or networks), none at all without a judge.

The grader's output and exit status are the command's. `KWRL_GRADE_SANDBOX=off` grades in the
user's process instead, for a host without bubblewrap (the verifier's other guards still hold).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from kwrl.sandbox.base import base_env, host_binds, sandbox_python
from kwrl.sandbox.network.egress import Allowlist, EgressProxy, judge_endpoints, relay_argv

_PASS_ENV = re.compile(
    r"^(KWRL_.*|.*_API_KEY|GOOGLE_APPLICATION_CREDENTIALS|TERM|COLUMNS|NO_COLOR|FORCE_COLOR)$"
)
"""The user's variables the regrade sees: the judge's and the grader's settings and keys, and how
the terminal shows the table."""
_RUN = "/kwrl/run"
_NEST_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETFCAP")


def passed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What of the user's environment reaches the sandboxed grader (module doc)."""
    return {k: v for k, v in environ.items() if _PASS_ENV.match(k) and k != "KWRL_GRADE_SANDBOX"}


def regrade_argv(
    grade_args: Sequence[str],
    *,
    ro: Sequence[Path],
    rw: Sequence[Path],
    run_dir: Path,
    env: Mapping[str, str],
    egress: bool,
) -> list[str]:
    """bwrap's argv that runs `kwrl grade GRADE_ARGS --in-sandbox` (module doc)."""
    argv = [
        "bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-net",
        "--unshare-cgroup-try", "--new-session", "--die-with-parent",
        "--tmpfs", "/tmp", *host_binds(), "--proc", "/proc", "--dev", "/dev",
        "--tmpfs", "/dev/shm", "--dir", "/kwrl", "--ro-bind", str(run_dir), _RUN,
    ]  # fmt: skip
    for p in ro:
        argv += ["--ro-bind", str(p), str(p)]
    for p in rw:
        argv += ["--bind", str(p), str(p)]
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]  # only /tmp, /dev/shm and `rw` writable
    argv += ["--clearenv"]
    for k, v in {**env, **base_env(None)}.items():
        argv += ["--setenv", k, v]
    argv += ["--chdir", "/", "--cap-drop", "ALL"]
    if os.geteuid() == 0:
        for cap in _NEST_CAPS:
            argv += ["--cap-add", cap]
    py = sandbox_python()
    inner = [py, "-I", "-m", "kwrl.cli", "grade", *grade_args, "--in-sandbox"]
    return [*argv, "--", *(relay_argv(py, inner) if egress else inner)]


async def _run(argv: list[str], proxy: EgressProxy | None) -> int:
    if proxy is not None:
        await proxy.start()
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL)
        return await proc.wait()
    finally:
        if proxy is not None:
            await proxy.close()


def run(grade_args: Sequence[str], *, ro: Sequence[Path], rw: Sequence[Path] = ()) -> int:
    """Regrade in the sandbox; the grader's exit status."""
    if shutil.which("bwrap") is None:
        print(
            "kwrl grade: bubblewrap (bwrap) is not installed: the regrade runs in a sandbox; "
            "install it, or set KWRL_GRADE_SANDBOX=off to grade in this process",
            file=sys.stderr,
        )
        return 2
    env = passed_env(os.environ)
    endpoints = judge_endpoints(env)
    with tempfile.TemporaryDirectory(prefix="kwrl-regrade-") as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        proxy = None
        if endpoints:
            sock = run_dir / "egress.sock"
            proxy = EgressProxy(sock, Allowlist(endpoints=endpoints))
        argv = regrade_argv(
            grade_args, ro=ro, rw=rw, run_dir=run_dir, env=env, egress=proxy is not None
        )
        rc = asyncio.run(_run(argv, proxy))
    return 128 - rc if rc < 0 else rc


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kwrl.sandbox.regrade", description=__doc__)
    ap.add_argument("--ro", type=Path, action="append", default=[], help="read-only path")
    ap.add_argument("--rw", type=Path, action="append", default=[], help="writable path")
    ap.add_argument("grade_args", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    grade_args = args.grade_args[1:] if args.grade_args[:1] == ["--"] else args.grade_args
    return run(grade_args, ro=args.ro, rw=args.rw)


if __name__ == "__main__":
    sys.exit(main())
