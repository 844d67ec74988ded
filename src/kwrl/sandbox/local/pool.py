"""Pre-started spare sandboxes (`LocalSandboxConfig.pool`): `start()` takes one instead of building one.

A trial's start() builds a sandbox root, the trial's cgroups, the bwrap sandbox and the world
gateway (~60-100 ms on a loaded 2-core box, `benchmarks/sandbox.py`). With `pool: N`, each
trial's stop() starts, in the background, a spare of its world (up to N of it), and ends the
oldest spares of other worlds while more than N are pooled in all (the pool's memory stays
bounded however many worlds a run has). The next start() of a trial of that world takes one
(~1 ms): it does only what is per trial, the host checks, the spare's logs linked into its trial
dir, and `mcp_url` set. Refilled at stop(), not at start(): a spare then replaces a trial that
ended, and its start-up does not compete for the CPU with the new trial's first moments (on a busy
2-core box, refilling at start() doubled the claimant's first MCP session).

A spare is started exactly as a trial's sandbox (the same `LocalEnvironment.start()`) by an
environment built from the trial's own constructor arguments but a spare dir under
`<sandbox_dir>/<pid>-pool/` as its trial dir (its sandbox.log, gateway.log, and the sources of the
/logs mounts). Spares are keyed by everything start() reads (`key`): the class, the settings, the
world's layers, the limits and storage, the mount targets; a trial with mounts other than harbor's
/logs dirs always starts cold. Isolation is that of a cold start:
- a spare is a new sandbox, never a used one, taken by one trial only (popped from the pool) and
  stopped with it: the trial's `stop()` kills and removes it like any other;
- its limits (cgroups, tmpfs size, process limit) are the trial's, by the key;
- agent code sees the same mounts: /logs/agent and /logs/artifacts are private dirs on the
  sandbox's tmpfs either way (copied to the trial's own mounts when the agent phase ends), and
  /logs/verifier is read-only and empty in the agent phase either way (harbor writes it only in
  the verifier phase, which runs a fresh bwrap over the trial's own mounts).

Spares belong to the event loop that started them and end with it (`asyncio.run` closing it, or
a start() on another loop first), or at exit (`atexit`); `await drain()`
(`LocalEnvironment.drain()`) ends them now. `pooled_names()` lets `LocalEnvironment.leftovers()`
leave out what the pool holds (no trial's). Not a default: where each task runs once, every
trial's stop() starts a spare that no trial takes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import secrets
import shutil
import signal
from collections import deque
from collections.abc import AsyncGenerator, Hashable
from pathlib import Path

from kwrl.sandbox.local.state import LocalState

_LOGS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")
_LOG_FILES = ("sandbox.log", "gateway.log")
# What a spare's start set up and its claimant takes over.
_RUNTIME = (
    "root", "mcp_url", "_cg", "_proc", "_gateway", "_drain", "_gateway_ref", "_forwarder",
    "_init_pid",
)  # fmt: skip


class _Pool:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.spares: dict[Hashable, deque[asyncio.Task[LocalState]]] = {}
        self.held: set[LocalState] = set()
        """Spares built and not yet taken by a trial (started, starting or stopping)."""
        self.retiring: set[asyncio.Task[None]] = set()
        """Spares being ended (`_retire`)."""
        self.dirs: set[Path] = set()
        """The pool dirs made (`pool_dir`), removed once empty when the pool is drained."""
        self.keeper: AsyncGenerator[None] | None = None
        """Registered with the loop: drains the pool when the loop shuts down (`_until_loop_ends`)."""


_POOL = _Pool()


def pool_dir(env: LocalState) -> Path:
    return env._sandbox_dir() / f"{os.getpid()}-pool"


def key(env: LocalState) -> Hashable | None:
    """What a spare must share with `env` to serve it; None where `env` cannot use a spare."""
    mounts = env._mounts
    if env._ctor[0]:  # built with positional arguments: a spare could not replace its trial dir
        return None
    if any(m.get("type", "bind") != "bind" or m.get("target") not in _LOGS for m in mounts):
        return None
    targets = tuple(sorted((str(m["target"]), bool(m.get("read_only"))) for m in mounts))
    return (
        type(env),
        env.settings.model_dump_json(exclude={"pool"}),
        tuple(str(p) for p in env.world.lowers),
        tuple(vars(env._limits()).items()),
        env._storage_mb(),
        targets,
    )


async def claim(env: LocalState) -> LocalState | None:
    """A started spare for `env` taken out of the pool (waiting for one being started), or None."""
    k = key(env)
    if k is None:
        return None
    await _bind_loop()
    q = _POOL.spares.get(k)
    while q:
        task = q.popleft()
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            q.appendleft(task)  # still the pool's
            raise
        if task.cancelled():
            continue
        if (e := task.exception()) is not None:
            logging.getLogger(__name__).warning("a spare sandbox failed to start: %s", e)
            continue
        return task.result()
    return None


def refill(env: LocalState) -> None:
    """Start a spare of `env`'s world in the background (one per stopped trial) unless it has
    `settings.pool`; then end the oldest spares of other worlds while the pool holds more than
    `settings.pool` in all."""
    k = key(env)
    n = env.settings.pool
    if k is None or n <= 0 or _POOL.loop is not asyncio.get_running_loop():
        return  # `claim` binds the loop first
    q = _POOL.spares.pop(k, None) or deque()
    _POOL.spares[k] = q  # the most recent world last
    if len(q) < n:
        q.append(asyncio.create_task(_start_spare(env)))
    for other in list(_POOL.spares):
        while other != k and _POOL.spares[other] and pooled() > n:
            _retire(_POOL.spares[other].popleft())
        if not _POOL.spares[other]:
            del _POOL.spares[other]


def pooled() -> int:
    """How many spares the pool holds now (started or starting), all worlds."""
    return sum(len(q) for q in _POOL.spares.values())


def _retire(task: asyncio.Task[LocalState]) -> None:
    """End a spare taken out of the pool, in the background (`drain` waits for it)."""
    ending = asyncio.create_task(_end(task))
    _POOL.retiring.add(ending)
    ending.add_done_callback(_POOL.retiring.discard)


async def _end(task: asyncio.Task[LocalState]) -> None:
    task.cancel()  # one still starting stops itself (`_start_spare`)
    with contextlib.suppress(BaseException):
        await _stop(await task)


def adopt(env: LocalState, spare: LocalState) -> None:
    """`env` takes over the started `spare` (its sandbox, cgroups, gateway, relay, logs)."""
    for name in _RUNTIME:
        setattr(env, name, getattr(spare, name))
    spare._stopped = True  # it is env's now: env.stop() ends it
    _POOL.held.discard(spare)
    src = spare.trial_paths.trial_dir
    env._spare_dir = src
    linked = []
    for name in _LOG_FILES:
        with contextlib.suppress(OSError):  # another filesystem: copied at stop()
            os.link(src / name, env.trial_paths.trial_dir / name)
            linked.append(name)
    env._spare_linked = tuple(linked)


def release(env: LocalState) -> None:
    """At `env.stop()`: the logs of its spare that could not be linked appended to its trial dir's,
    and the spare dir removed."""
    src = env._spare_dir
    if src is None:  # `LocalEnvironment.stop()` calls it only for a trial that took a spare
        return
    for name in _LOG_FILES:
        if name in env._spare_linked or not (src / name).is_file():
            continue
        with contextlib.suppress(OSError), open(env.trial_paths.trial_dir / name, "ab") as out:
            out.write((src / name).read_bytes())
    shutil.rmtree(src, ignore_errors=True)
    env._spare_dir = None


def pooled_names() -> set[str]:
    """Sandbox names (`<pid>-<token>`: roots and cgroups) of the spares the pool holds."""
    return {s.root.name for s in _POOL.held if s.root is not None}


async def drain() -> None:
    """End every spare in the pool (of the running loop; others' are ended at once)."""
    if _POOL.loop is not None:
        await _bind_loop()
    tasks = [t for q in _POOL.spares.values() for t in q]
    _POOL.spares.clear()
    await asyncio.gather(*(_end(t) for t in tasks), *list(_POOL.retiring))
    _remove_empty_dirs()


def _remove_empty_dirs() -> None:
    for d in _POOL.dirs:
        with contextlib.suppress(OSError):  # not empty: a trial still holds its spare's dir
            d.rmdir()


async def _start_spare(env: LocalState) -> LocalState:
    from harbor.models.trial.paths import TrialPaths

    _POOL.dirs.add(pool_dir(env))
    d = pool_dir(env) / secrets.token_hex(4)
    paths = TrialPaths(trial_dir=d)
    paths.mkdir()
    mounts = [
        {**m, "source": str(d / "logs" / str(m["target"]).rsplit("/", 1)[-1])} for m in env._mounts
    ]
    kwargs = {
        k: v for k, v in env._ctor[1].items() if k != "logger"
    }  # the trial's, not the spare's
    spare = type(env)(
        **{**kwargs, "trial_paths": paths, "mounts": mounts, "session_id": f"spare-{d.name}"},
        **{**env._ctor_settings, "pool": 0},
    )
    _POOL.held.add(spare)
    # start() is never cancelled midway: its cgroups are made in a worker thread that a
    # cancellation does not stop, so a stop() meanwhile could remove them before they exist (a
    # cgroup left behind). Cancelled, this waits for the start to end, then stops the spare.
    starting = asyncio.ensure_future(spare.start(force_build=False))
    try:
        await asyncio.shield(starting)
    except BaseException:
        with contextlib.suppress(BaseException):
            await starting
        await _stop(spare)
        raise
    return spare


async def _stop(spare: LocalState) -> None:
    await spare.stop(delete=True)
    await asyncio.to_thread(shutil.rmtree, spare.trial_paths.trial_dir, True)
    _POOL.held.discard(spare)


async def _bind_loop() -> None:
    """The pool serves the running loop: spares of an earlier one are ended first, and this loop's
    are ended when it shuts down (`asyncio.run` closes every live async generator before it closes
    the loop, after cancelling the tasks: a spare still starting stops itself)."""
    loop = asyncio.get_running_loop()
    if _POOL.loop is not loop:
        _discard_all()
        _POOL.loop = loop
        _POOL.keeper = _until_loop_ends()
        await anext(_POOL.keeper)


async def _until_loop_ends() -> AsyncGenerator[None]:
    try:
        yield
    finally:
        if _POOL.loop is asyncio.get_running_loop():
            _POOL.loop = None  # no refill from here on: the loop is closing
            await drain()


def _discard_all() -> None:
    """End every pooled spare without an event loop (theirs is gone, or the process is exiting)."""
    tasks = [t for q in _POOL.spares.values() for t in q]
    _POOL.spares.clear()
    for t in tasks:
        if not t.done() or t.cancelled() or t.exception() is not None:
            continue  # a start cut short by its loop's end stopped its spare itself
        spare = t.result()
        with contextlib.suppress(Exception):
            if spare._cg is not None:
                spare._cg.kill()
            for proc in (spare._proc, spare._gateway):
                if proc is not None and proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(proc.pid, 0)
            if spare._cg is not None:
                spare._cg.remove()
        if spare.root is not None:
            shutil.rmtree(spare.root, ignore_errors=True)
        shutil.rmtree(spare.trial_paths.trial_dir, ignore_errors=True)
        _POOL.held.discard(spare)
    _remove_empty_dirs()


atexit.register(_discard_all)
