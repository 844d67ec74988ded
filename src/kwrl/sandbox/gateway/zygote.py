"""A warm process that forks world gateways straight into sandboxes.

Importing the gateway (fastmcp, uvicorn, the office libraries) costs seconds; forking a process
that has already imported it costs milliseconds, and the child shares those pages copy-on-write.
One zygote runs per host process (`python -m kwrl.sandbox.gateway.zygote SOCKET`, a child that dies with
its parent). For each request it forks; the child

1. joins the trial's `sandbox` cgroups (host paths, before entering);
2. `setns` into the sandbox init's ipc, uts, net, pid and mount namespaces, then chroots to the
   sandbox root; forks again so the server is inside the sandbox's pid namespace (it dies with it);
3. drops every capability (bounding set, permitted, effective), sets no_new_privs, so the
   gateway and the code it runs (`code_execution`) have the same rights as agent commands, and
   makes itself non-dumpable, so agent code cannot read its memory or environ through /proc;
4. serves the gateway app on the listening socket the host made at `/kwrl/run/gateway.sock`;
   its ready line goes to a pipe, its stderr to another, which the host copies into the trial's
   gateway.log up to a cap (`kwrl.sandbox.outputs.pump_log`). The three fds come with the request
   (SCM_RIGHTS); the gateway logs each record on one short line (`serve_app`).

The zygote starts from a minimal environment (`base_env`), never the host's, so no API key is in
its memory or in what its children inherit.

The request protocol is one JSON object per connection, with three fds attached (the ready pipe,
the listening socket, the log pipe); the answer is `{"pid": <gateway pid on the host>}` or `{"error": "..."}`.
A malformed request gets an error answer; the zygote goes on serving.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import gc
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from kwrl.errors import SandboxError
from kwrl.sandbox.base import GATEWAY_READY, SANDBOX_GATEWAY_SOCKET, GatewayLaunch, base_env
from kwrl.sandbox.outputs import read_pipe

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_CAP_V3 = 0x20080522
_NAMESPACES = ("ipc", "uts", "net", "pid", "mnt")
_REQUEST_TIMEOUT_S = 5.0


# --------------------------------------------------------------------------- zygote side


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    for cap in range(64):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(_CAP_V3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS) failed")


LOG_LINE_MAX = 1000
"""Characters of one gateway log record (its message and its exception's), on one line."""


class BriefRecords(logging.Filter):
    """Every record on one line of at most `LOG_LINE_MAX` characters, its traceback reduced to the
    exception's type and message: a tool error's message holds the agent's argument, and fastmcp
    printed its traceback whole (a 1 MiB path made 1.4 MB of gateway.log per call)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            text += f" [{type(exc).__name__}: {str(exc)[: LOG_LINE_MAX * 2]}]"
        text = text.replace("\n", "\\n")
        if len(text) > LOG_LINE_MAX:
            text = f"{text[:LOG_LINE_MAX]}... [{len(text) - LOG_LINE_MAX} characters cut]"
        record.msg, record.args = text, None
        record.exc_info = record.exc_text = record.stack_info = None
        return True


def log_briefly() -> None:
    """Every handler this process has (uvicorn's, the root's) takes `BriefRecords`; fastmcp's own
    (rich, a traceback handler) are dropped for the root's."""
    fastmcp = logging.getLogger("fastmcp")
    fastmcp.handlers.clear()
    fastmcp.propagate = True
    brief = BriefRecords()
    loggers = [logging.getLogger(), *logging.root.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", ()):
            handler.addFilter(brief)


def serve_app(app: Any, sock: socket.socket) -> None:
    """Serve a gateway app on a listening socket; print the gateway's ready line once serving."""
    import uvicorn

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(message)s"
    )
    uds = SANDBOX_GATEWAY_SOCKET
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    log_briefly()  # after uvicorn's Config, which installs its handlers

    async def run() -> None:
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                await task
                raise SandboxError("gateway stopped before it was ready")
            await asyncio.sleep(0.002)
        print(f"kwrl-gateway ready unix://{uds}", flush=True)
        await task

    asyncio.run(run())


def _child(req: _Request, fds: list[int], report_fd: int, libc: ctypes.CDLL, app: Any) -> None:
    """Runs in the forked child: enter the sandbox, fork the server, report its pid, exit.
    `fds`: the ready pipe, the listening socket, the log pipe."""
    out_fd, listen_fd, log_fd = fds
    os.setsid()
    for f in req["cgroup_procs"]:
        Path(f).write_text(str(os.getpid()))
    ns_pid = int(req["ns_pid"])
    ns_fds = [os.open(f"/proc/{ns_pid}/ns/{ns}", os.O_RDONLY) for ns in _NAMESPACES]
    root_fd = os.open(f"/proc/{ns_pid}/root", os.O_RDONLY | os.O_DIRECTORY)
    for fd in ns_fds:
        os.setns(fd, 0)
        os.close(fd)
    os.fchdir(root_fd)
    os.chroot(".")
    os.chdir("/")
    os.close(root_fd)
    pid = os.fork()
    if pid:
        os.write(report_fd, str(pid).encode())
        os._exit(0)
    # the gateway, inside the sandbox's pid namespace
    os.close(report_fd)
    os.dup2(out_fd, 1)
    os.dup2(log_fd, 2)
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(listen_fd, 3)
    os.closerange(4, 1 << 16)
    _drop_capabilities(libc)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.environ.clear()
    os.environ.update(base_env(None))
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # The zygote's objects stay frozen: a full collection here would write the GC header of every
    # one of them, copying nearly all the pages this process shares with the zygote.
    serve_app(app, socket.socket(fileno=3))
    os._exit(0)


class _Request(dict[str, Any]):
    """A parsed, checked zygote request."""


def _parse_request(msg: bytes, fds: list[int]) -> _Request:
    """The request in `msg`, checked; ValueError on anything else (the zygote answers an error)."""
    if len(fds) != 3:
        raise ValueError(f"expected 3 fds (ready pipe, listening socket, log pipe), got {len(fds)}")
    req = json.loads(msg)
    if not isinstance(req, dict):
        raise ValueError("request is not a JSON object")
    ns_pid, procs = req.get("ns_pid"), req.get("cgroup_procs")
    if not isinstance(ns_pid, int) or isinstance(ns_pid, bool) or ns_pid <= 1:
        raise ValueError("ns_pid: expected a pid")
    if not isinstance(procs, list) or not all(
        isinstance(f, str) and f.startswith("/sys/fs/cgroup/") and f.endswith("/cgroup.procs")
        for f in procs
    ):
        raise ValueError("cgroup_procs: expected cgroup.procs paths under /sys/fs/cgroup")
    return _Request(req)


def _prebuilt_app() -> Any:
    """Import everything a gateway touches and build it once for the sandbox roots.

    Every sandbox has its world at the same paths (/filesystem, /.apps_data) and the apps read
    their data lazily, so one app built here serves every fork: building costs seconds.
    """
    import importlib

    import uvicorn

    import kwrl.worlds.cli  # noqa: F401
    from kwrl.tasks.layout import WorldRoots
    from kwrl.worlds.apps import APPS, preload
    from kwrl.worlds.gateway import build_app

    for module in APPS.values():
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(module)
    preload()  # the document libraries the apps import lazily, once here rather than per trial
    app = build_app(WorldRoots.sandbox_default())
    uvicorn.Config(app, log_level="warning", lifespan="on").load()
    server = app.state._state.get("fastmcp_server")
    if server is not None:  # warm the tool listing (schemas) once, in the zygote
        asyncio.run(server.list_tools())
    return app


_IMMORTAL_REFCNT = 0xFFFFFFFF
"""CPython 3.12's immortal reference count on 64-bit builds (PEP 683, `_Py_IMMORTAL_REFCNT`):
`Py_INCREF` and `Py_DECREF` leave an object whose count reads negative as int32 alone."""


def immortalize() -> int:
    """Make the zygote's objects immortal (PEP 683) before it forks; returns how many.

    A fork shares the zygote's pages until it writes one, and CPython writes an object's reference
    count each time code merely uses it: a gateway copied ~7 MB of the zygote's heap starting up
    and ~6 MB more serving its first MCP session, mostly pages it only read. An immortal object's
    count is never written, so those pages stay shared (benchmarks/sandbox.py: the gateway's
    private memory). Every object the collector tracks and what each refers to directly (strings,
    numbers, code) get the immortal count; they are never freed, which a zygote's long-lived heap
    (modules, the built app) never is anyway. Only on 64-bit CPython 3.12, where the layout is
    known (not a debug build, whose objects start with other fields); elsewhere it does nothing.
    """
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 12):
        return 0
    if sys.maxsize <= 2**32 or hasattr(sys, "gettotalrefcount"):  # 32-bit, or a debug build
        return 0
    tracked = gc.get_objects()
    seen: set[int] = set()
    for obj in [*tracked, *(r for o in tracked for r in gc.get_referents(o))]:
        if id(obj) not in seen:
            seen.add(id(obj))
            ctypes.c_ssize_t.from_address(id(obj)).value = _IMMORTAL_REFCNT
    return len(seen)


