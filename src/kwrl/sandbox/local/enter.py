"""Entering a running sandbox: every privilege is dropped before anything inside is executed.

Agent-phase commands (`exec`, `upload_*`, `download_*`, harbor's artifact collection) and the
exec-mode gateway start on the host as root (or as the user, rootless) and must join the sandbox's
namespaces, which takes capabilities. The helper here does that in one process whose code and
loader are the host's: it opens the sandbox init's namespaces and root, `setns`es into them
(the user namespace first where rootless), chroots to the sandbox's root, empties the capability
bounding set and the ambient set, switches to the requested user (or stays uid 0, without
capabilities), clears every capability, sets no_new_privs, and only then forks (the pid namespace
applies to children) and execs the command. The first program loaded from the sandbox's root is
the command itself, already unprivileged: nothing the agent left inside (an `/etc/ld.so.preload`,
a library, a binary on a path) can run with a privilege agent code lacks. (The earlier
`nsenter ... -- setpriv ...` loaded `setpriv` from the sandbox's root as root with every
capability, so a planted `/etc/ld.so.preload` ran as host root.)

The parent waits for the command and exits with its status (a command killed by a signal kills
the parent with the same signal, as nsenter does); the command dies with its parent
(PR_SET_PDEATHSIG).

`enter_argv(cache_dir, pid, ...)` is a C program compiled once per host (`kwrl.sandbox.local.native`)
where the host has a compiler, else the same steps in Python (`python -I -S`, every module
imported before the first `setns`).
"""

from __future__ import annotations

from pathlib import Path

from kwrl.sandbox.base import sandbox_python
from kwrl.sandbox.local import native

# argv: PID USERNS UID GID -- COMMAND...  (UID/GID -1: keep; USERNS 1: join the user namespace)
_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what) {
    dprintf(2, "kwrl-enter: %s: %s\n", what, strerror(errno));
    _exit(126);
}

int main(int argc, char **argv) {
    static const char *names[] = {"user", "ipc", "uts", "net", "pid", "mnt"};
    int fds[6], root, i, status;
    char path[64];
    long pid, uid, gid;
    pid_t child;
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2];

    if (argc < 7 || strcmp(argv[5], "--") != 0) {
        dprintf(2, "usage: kwrl-enter PID USERNS UID GID -- COMMAND...\n");
        return 125;
    }
    pid = strtol(argv[1], 0, 10);
    uid = strtol(argv[3], 0, 10);
    gid = strtol(argv[4], 0, 10);
    for (i = 0; i < 6; i++) {
        fds[i] = -1;
        if (i == 0 && strcmp(argv[2], "1") != 0) continue;
        snprintf(path, sizeof path, "/proc/%ld/ns/%s", pid, names[i]);
        if ((fds[i] = open(path, O_RDONLY | O_CLOEXEC)) < 0) die(path);
    }
    snprintf(path, sizeof path, "/proc/%ld/root", pid);
    if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) die(path);
    for (i = 0; i < 6; i++) {
        if (fds[i] < 0) continue;
        if (setns(fds[i], 0) != 0) die(names[i]);
        close(fds[i]);
    }
    if (fchdir(root) != 0 || chroot(".") != 0 || chdir("/") != 0) die("chroot");
    close(root);
    for (i = 0; i < 64; i++) prctl(PR_CAPBSET_DROP, i, 0, 0, 0);  /* EINVAL past the last cap */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (gid >= 0 && (setgroups(0, 0) != 0 || setresgid(gid, gid, gid) != 0)) die("setgid");
    if (uid >= 0 && setresuid(uid, uid, uid) != 0) die("setuid");
    memset(caps, 0, sizeof caps);
    if (syscall(SYS_capset, &head, caps) != 0) die("capset");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
    if ((child = fork()) < 0) die("fork");
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        execvp(argv[6], argv + 6);
        dprintf(2, "kwrl-enter: %s: %s\n", argv[6], strerror(errno));
        _exit(127);
    }
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) die("waitpid");
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        kill(getpid(), WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
"""

_PY = r"""import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
class Head(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
def die(what):
    os.write(2, f"kwrl-enter: {what}: {os.strerror(ctypes.get_errno() or 1)}\n".encode())
    os._exit(126)
pid, userns, uid, gid = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
if sys.argv[5] != "--" or len(sys.argv) < 7:
    os.write(2, b"usage: kwrl-enter PID USERNS UID GID -- COMMAND...\n")
    os._exit(125)
command = sys.argv[6:]
names = (["user"] if userns else []) + ["ipc", "uts", "net", "pid", "mnt"]
fds = [os.open(f"/proc/{pid}/ns/{n}", os.O_RDONLY | os.O_CLOEXEC) for n in names]
root = os.open(f"/proc/{pid}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
for fd in fds:
    os.setns(fd, 0)
    os.close(fd)
os.fchdir(root)
os.chroot(".")
os.chdir("/")
os.close(root)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
if gid >= 0:
    os.setgroups([])
    os.setresgid(gid, gid, gid)
if uid >= 0:
    os.setresuid(uid, uid, uid)
if libc.capset(ctypes.byref(Head(0x20080522, 0)), (Data * 2)()) != 0:
    die("capset")
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    die("no_new_privs")
child = os.fork()
if child == 0:
    libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    try:
        os.execvp(command[0], command)
    except OSError as e:
        os.write(2, f"kwrl-enter: {command[0]}: {e.strerror}\n".encode())
    os._exit(127)
status = os.waitpid(child, 0)[1]
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
os._exit(os.waitstatus_to_exitcode(status) % 256)
"""


def enter_argv(
    cache_dir: Path, pid: int, *, userns: bool, user: tuple[int, int] | None = None
) -> list[str]:
    """argv prefix (the command follows it) that runs a command inside the sandbox whose init is
    `pid`: in its namespaces and root, with no capability and no_new_privs, as `user` (uid, gid)
    or as uid 0 without capabilities; `userns`: join the sandbox's user namespace (rootless)."""
    uid, gid = user if user is not None else (-1, -1)
    args = [str(pid), "1" if userns else "0", str(uid), str(gid), "--"]
    binary = native.compiled(cache_dir, "enter", _C)
    if binary is None:
        return [sandbox_python(), "-I", "-S", "-c", _PY, *args]
    return [str(binary), *args]
