"""The fault injector: infrastructure failures played into real trials, for the soak and tests.

Off unless env `KWRL_FAULTS` holds a `FaultSettings` JSON (`benchmarks/fault_soak.py` and the
tests set it; no config file or flag can): then `kwrl.rollout.runner.run_trial` draws, for each
trial attempt, at most one fault from the kinds that apply to it, each with its `rates` entry
(seeded by `seed` and the trial's name, so a rerun of the same run draws the same faults), and
plays it. `kwrl train` and SkyRL's entry points refuse to start while it is set (`refuse`): a
trainer must never learn from faults played on purpose.

Where each kind is played:
- host-side, in the local sandbox, at a seeded moment early in the agent phase (`HOST_KINDS`):
  `init_kill` SIGKILLs the sandbox's init (its pid namespace and every process in it end),
  `gateway_kill` SIGKILLs the world gateway (every app of the trial exits: they are one process),
  `tool_hang` SIGSTOPs it for `hang_s` (every tool call hangs past its timeout), `disk_fill`
  fills the trial's disk (its storage tmpfs) to its quota from outside;
- on the wire: `judge_429`, `judge_500`, `judge_timeout`, `judge_malformed`, `judge_schema` point
  the trial's verifier at `/fault/<kind>/` of the run's judge (`FaultSettings.judge`, a
  `kwrl.grading.judges.loopback.LoopbackJudge`, whose fault routes answer every request of that
  trial so), and `policy_delay` points KwrlAgent at `/fault/policy_delay/` of the run's policy
  (`FaultSettings.policy`, a `kwrl.llm.loopback.LoopbackPolicy`: every answer seconds late, so
  the trial is slow, or runs into its agent timeout; a hung endpoint is
  tests/integration/test_policy_failures.py's);
- `process_kill` (SIGKILL of the rollout or eval process, then resume) is the soak driver's: it
  is counted there, not drawn per trial.

Every played fault is written to `<trial_dir>/fault.json` (`{"kind", "host", "at_s"}`).
Classification (`kwrl.rollout.failures.classify_result`) reads it for the host-side kinds only:
the host knows it did them, and from inside a trial they look exactly like agent code killing
or stopping its own gateway or filling its own disk (which is the agent's doing, trained). The
judge's and the policy's faults are classified by what the trial shows, as in a real run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import time
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from kwrl.config import KwrlConfig
from kwrl.errors import ConfigError
from kwrl.io import write_json
from kwrl.rollout.failures import FAULT_FILE

ENV = "KWRL_FAULTS"
"""The one way to turn the injector on: a `FaultSettings` JSON in this environment variable."""


class FaultKind(StrEnum):
    INIT_KILL = "init_kill"
    GATEWAY_KILL = "gateway_kill"
    TOOL_HANG = "tool_hang"
    DISK_FILL = "disk_fill"
    JUDGE_429 = "judge_429"
    JUDGE_500 = "judge_500"
    JUDGE_TIMEOUT = "judge_timeout"
    JUDGE_MALFORMED = "judge_malformed"
    JUDGE_SCHEMA = "judge_schema"
    POLICY_DELAY = "policy_delay"
    PROCESS_KILL = "process_kill"


HOST_KINDS = frozenset(
    {FaultKind.INIT_KILL, FaultKind.GATEWAY_KILL, FaultKind.TOOL_HANG, FaultKind.DISK_FILL}
)
"""Faults the host plays on the trial's sandbox: classified by `fault.json` (module doc)."""
JUDGE_KINDS = frozenset(k for k in FaultKind if k.startswith("judge_"))


