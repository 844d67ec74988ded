"""The zygote's objects are immortal before it forks (`kwrl.sandbox.zygote.immortalize`): using one
no longer writes its reference count, so a fork reading it keeps the page shared. Run in a child
interpreter: immortal objects are never freed."""

from __future__ import annotations

import subprocess
import sys

import pytest

_CHILD = """
import gc, sys
from kwrl.sandbox.zygote import immortalize
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
