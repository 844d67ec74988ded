"""The gateway's process reference: state while it runs, stops and ends, and never a reused pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from kwrl.sandbox.gateway import ProcRef, proc_ref, proc_state


def test_a_process_is_seen_running_stopped_and_gone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        ref = proc_ref(proc.pid)
        assert ref is not None and ref.pid == proc.pid
        assert proc_state(ref) in ("R", "S")
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
