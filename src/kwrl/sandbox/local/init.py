"""The sandbox's init (pid 1 of its pid namespace, `bwrap --as-pid-1`): a small C program where
this host can compile one, else the same loop in Python.

Its duties: say once on stdout that bwrap finished building the namespaces (`READY`), then reap
whatever is orphaned inside. As pid 1 it receives no signal sent from inside unless it handles
that signal, and it handles none (SIGCHLD is only blocked and waited for): agent code's
`kill -9 -1` cannot end the sandbox. With bwrap's own reaper as pid 1, a shell keeper as pid 2 was
killable, and bwrap ended the whole sandbox (world, /logs, gateway) with it. It is non-dumpable,
so agent code (same uid, no capabilities) can neither ptrace it nor open its
/proc/1/{fd,mem,environ}, and once ready its stdout and stderr are /dev/null: through
/proc/1/fd/2, agent code wrote 2 GiB and forged lines into the host file sandbox.log (bwrap's own
messages, outside, still go there), and a write to /proc/1/fd/1 (a pipe the host stops reading)
blocked it until the agent timeout.

Why C: a Python interpreter idling as pid 1 holds ~3.9 MB of private memory per trial (its heap
and libpython's relocated pages; `benchmarks/sandbox.py` at 256 idle trials: init 3.9 of 11.8 MB
PSS per trial); the compiled loop holds tens of KB. `init_argv(dir)` compiles `_C` once per host
into `dir` (`kwrl.sandbox.local.native`) and binds it read-only at `/kwrl/init`; without a C
compiler, or if it fails, the init is `python -I -S -c _PY` (same duties, same ready line).
"""

from __future__ import annotations

from pathlib import Path

from kwrl.sandbox.base import sandbox_python
from kwrl.sandbox.local import native

READY = b"kwrl-sandbox-ready"
INIT_PATH = "/kwrl/init"
"""Where the compiled init is bound inside the sandbox (read-only)."""

_C = r"""
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    static const char ready[] = "kwrl-sandbox-ready\n";
    sigset_t chld;
    int sig, null;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return 111;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &chld, 0) != 0) return 111;
    if (write(1, ready, sizeof ready - 1) != (ssize_t)(sizeof ready - 1)) return 111;
    null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0) return 111;
    if (null > 2) close(null);
    for (;;) {
        while (waitpid(-1, 0, WNOHANG) > 0) {}
        sigwait(&chld, &sig);
    }
}
"""

_PY = (
    "import ctypes, os, signal\n"
    "if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0):  # PR_SET_DUMPABLE\n"
    "    raise OSError(ctypes.get_errno(), 'prctl(PR_SET_DUMPABLE, 0)')\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})\n"
    "os.write(1, b'kwrl-sandbox-ready\\n')\n"
    "null = os.open('/dev/null', os.O_RDWR)\n"
    "os.dup2(null, 1)\n"
    "os.dup2(null, 2)\n"
    "while True:\n"
    "    try:\n"
    "        while os.waitpid(-1, os.WNOHANG)[0]:\n"
    "            pass\n"
    "    except ChildProcessError:\n"
    "        pass\n"
    "    signal.sigwait({signal.SIGCHLD})\n"
)


def init_argv(cache_dir: Path) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """The init's argv inside the sandbox and the binds it needs (the compiled init, read-only)."""
    binary = compiled_init(cache_dir)
    if binary is None:
        return [sandbox_python(), "-I", "-S", "-c", _PY], []
    return [INIT_PATH], [(str(binary), INIT_PATH, True)]


def compiled_init(cache_dir: Path) -> Path | None:
    """The compiled init under `cache_dir` (compiled now if missing), or None without a compiler."""
    return native.compiled(cache_dir, "init", _C)
