"""The network zone: what a trial may reach beyond its own loopback.

It owns the verifier phase's egress allowlist and nothing else of the sandbox:
- `egress`: the policy (which hosts a task's verifier may reach; loopback, private, special-purpose
  and IPv6 forms that embed IPv4 addresses refused) and the host-side proxy that enforces it;
- `relay`: the small program inside the sandbox (`python -I -m kwrl.sandbox.network.relay`) that
  turns the sandbox's loopback port into the proxy's Unix socket; it imports only the standard
  library.
Agents never get network: the agent phase has loopback only and reaches the world through the
gateway zone (`kwrl.sandbox.gateway`).
"""