def serve_zygote(path: str) -> None:
    """Zygote main loop: one request per connection, handled in order."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    app = _prebuilt_app()
    gc.collect()
    immortalize()
    gc.freeze()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    srv.bind(path)
    os.chmod(path, 0o600)
    srv.listen(64)
    print("kwrl-zygote ready", flush=True)
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.settimeout(_REQUEST_TIMEOUT_S)
            fds: list[int] = []
            try:
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
                answer = _handle(srv, _parse_request(msg, fds), fds, libc, app)
            except (OSError, ValueError) as e:  # a malformed request must not end the zygote
                answer = {"error": f"bad request: {e}"}
            finally:
                for fd in fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps(answer).encode())


def _handle(
    srv: socket.socket, req: _Request, fds: list[int], libc: ctypes.CDLL, app: Any
) -> dict[str, Any]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            srv.close()
            os.close(r)
            _child(req, fds, w, libc, app)
        except BaseException as e:  # the child must never return into the loop
            with contextlib.suppress(Exception):
                os.write(2, f"kwrl-zygote child: {e!r}\n".encode())
        finally:
            os._exit(1)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as rf:
        got = rf.read().decode()
    return {"pid": int(got)} if got.isdigit() else {"error": f"fork failed (status {status})"}


# --------------------------------------------------------------------------- requester side


class _Zygote:
    """The per-process zygote: a plain `Popen` child (not tied to any event loop), killed at exit."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.path = ""
        self.lock = threading.Lock()

    def ensure(self, timeout_s: float) -> str:
        with self.lock:
            if self.proc is not None and self.proc.poll() is None:
                return self.path
            base = Path(tempfile.gettempdir()) / "kwrl-sandboxes"
            _sweep_zygote_dirs(base)
            d = base / f"{os.getpid()}-zygote"
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.path = str(d / "zygote.sock")
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-m", "kwrl.sandbox.gateway.zygote", self.path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                env=base_env(None),  # never the host's: its keys would be in every gateway
                cwd="/",
            )
            atexit.register(self.close)
            assert self.proc.stdout is not None
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            line = self.proc.stdout.readline() if ready else b""
            if not line.startswith(b"kwrl-zygote ready"):
                self.close()
                raise SandboxError("gateway zygote failed to start within its timeout")
            return self.path

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.path:
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def _sweep_zygote_dirs(base: Path) -> None:
    """Remove socket dirs of zygotes whose owner process died without cleaning up."""
    from kwrl.sandbox.cgroups import owner_alive

    for d in base.glob("*-zygote") if base.is_dir() else []:
        if not owner_alive(d.name):
            shutil.rmtree(d, ignore_errors=True)


