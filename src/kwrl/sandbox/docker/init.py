"""The entry point of kwrl's task images (docker and modal presets): start the world gateway, then
run the container's command.

    ENTRYPOINT ["<python>", "-I", "-m", "kwrl.sandbox.docker.init"]   CMD ["sleep", "infinity"]

As root it makes `/kwrl/run` (root's, mode 0755), binds the gateway's Unix socket there
(`GATEWAY_SOCKET`, mode 0666: the agent's side may connect, never replace it), forks the world
gateway, which drops to `SANDBOX_UID` (no supplementary groups, non-dumpable, the environment
`IMAGE_ENV` only, stdout and stderr to `/kwrl/run/gateway.log`, a FIFO the docker preset's host
copies into the trial dir up to a cap (a plain file where a runtime made none), no file over
`FSIZE_ENV` bytes where the runtime sets it: agent code runs in it through `code_execution`) and serves the world at
/filesystem and /.apps_data on that socket, and execs the command. The socket listens before the
fork, so a client that connects early waits for the gateway instead of failing. Where no runtime
fills /kwrl/run from the host (modal: no `POPULATE_ENV`), it makes the dirs the images' /tests
and /solution link to (`RUN_DIR`). Run as another
user, or again inside the same process tree (`KWRL_GATEWAY_STARTED` set), it only execs the
command.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import sys
from pathlib import Path

from kwrl.sandbox.base import SANDBOX_GATEWAY_SOCKET
from kwrl.tasks.taskdir import SANDBOX_UID

GATEWAY_SOCKET = SANDBOX_GATEWAY_SOCKET
"""The gateway's Unix socket inside the container."""
RUN_DIR = str(Path(GATEWAY_SOCKET).parent)
"""/kwrl/run: the docker preset binds a host dir there; /tests and /solution link into it."""
PYTHON = f"{sys.base_prefix}/bin/python{sys.version_info.major}.{sys.version_info.minor}"
"""The interpreter inside: the host's CPython build, copied at its own path."""
START_ARGV: tuple[str, ...] = (PYTHON, "-I", "-m", "kwrl.sandbox.docker.init")
"""The images' entry point; the container's command follows it as arguments."""
IMAGE_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "KWRL_PYTHON": PYTHON,
    "KWRL_GATEWAY": f"unix://{GATEWAY_SOCKET}",
    "HARBOR_TELEMETRY": "0",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "PYTHONDONTWRITEBYTECODE": "1",
}
"""Every command's environment inside (the local sandbox's `base_env`, with the gateway's URL)."""
GATEWAY_LOG = "gateway.log"
FSIZE_ENV = "KWRL_GATEWAY_FSIZE"
"""Set by a runtime to the largest file (bytes) the gateway and its children may write
(RLIMIT_FSIZE, SIGXFSZ ignored: a write past it fails): its log is a host file."""


def start_gateway() -> int:
    """Bind the socket, fork the gateway as `SANDBOX_UID`; the gateway's pid."""
    run = Path(GATEWAY_SOCKET).parent
    run.mkdir(parents=True, exist_ok=True)
    os.chown(run, 0, 0)
    run.chmod(0o755)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(GATEWAY_SOCKET)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(GATEWAY_SOCKET)
    os.chmod(GATEWAY_SOCKET, 0o666)
    sock.listen(128)
    log = os.open(run / GATEWAY_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            if fsize := int(os.environ.get(FSIZE_ENV) or 0):
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            os.setgroups([])
            os.setgid(SANDBOX_UID)
            os.setuid(SANDBOX_UID)
            os.chdir("/")
            os.environ.clear()
            os.environ.update(IMAGE_ENV)
            from kwrl.sandbox.gateway.launch import serve_fd

            serve_fd(sock.fileno())
        finally:
            os._exit(1)
    sock.close()
    os.close(log)
    return pid


def kwrl_command() -> None:
    """The image's `kwrl` command. `kwrl world ...` (what solve.sh and agent code call) loads the
    world stage alone: the image leaves out what other stages import (`DockerImageConfig.exclude`)."""
    if sys.argv[1:2] != ["world"]:
        # The command table by module name (it sits above every stage: no import arrow back up).
        import runpy

        runpy.run_module("kwrl.cli", run_name="__main__", alter_sys=True)
        return
    from rich.console import Console

    from kwrl.errors import KwrlError
    from kwrl.worlds.cli import app

    try:
        app(args=sys.argv[2:], prog_name="kwrl world")
    except KwrlError as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}", markup=True, highlight=False)
        sys.exit(2)


_STARTED = "KWRL_GATEWAY_STARTED"


POPULATE_ENV = "KWRL_POPULATE_WORLD"
"""Set (to 1) by a runtime that mounts empty, size-limited file systems at the world's roots:
the entry point first copies the initial copy into them (the docker preset bounds storage so)."""
INITIAL = "/kwrl/initial"


def populate_world() -> None:
    """Copy /kwrl/initial/world, then /kwrl/initial/overlay over it, into /filesystem and
    /.apps_data (empty mounts), owned by `SANDBOX_UID`."""
    from kwrl.tasks.layout import SUBSYSTEMS

    for name in SUBSYSTEMS:
        dest = Path("/") / name
        for layer in ("world", "overlay"):
            src = Path(INITIAL) / layer / name
            if src.is_dir():
                shutil.copytree(src, dest, symlinks=True, dirs_exist_ok=True)
        if name == ".apps_data":
            for app in ("mail", "calendar", "chat"):
                (dest / app).mkdir(exist_ok=True)
        dest.chmod(0o755)  # while root's: no CAP_FOWNER (`environment.CAPABILITIES`)
        for root, dirs, files in os.walk(dest):
            for entry in [root, *(os.path.join(root, n) for n in dirs + files)]:
                os.lchown(entry, SANDBOX_UID, SANDBOX_UID)


def main(argv: list[str]) -> None:
    # Once per container: an entry point that also runs as the command (a runtime that keeps the
    # image's ENTRYPOINT before its own command) starts no second gateway.
    if os.getuid() == 0 and os.environ.get(_STARTED) != "1":
        if os.environ.get(POPULATE_ENV) == "1":
            populate_world()
        start_gateway()
        if os.environ.get(POPULATE_ENV) != "1":  # not the docker preset: its host writes none
            for name in ("tests", "solution"):  # where the images' /tests and /solution lead
                (Path(RUN_DIR) / name).mkdir(exist_ok=True)
        os.environ[_STARTED] = "1"
    command = argv or ["sleep", "infinity"]
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
