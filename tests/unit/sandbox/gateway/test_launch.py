"""The gateway's process reference: state while it runs, stops and ends, and never a reused pid."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import pytest

from kwrl.sandbox.gateway.launch import ProcRef, _stat, proc_ref, proc_state


def test_a_process_is_seen_running_stopped_and_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ref = proc_ref(proc.pid)
        assert ref is not None and ref.pid == proc.pid
        assert proc_state(ref) in ("R", "S", "D")  # alive (D: just exec'd, waiting on the disk)
        proc.send_signal(signal.SIGSTOP)
        os.waitpid(proc.pid, os.WUNTRACED)  # returns once it has stopped
        assert proc_state(ref) == "T"
        proc.kill()
        proc.wait()
        assert proc_state(ref) is None  # reaped: gone
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_reused_pid_is_not_the_process() -> None:
    ref = proc_ref(1)
    assert ref is not None
    assert proc_state(ProcRef(1, str(int(ref.start) + 1))) is None
    assert proc_ref(2**22 + 1) is None  # past pid_max: no such process


# Holds a process in the kernel's exit, after it closed its files, for as long as the test likes:
# the init of a new pid namespace waits in its exit until every process of the namespace is
# reaped, and its sibling in there is the child of this holder outside, which reaps it only when
# told to (its stdin closes).
_HOLD_EXIT = """
import os, signal, sys
os.unshare(os.CLONE_NEWPID)
init = os.fork()
if init == 0:
    signal.pause()  # pid 1 of the namespace, holding the socket
os.close(int(sys.argv[1]))
member = os.fork()
if member == 0:
    signal.pause()
print(init, flush=True)
sys.stdin.read()
os.waitpid(member, 0)
os.waitpid(init, 0)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a new pid namespace)")
def test_a_process_that_closed_its_files_on_its_way_out_is_gone() -> None:
    """Its peer sees the connection end while /proc still says R or S (it has not turned zombie):
    a killed world gateway's MCP session failed so, under load, and with the gateway seen alive the
    trial stopped on tool_error (masked) instead of tools_lost."""
    mine, theirs = socket.socketpair()
    mine.settimeout(60)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_EXIT, str(theirs.fileno())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        pass_fds=(theirs.fileno(),),
        text=True,
    )
    theirs.close()
    init = 0
    try:
        assert holder.stdout is not None
        init = int(holder.stdout.readline())
        ref = proc_ref(init)
        assert ref is not None and proc_state(ref) in ("R", "S", "D")
        os.kill(init, signal.SIGKILL)
        assert mine.recv(1) == b""  # its files are closed: it is past that point of its exit
        st = _stat(init)
        assert st is not None and st[0] in ("R", "S", "D")  # not a zombie yet, by the kernel's word
        assert proc_state(ref) == "X"
    finally:
        mine.close()
        if init:  # the holder's child until it is told to reap it: the pid is not reused
            os.kill(init, signal.SIGKILL)
        else:
            holder.kill()
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    assert proc_state(ref) is None