_ZYGOTE = _Zygote()


def _request(path: str, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        socket.send_fds(s, [json.dumps(req).encode()], fds)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return json.loads(data)


async def fork_gateway(
    launch: GatewayLaunch, listen_fd: int, log_fd: int
) -> tuple[int, asyncio.Task[None]]:
    """Fork a gateway serving `listen_fd` into `launch`'s sandbox, its stderr the pipe `log_fd`;
    returns (host pid, stdout drain task) once ready."""
    timeout = launch.timeout_s
    path = await asyncio.to_thread(_ZYGOTE.ensure, timeout)
    r, w = os.pipe()
    req = {"ns_pid": launch.ns_pid, "cgroup_procs": list(launch.cgroup_procs)}
    try:
        answer = await asyncio.to_thread(_request, path, req, [w, listen_fd, log_fd])
    finally:
        os.close(w)
    if "pid" not in answer:
        os.close(r)
        raise SandboxError(f"gateway zygote: {answer.get('error')}")
    reader, transport = await read_pipe(r)
    try:
        async with asyncio.timeout(timeout):
            while True:
                line = await reader.readline()
                if not line:
                    raise SandboxError("world gateway exited before it was ready")
                if line.startswith(GATEWAY_READY):
                    break
    except TimeoutError as e:
        transport.close()
        raise SandboxError(f"world gateway not ready after {timeout} s") from e
    except BaseException:
        transport.close()
        raise

    async def drain() -> None:
        try:
            while await reader.read(65536):
                pass
        finally:
            transport.close()

    return answer["pid"], asyncio.create_task(drain())


if __name__ == "__main__":
    serve_zygote(sys.argv[1])