class FaultSettings(KwrlConfig):
    """What the injector plays (env `KWRL_FAULTS`, as JSON)."""

    seed: int = 0
    """Seeds every draw (with the trial's name)."""
    rates: dict[FaultKind, float] = Field(default_factory=dict)
    """Chance that a trial attempt gets each kind, among the kinds that apply to it (their sum at
    most 1: one fault a trial attempt at most). `process_kill` is never drawn per trial (the soak
    driver kills the process a number of times)."""
    judge: str | None = None
    """The run's judge spec (a `LoopbackJudge`): judge faults apply to trials graded by it."""
    policy: str | None = None
    """The run's policy spec (a `LoopbackPolicy`): `policy_delay` applies to trials sampling it."""
    max_delay_s: float = Field(default=0.5, ge=0)
    """A host-side fault is played this many seconds at most (seeded) after the agent starts."""
    hang_s: float = Field(default=30.0, ge=0)
    """`tool_hang` keeps the gateway stopped this long, then lets it go on: set it past the tool
    call timeout of the agent under test (the soak's agents: 15 s and 10 s)."""

    @model_validator(mode="after")
    def _one_fault_at_most(self) -> FaultSettings:
        bad = {str(k): r for k, r in self.rates.items() if not 0 <= r <= 1}
        if bad:
            raise ValueError(f"rates must lie in [0, 1]: {bad}")
        total = sum(r for k, r in self.rates.items() if k is not FaultKind.PROCESS_KILL)
        if total > 1:
            raise ValueError(f"rates sum to {total:g} > 1 (one fault a trial attempt at most)")
        return self

    def to_env(self) -> dict[str, str]:
        """The environment entry that turns this on in a child process."""
        return {ENV: self.model_dump_json()}

    def applicable(self, cfg: Any, task_dir: Path) -> list[FaultKind]:
        """The kinds a trial of `cfg` (a `RolloutConfig`) on `task_dir` can get, in `FaultKind`
        order: the judge's only where the task has a criterion only a judge grades."""
        kinds: list[FaultKind] = []
        if cfg.environment == "local":
            kinds += sorted(HOST_KINDS, key=list(FaultKind).index)
        judge = cfg.verifier_env.get("KWRL_JUDGE")
        if self.judge is not None and judge == self.judge and judged(task_dir):
            kinds += sorted(JUDGE_KINDS, key=list(FaultKind).index)
        if self.policy is not None and cfg.model == self.policy:
            kinds.append(FaultKind.POLICY_DELAY)
        return kinds

    def draw(self, trial_name: str, kinds: list[FaultKind]) -> FaultKind | None:
        """The fault of trial `trial_name` (None: none), among `kinds`."""
        u = unit(self.seed, trial_name, "kind")
        for kind in kinds:
            u -= self.rates.get(kind, 0.0)
            if u < 0:
                return kind
        return None


def judged(task_dir: Path) -> bool:
    """Whether a criterion of the task has no machine check (the judge grades it)."""
    from kwrl.errors import KwrlError
    from kwrl.tasks.taskdir import read_verifiers

    try:
        return any(v.verifier_values.kwrl_check is None for v in read_verifiers(task_dir))
    except KwrlError:
        return False


