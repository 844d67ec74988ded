"""The grader's budget for reading what the agent left behind: files, depth, text and time.

Whatever the agent leaves behind, the grader writes a reward (docs/contracts.md "Grading budget").
The trainer masks trials whose grader failed (an infrastructure cause, retried, masking the group),
so a grader an agent can crash or stall would let a policy trade a 0 for a mask. Everything the
grader reads from the trial is therefore bounded here:

- `max_files` files and directories in the final state beyond the world's own, `max_depth` directory levels and `max_path_bytes` of a
  relative path (`diff._scan`; a path past PATH_MAX cannot even be opened);
- `max_records` records parsed from the final state's app stores (new mail, events, chat JSON
  objects, counted before parsing where the store allows);
- `max_evidence_chars` of text rendered from the final state in all (each file is also capped on
  its own, `render.DEFAULT_MAX_CHARS`), which bounds the grader's memory;
- `deadline_s` of wall time for reading the agent's outputs and running the machine checks, kept
  well below task.toml's `[verifier] timeout_sec` (the judge's calls come after it and are bounded
  by the judge's own timeout and retries).

`enforced(budget)` arms them for the `with` body: the counters, a SIGALRM at the deadline and a
watchdog thread a little later (for C code that holds the interpreter). Running out raises
`OverBudget`; `kwrl.grading.verify` then fails every criterion with the reason and still writes
reward.json. `OverBudget` is a BaseException on purpose: it must pass through the renderers'
`except Exception` (a corrupt file is evidence, an exhausted budget is not).

Settings come from env `KWRL_GRADER_<FIELD>` (e.g. `KWRL_GRADER_DEADLINE_S=60`), e.g. through
task.toml `[verifier].env`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import Field, ValidationError

from kwrl.config import KwrlConfig, format_validation_error
from kwrl.errors import ConfigError
from kwrl.tasks.taskdir import GRADER_DEADLINE_S, GRADER_WATCHDOG_GRACE_S

ENV_PREFIX = "KWRL_GRADER_"
DEADLINE = "deadline of {:g} s passed while reading the agent's outputs"
ALARM_REPEAT_S = 0.25
"""The alarm repeats at this interval after the deadline until the reading stops."""
WATCHDOG_GRACE_S = GRADER_WATCHDOG_GRACE_S
"""Seconds past the deadline before the watchdog thread gives up on the main thread."""


class GraderBudget(KwrlConfig):
    """Bounds on what the grader reads from one trial (see the module docstring)."""

    deadline_s: float = Field(default=GRADER_DEADLINE_S, gt=0)
    """Wall time for reading the agent's outputs and running the machine checks. With the judge's
    worst case (~10.5 min, `JudgeConfig.timeout_s`) it stays inside task.toml's 900 s verifier
    limit; lower it with the task's `[verifier] timeout_sec` (`kwrl data validate` reports a
    timeout_sec under the deadline + `WATCHDOG_GRACE_S` + 30 s)."""
    max_files: int = Field(default=20_000, gt=0)
    """Files and directories the final state may hold beyond the initial state's files."""
    max_depth: int = Field(default=64, gt=0)
    """Directory levels below a subsystem (`filesystem/`, `.apps_data/`)."""
    max_path_bytes: int = Field(default=3_000, gt=0)
    """Bytes of one file's path relative to the state's root."""
    max_evidence_chars: int = Field(default=8_000_000, gt=0)
    """Characters rendered from the final state's files in all (each file is capped too)."""
    max_records: int = Field(default=50_000, gt=0)
    """Records parsed from the final state's app stores in all: new mail, calendar events, chat
    JSON objects (counted before parsing where the store allows)."""
    max_judge_artifacts: int = Field(default=200, gt=0)
    """Artifacts one criterion may show the judge; more fail the criterion (its prompt would
    outgrow any judge's context, and a refused prompt is a judge error)."""

    @classmethod
    def from_env(cls) -> GraderBudget:
        """Defaults, overridden by env `KWRL_GRADER_<FIELD>`."""
        data = {
            name: os.environ[ENV_PREFIX + name.upper()]
            for name in cls.model_fields
            if os.environ.get(ENV_PREFIX + name.upper())
        }
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(format_validation_error("KWRL_GRADER_* environment", e)) from e


