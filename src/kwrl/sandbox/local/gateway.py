"""The world gateway's side of the local sandbox: started inside, relayed to `mcp_url`, watched.

The host makes the gateway's listening socket at `<root>/run/gateway.sock` (`/kwrl/run` is
read-only inside, so agent code cannot replace it with a link to another socket) and hands it
to `kwrl.sandbox.gateway.start_gateway` with a `GatewayLaunch`: the sandbox init's pid, the
trial's `sandbox` cgroups, the argv that enters the sandbox, the log. The gateway runs in the
sandbox's namespaces without capabilities; a `UnixForwarder` relays `http://127.0.0.1:PORT/mcp/`
on the host to that socket by its host path. `gateway_fate()` tells a gateway that agent code
ended from one kwrl ended.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from kwrl.sandbox.base import GatewayLaunch
from kwrl.sandbox.gateway.forward import UnixForwarder
from kwrl.sandbox.gateway.launch import proc_state, start_gateway
from kwrl.sandbox.local.state import LocalState


class WorldGateway(LocalState):
    """Start, relay and watch the sandbox's world gateway (module docstring)."""

    def gateway_fate(self) -> str | None:
        """Why the world gateway stopped serving in the agent phase, or None while it serves (or
        before it started, or once kwrl itself ended it for the verifier phase or stop()).

        Inside the sandbox only agent code shares the gateway's pid namespace and user, so a
        gateway that ended (gone, a zombie, or on its way out: its connections close before it
        turns zombie, see `proc_state`) or was stopped (SIGSTOP) there was ended by the agent's own
        commands (a kill by the trial's memory limit too: agent code filled the memory).
        `KwrlAgent` asks this when its MCP session fails or a call times out, and ends the run as
        `tools_lost`: the trial is graded on the world as it stands, not masked as an
        infrastructure error.
        """
        ref = self._gateway_ref
        if ref is None or self._stopped or self._verifier_phase:
            return None
        state = proc_state(ref)
        if state is None or state in "ZX":
            return "the world gateway ended in the agent phase: agent code killed it"
        if state in "Tt":
            return "the world gateway was stopped in the agent phase: agent code sent it SIGSTOP"
        return None

    def _launch(self) -> GatewayLaunch:
        """What the gateway's starter needs of this sandbox (nothing else of the environment)."""
        cg = self._cg
        return GatewayLaunch(
            mode=self.settings.gateway_mode,
            ns_pid=self._init_pid,
            cgroup_procs=tuple(str(f) for f in cg.procs_files("sandbox")) if cg else (),
            enter_argv=tuple(self.gateway_argv()),
            log=self.trial_paths.trial_dir / "gateway.log",
            timeout_s=self.settings.gateway_timeout_s,
        )

    async def _start_gateway(self) -> None:
        assert self.root is not None and self.gateway_socket is not None
        assert self._listener is not None
        try:
            self._gateway, self._drain, self._gateway_ref = await start_gateway(
                self._launch(), self._listener.fileno()
            )
        finally:
            self._close_listener()  # the gateway holds it now; a dead gateway refuses connections
        # The relay connects by a host path under the sandbox root: /kwrl/run is read-only inside,
        # so agent code cannot replace the socket with a link to another one.
        self._forwarder = UnixForwarder(self.gateway_socket)
        port = await self._forwarder.start()
        self.mcp_url = f"http://127.0.0.1:{port}/mcp/"

    def _close_listener(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def gateway_argv(self) -> list[str]:
        """argv that runs a command in the sandbox's namespaces but in the `sandbox` cgroup."""
        return [*self._join("sandbox"), *self._nproc(), *self._enter()]


def listen(path: Path) -> socket.socket:
    """A listening Unix socket at `path` (made here, on the host, and handed to the gateway)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o666)  # inside, any user may connect (the dir is the sandbox's only)
    sock.listen(128)
    return sock
