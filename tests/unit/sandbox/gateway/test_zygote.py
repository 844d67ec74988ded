"""The zygote's objects are immortal before it forks (`kwrl.sandbox.gateway.zygote.immortalize`): using one
no longer writes its reference count, so a fork reading it keeps the page shared. Run in a child
interpreter: immortal objects are never freed."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kwrl.sandbox.gateway.zygote import LOG_LINE_MAX, BriefRecords

_CHILD = """
import gc, sys
from kwrl.sandbox.gateway.zygote import immortalize
state = {"tools": [{"name": f"t{i}", "schema": {"type": "object"}} for i in range(100)]}
gc.collect()
assert immortalize() > 100
before = sys.getrefcount(state["tools"][0])
refs = [state["tools"][0] for _ in range(1000)]
assert sys.getrefcount(state["tools"][0]) == before, "the count was written"
state["tools"][0]["name"] = "changed"  # still an ordinary, mutable object
del refs
print(state["tools"][0]["name"], len(state["tools"]))
"""


@pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="immortalize acts on CPython 3.12 only")
def test_immortal_objects_keep_their_count_and_work() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["changed", "100"]


def test_a_tool_error_is_logged_on_one_short_line_without_its_argument_whole() -> None:
    """fastmcp logs a tool's exception with its traceback: the agent's 1 MiB argument, whole."""
    big = "A" * (1 << 20)
    with pytest.raises(OSError) as caught:
        open(f"/nonexistent/{big}")  # noqa: SIM115
    exc_info = (caught.type, caught.value, caught.tb)
    record = logging.LogRecord(
        "fastmcp.server", logging.ERROR, __file__, 1, "Error calling tool %r", ("x",), exc_info
    )
    handler = logging.StreamHandler()
    handler.addFilter(BriefRecords())
    assert handler.filter(record)
    line = handler.format(record)
    assert "\n" not in line and len(line) < LOG_LINE_MAX + 50
    assert (
        line.startswith("Error calling tool 'x' [OSError: [Errno 36]") and "characters cut" in line
    )
