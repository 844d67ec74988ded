"""Progress lines for steps that take longer than a few seconds, so a user never waits in silence.

Lines go to stderr (stdout keeps what a verb prints as its result), one per event, never a bar:
- `step(what)`: `what ...` when it starts and `what: 12.3 s` when it ends (loading a model,
  `kwrl.llm.engines.registry.load_engine`; building a docker image, `ensure_image`), or
  `what: failed after 2.1 s (ErrorType)`;
- `turn(stats)`: one line per policy turn of a trial's agent (`kwrl.agent.loop`), shown only after
  `show_turns()` (`kwrl trial run` with a model: a rollout's or a trainer's concurrent trials would
  interleave theirs).

`quiet()` silences them (set `KWRL_QUIET=1` in the environment to do the same from outside).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

QUIET_ENV = "KWRL_QUIET"
_state = {"turns": False, "quiet": False}


def _silent() -> bool:
    return _state["quiet"] or os.environ.get(QUIET_ENV, "0") not in ("", "0")


def note(line: str) -> None:
    """One progress line on stderr (nothing when quiet)."""
    if not _silent():
        print(f"kwrl: {line}", file=sys.stderr, flush=True)


@contextmanager
def step(what: str) -> Iterator[None]:
    """Say `what` starts, then how long it took (or that it failed, and after how long)."""
    note(f"{what} ...")
    t0 = time.monotonic()
    try:
        yield
    except BaseException as e:
        note(f"{what}: failed after {time.monotonic() - t0:.1f} s ({type(e).__name__})")
        raise
    note(f"{what}: {time.monotonic() - t0:.1f} s")


def show_turns(on: bool = True) -> None:
    """Print a line per agent turn from now on (`turn`)."""
    _state["turns"] = on


def quiet(on: bool = True) -> None:
    """Silence every progress line of this process."""
    _state["quiet"] = on


def turn(stats: Any) -> None:
    """`turn 3: policy 4.2 s (812+57 tokens), tools mail_search, excel_read 0.3 s` when turns
    are shown; `stats` is a `kwrl.agent.meta.TurnStats` (untyped here: this module sits below
    every folder)."""
    if not _state["turns"]:
        return
    calls = ", ".join(c.name for c in stats.tool_calls) or "none"
    note(
        f"turn {stats.step + 1}: policy {stats.latency_s:.1f} s ({stats.prompt_tokens}+"
        f"{stats.completion_tokens} tokens), tools {calls} {stats.tool_latency_s:.1f} s"
    )