def unit(seed: int, *parts: str) -> float:
    """A uniform number in [0, 1) from `seed` and `parts` (sha256)."""
    digest = hashlib.sha256("/".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def active() -> FaultSettings | None:
    """The injector's settings when env `KWRL_FAULTS` turns it on, else None; a value that is not
    a `FaultSettings` JSON is a ConfigError naming the variable and the field."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        return FaultSettings.model_validate_json(raw)
    except ValidationError as e:
        where = "; ".join(
            f"{'.'.join(str(p) for p in x['loc']) or '<root>'}: {x['msg']}" for x in e.errors()
        )
        raise ConfigError(f"env {ENV}: not fault injector settings ({where})") from None


def refuse(verb: str) -> None:
    """Refuse to `verb` while the injector is on (a trainer must never learn from its faults)."""
    if os.environ.get(ENV):
        raise ConfigError(
            f"env {ENV} is set: the fault injector is for benchmarks/fault_soak.py and tests, and "
            f"{verb} refuses to run with it (training on faults played on purpose); unset {ENV}"
        )


def adjust(cfg: Any, kind: FaultKind, settings: FaultSettings) -> Any:
    """`cfg` (a `RolloutConfig`) pointing the trial's judge or policy at its fault route."""
    if kind in JUDGE_KINDS and settings.judge is not None:
        env = {**cfg.verifier_env, "KWRL_JUDGE": fault_url(settings.judge, kind)}
        return cfg.model_copy(update={"verifier_env": env})
    if kind is FaultKind.POLICY_DELAY and settings.policy is not None:
        return cfg.model_copy(update={"model": fault_url(settings.policy, kind)})
    return cfg


def fault_url(spec: str, kind: FaultKind) -> str:
    """`http://HOST:PORT/v1#NAME` -> `http://HOST:PORT/fault/<kind>/v1#NAME`."""
    base, sep, name = spec.partition("#")
    head, _, tail = base.rstrip("/").rpartition("/")
    return f"{head}/fault/{kind}/{tail}{sep}{name}"


def record(trial_dir: Path, kind: FaultKind, at_s: float | None = None) -> None:
    """Write what was played into the trial dir (`fault.json`)."""
    if trial_dir.is_dir():
        write_json(trial_dir / FAULT_FILE, {"kind": str(kind), "host": kind in HOST_KINDS,
                                            "at_s": at_s})  # fmt: skip


def read(trial_dir: Path) -> dict[str, Any] | None:
    """`fault.json` of a trial dir, or None."""
    path = Path(trial_dir) / FAULT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def arm(trial: Any, kind: FaultKind, settings: FaultSettings, trial_dir: Path) -> None:
    """Play host-side fault `kind` on harbor `trial`'s sandbox once its agent starts, at a
    seeded moment up to `max_delay_s` later, while the trial runs."""
    from harbor.trial.hooks import TrialEvent

    delay = settings.max_delay_s * unit(settings.seed, trial_dir.name, "at")
    started = time.monotonic()
    tasks: list[asyncio.Task[None]] = []

    async def play() -> None:
        await asyncio.sleep(delay)
        env = trial.agent_environment
        with contextlib.suppress(ProcessLookupError, OSError):
            _play(env, kind)
        record(trial_dir, kind, time.monotonic() - started)
        if kind is FaultKind.TOOL_HANG and env._gateway_ref is not None:
            await asyncio.sleep(settings.hang_s)
            with contextlib.suppress(ProcessLookupError):
                os.kill(env._gateway_ref.pid, signal.SIGCONT)

    async def on_agent_start(_event: Any) -> None:
        tasks.append(asyncio.create_task(play()))

    async def on_end(_event: Any) -> None:
        for t in tasks:
            if not t.done():
                t.cancel()
                if not (trial_dir / FAULT_FILE).is_file():
                    record(trial_dir, kind, None)  # armed, but the trial ended first

    trial.add_hook(TrialEvent.AGENT_START, on_agent_start)
    trial.add_hook(TrialEvent.END, on_end)


def _play(env: Any, kind: FaultKind) -> None:
    """One host-side fault on a `LocalEnvironment` (module doc)."""
    if kind is FaultKind.INIT_KILL:
        os.kill(env.init_pid, signal.SIGKILL)
    elif kind in (FaultKind.GATEWAY_KILL, FaultKind.TOOL_HANG):
        ref = env._gateway_ref
        if ref is not None:
            sig = signal.SIGKILL if kind is FaultKind.GATEWAY_KILL else signal.SIGSTOP
            os.kill(ref.pid, sig)
    elif kind is FaultKind.DISK_FILL:
        where = env._in_mounts("disk")
        if where is not None:
            _fill(Path(where) / ".kwrl-fault-fill")


def _fill(path: Path, chunk: int = 16 << 20) -> None:
    """Grow `path` until its filesystem is full (ENOSPC)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size = 0
        while True:
            try:
                os.posix_fallocate(fd, size, chunk)
            except OSError:
                if chunk <= 4096:
                    return
                chunk //= 16
                continue
            size += chunk
    finally:
        os.close(fd)