class OverBudget(BaseException):
    """The agent's outputs exceeded the grader's budget; the message says which bound and how."""


@dataclass
class Meter:
    """What one grading has spent; `None` outside `enforced` (then nothing is bounded)."""

    budget: GraderBudget
    deadline: float
    chars: int = 0
    records: int = 0
    base_files: int = 0
    """Files of the initial state: the final one may hold `max_files` more."""

    def charge_chars(self, n: int, what: str) -> None:
        self.check_time()
        self.chars += n
        if self.chars > self.budget.max_evidence_chars:
            raise OverBudget(
                f"{self.chars} characters rendered from the final state by {what} "
                f"(cap {self.budget.max_evidence_chars})"
            )

    def charge_records(self, n: int, what: str) -> None:
        self.check_time()
        self.records += n
        if self.records > self.budget.max_records:
            raise OverBudget(
                f"{self.records} records ({what}) in the final state's app stores "
                f"(cap {self.budget.max_records})"
            )

    def check_time(self) -> None:
        """The deadline as a checkpoint, beside the alarm (whose exception Python swallows when
        it lands in a finalizer, e.g. an unclosed file's `__del__`)."""
        if time.monotonic() > self.deadline:
            raise OverBudget(DEADLINE.format(self.budget.deadline_s))


_ACTIVE: Meter | None = None


def active() -> Meter | None:
    """The meter of the grading in progress, if any."""
    return _ACTIVE


def charge_chars(n: int, what: str) -> None:
    """Count `n` rendered characters of the final state against the budget (no-op outside one)."""
    if _ACTIVE is not None:
        _ACTIVE.charge_chars(n, what)


def charge_records(n: int, what: str) -> None:
    """Count `n` records parsed from the final state's app stores (no-op outside a budget)."""
    if _ACTIVE is not None:
        _ACTIVE.charge_records(n, what)


@contextmanager
def enforced(
    budget: GraderBudget, on_hang: Callable[[str], None] | None = None, *, base_files: int = 0
) -> Iterator[Meter]:
    """Arm `budget` for the body: counters, SIGALRM at the deadline (main thread only) and, when
    `on_hang` is given, a watchdog thread that calls it `WATCHDOG_GRACE_S` later if the body is
    still running (the caller writes its zero reward there and exits the process). `base_files`:
    the initial state's files (the world's own count is not the agent's doing)."""
    global _ACTIVE
    meter = Meter(budget, time.monotonic() + budget.deadline_s, base_files=base_files)
    reason = DEADLINE.format(budget.deadline_s)
    armed = [True]

    def alarm(signum: int, frame: object) -> None:
        if armed[0]:
            raise OverBudget(reason)

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGALRM, alarm) if main else None
    if main:
        # Then again every ALARM_REPEAT_S: an alarm raised inside a finalizer is lost.
        signal.setitimer(signal.ITIMER_REAL, budget.deadline_s, ALARM_REPEAT_S)
    done = threading.Event()
    watchdog = None
    if on_hang is not None:
        hang = on_hang

        def watch() -> None:
            if not done.wait(budget.deadline_s + WATCHDOG_GRACE_S):
                hang(reason + " (the grader was stuck; the watchdog ended it)")

        watchdog = threading.Thread(target=watch, name="kwrl-grader-watchdog", daemon=True)
        watchdog.start()
    _ACTIVE = meter
    try:
        yield meter
    finally:
        while True:  # an alarm landing here must not leave the timer armed
            try:
                armed[0] = False
                if main:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    signal.signal(signal.SIGALRM, old)
                break
            except OverBudget:
                continue
        _ACTIVE = None
        done.set()
