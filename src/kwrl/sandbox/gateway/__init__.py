"""The gateway zone: the world's MCP tool server running inside a trial's sandbox, and the way in.

It owns the process that serves a task's world apps to the agent and how the host reaches it:
- `launch`: starting the gateway in a running sandbox (`start_gateway`: a cold
  `python -m kwrl.sandbox.gateway.launch FD`, or a fork of the warm zygote), its ready line and
  its log, capped through a pipe;
- `zygote`: the per-host-process warm parent that has imported the gateway once and forks it into
  a sandbox's namespaces (`python -m kwrl.sandbox.gateway.zygote SOCKET`);
- `forward`: the host-side loopback TCP listener relaying the agent's HTTP to the gateway's Unix
  socket (`UnixForwarder`).
Starters take a `kwrl.sandbox.base.GatewayLaunch` (the sandbox's coordinates), never an
environment object, so every environment shares them.
"""
