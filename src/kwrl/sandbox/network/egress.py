"""The verifier phase's network: the judge, and nothing else on the host.

The verifier phase runs in a network namespace of its own (loopback only), as the agent phase does,
so nothing it runs reaches the host's loopback (other trials' world gateways, the policy server, a
listener an agent's file names) or the host's networks directly. What it may reach goes through
`EgressProxy`: an HTTP proxy the host runs on a Unix socket in the sandbox's run dir
(`SANDBOX_SOCKET` inside), which opens connections only to the destinations an `Allowlist` admits:

- the judge's endpoint (`KWRL_JUDGE`, or the default judge when only its key is set; with
  `KWRL_JUDGE_API_BASE` for a litellm judge: `kwrl.llm.spec.judge_endpoint`), and every
  `host[:port]` listed in `KWRL_JUDGE_EGRESS` (comma-separated: a provider kwrl does not know);
- under harbor's verifier network mode `allowlist`, the task's `allowed_hosts` (names, `*.`
  wildcards, addresses, networks; any port);
- under mode `public` (harbor's default), also any host whose every address is public
  (`is_public`): never a loopback, private, link-local, multicast or other special-purpose
  address (every block of IANA's IPv4 and IPv6 special-purpose registries, `SPECIAL_V4` and
  `SPECIAL_V6`, those Python's `is_global` admits included: 192.0.0.0/24, 192.88.99.0/24,
  5f00::/16, ...), and an IPv6 address that embeds an IPv4 one (IPv4-mapped, IPv4-compatible,
  SIIT, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4, Teredo: `embedded_ipv4`) is judged by
  the IPv4 address it embeds, so `[64:ff9b::7f00:1]` is 127.0.0.1 on a cluster with NAT64. The
  connection goes to the address checked, so a name cannot rebind to another.

Mode `no-network` starts no proxy. Inside, the verifier's command runs under this module as a
program (`python -I -m kwrl.sandbox.network.relay --port P --socket S -- CMD...`, `relay_argv`): it listens
on 127.0.0.1:P in the phase's namespace, relays every connection to the socket, and runs CMD with
HTTP_PROXY and HTTPS_PROXY (and the lower-case forms) naming that port and NO_PROXY empty, so the
judge's HTTP client (httpx, under litellm too) goes through the proxy. A request the allowlist
refuses gets `403 Forbidden` and is recorded (`EgressProxy.denied`, sandbox.json `egress`).

Each request through the proxy opens its own upstream connection (`Connection: close` for plain
HTTP, a tunnel for CONNECT), so every byte a connection carries goes to the one destination its
first request was admitted for. The relay (`kwrl.sandbox.network.relay`) imports only the
standard library, and not asyncio: it starts once per verifier command.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import ipaddress
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harbor.models.task.config import NetworkMode, NetworkPolicy

from kwrl.sandbox.gateway.forward import close_relays, pump
from kwrl.sandbox.network.relay import PROXY_PORT, SANDBOX_SOCKET

ENV_EGRESS = "KWRL_JUDGE_EGRESS"
"""Extra `host[:port]` destinations for the judge, comma-separated (port 443 when not written)."""

_HEAD_MAX = 64 * 1024
_RECORD_MAX = 100


def relay_argv(python: str, command: Sequence[str], port: int = PROXY_PORT) -> list[str]:
    """`command` run under the relay (inside the verifier phase's sandbox)."""
    return [python, "-I", "-m", "kwrl.sandbox.network.relay", "--port", str(port),
            "--socket", SANDBOX_SOCKET, "--", *command]  # fmt: skip


# ---------------------------------------------------------------------------------- allowlist


def _host_port(item: str, default_port: int = 443) -> tuple[str, int]:
    host, sep, port = item.strip().rpartition(":")
    if sep and port.isdigit() and host and not host.endswith(":"):
        return host.strip("[]"), int(port)
    return item.strip().strip("[]"), default_port


def judge_endpoints(env: Mapping[str, str]) -> set[tuple[str, int]]:
    """The (host, port) pairs the grader's judge needs, read from the verifier's env the way the
    grader reads its judge (`JudgeConfig.from_env`); empty when no judge is configured."""
    from kwrl.errors import ConfigError
    from kwrl.llm.spec import DEFAULT_JUDGE, judge_endpoint

    out = {_host_port(x) for x in env.get(ENV_EGRESS, "").split(",") if x.strip()}
    spec = env.get("KWRL_JUDGE") or (
        DEFAULT_JUDGE if env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY") else None
    )
    if spec:
        try:
            end = judge_endpoint(spec, env.get("KWRL_JUDGE_API_BASE") or None)
        except ConfigError:  # a malformed spec: the grader says so itself
            end = None
        if end is not None:
            out.add(end)
    return out


@dataclass
class Allowlist:
    """Where the verifier phase may connect (module doc)."""

    endpoints: set[tuple[str, int]] = field(default_factory=set)
    """Exact (host, port) destinations: the judge's."""
    hosts: list[str] = field(default_factory=list)
    """harbor `allowed_hosts` entries: names, `*.` wildcards, addresses and networks (any port)."""
    public: bool = False
    """Admit any host whose every address is global."""

    def _named(self, host: str, port: int) -> bool:
        if (host, port) in self.endpoints:
            return True
        name = host.lower().rstrip(".")
        return any(fnmatch.fnmatchcase(name, h.lower()) for h in self.hosts if not _network(h))

    def _addressed(self, addrs: list[str]) -> bool:
        nets = [n for n in map(_network, self.hosts) if n is not None]
        ips = [ipaddress.ip_address(a.partition("%")[0]) for a in addrs]

        def listed(ip: IPAddress) -> bool:  # itself, or every IPv4 address it embeds
            embedded = embedded_ipv4(ip)
            if any(ip in n for n in nets):
                return True
            return bool(embedded) and all(any(a in n for n in nets) for a in embedded)

        if nets and all(listed(ip) for ip in ips):
            return True
        return self.public and all(is_public(ip) for ip in ips)

    def follow(self, policy: NetworkPolicy, env: Mapping[str, str]) -> bool:
        """Admit what a verifier command may reach now: the judge its `env` names and harbor's
        network `policy` for the phase (it may change between commands); False under
        `no-network`, where the command gets no way out at all."""
        if policy.network_mode == NetworkMode.NO_NETWORK:
            return False
        self.endpoints = judge_endpoints(env)
        self.hosts = list(getattr(policy, "allowed_hosts", None) or [])
        self.public = policy.network_mode == NetworkMode.PUBLIC
        return True

    async def destination(self, host: str, port: int) -> tuple[str, int] | None:
        """Where to connect for `host:port`, or None when it is not allowed."""
        if self._named(host, port):
            return host, port
        if not (self.public or any(_network(h) for h in self.hosts)):
            return None
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port, type=socket.SOCK_STREAM
            )
        except OSError:
            return None
        addrs = [str(i[4][0]) for i in infos]
        if not addrs or not self._addressed(addrs):
            return None
        return addrs[0], port


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _nets(*cidrs: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


SPECIAL_V4 = _nets(
    "0.0.0.0/8",  # "this network"
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16",  # private
    "100.64.0.0/10",  # shared address space (carrier-grade NAT)
    "127.0.0.0/8",  # loopback
    "169.254.0.0/16",  # link-local (cloud metadata: 169.254.169.254)
    "192.0.0.0/24",  # IETF protocol assignments (192.0.0.8 dummy, 192.0.0.170 NAT64 discovery, ...)
    "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24",  # documentation
    "192.31.196.0/24", "192.175.48.0/24",  # AS112
    "192.52.193.0/24",  # AMT
    "192.88.99.0/24",  # 6to4 relay anycast (deprecated): relays into an embedded address
    "198.18.0.0/15",  # benchmarking
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, 255.255.255.255 limited broadcast
)  # fmt: skip
"""Every block of IANA's IPv4 Special-Purpose Address Registry (globally reachable or not: no judge
sits in one), and multicast."""

SPECIAL_V6 = _nets(
    "::/8",  # unspecified, loopback, IPv4-compatible and -translated (these judged by the IPv4)
    "64:ff9b::/96", "64:ff9b:1::/48",  # NAT64 (judged by the IPv4 they embed)
    "100::/64", "100:0:0:1::/64",  # discard-only, dummy prefix
    "2001::/23",  # IETF protocol assignments: Teredo (judged by its IPv4s), ORCHID, AMT, AS112...
    "2001:db8::/32", "3fff::/20",  # documentation
    "2002::/16",  # 6to4 (judged by the IPv4 it embeds)
    "2620:4f:8000::/48",  # AS112 direct delegation
    "5f00::/16",  # SRv6 SIDs
    "fc00::/7",  # unique local
    "fe80::/10", "fec0::/10",  # link-local, site-local (deprecated)
    "ff00::/8",  # multicast
)  # fmt: skip
"""Every block of IANA's IPv6 Special-Purpose Address Registry, and the rest of what is not
global unicast."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def _rfc6052(ip: ipaddress.IPv6Address, prefix_len: int) -> ipaddress.IPv4Address:
    """The IPv4 address in `ip` as RFC 6052 places it after a prefix of `prefix_len` bits (bits
    64-71, the "u" octet, skipped below /96)."""
    b = ip.packed
    if prefix_len == 96:
        return ipaddress.IPv4Address(b[12:])
    b = b[:8] + b[9:]
    return ipaddress.IPv4Address(b[prefix_len // 8 : prefix_len // 8 + 4])


def embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address stands for (empty for one that embeds none): IPv4-mapped
    (::ffff:a.b.c.d) and -translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
    (64:ff9b::a.b.c.d; 64:ff9b:1::/48 under every prefix length RFC 6052 allows there), 6to4
    (2002:AABB:CCDD::) and Teredo (its server and its client)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    high = int(ip) >> 32
    if high in (0, 0xFFFF0000) or ip in _NAT64:  # compatible, translated, NAT64 /96
        return [_rfc6052(ip, 96)]
    if ip in _NAT64_LOCAL:
        return [_rfc6052(ip, n) for n in (48, 56, 64, 96)]
    return []


def is_public(ip: IPAddress) -> bool:
    """`ip` is global unicast outside every special-purpose block (`SPECIAL_V4`, `SPECIAL_V6`);
    an IPv6 address that embeds IPv4 is public when every IPv4 address it embeds is."""
    embedded = embedded_ipv4(ip)
    if embedded:
        return all(is_public(a) for a in embedded)
    special = SPECIAL_V4 if isinstance(ip, ipaddress.IPv4Address) else SPECIAL_V6
    return ip.is_global and not any(ip in n for n in special)


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


# ------------------------------------------------------------------------------ host side


def _origin_form(head: bytes) -> tuple[str, str, int, bytes] | None:
    """(method, host, port, head to send upstream) of a proxy request head, or None if malformed.
    CONNECT keeps no head; a plain request goes out in origin form with `Connection: close`."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].decode("ascii").split(" ")
    except (UnicodeDecodeError, ValueError):
        return None
    if method == "CONNECT":
        host, port = _host_port(target)
        return method, host, port, b""
    if not target.startswith("http://"):
        return None
    netloc, _, path = target[len("http://") :].partition("/")
    host, port = _host_port(netloc.rpartition("@")[2], 80)
    keep = [
        ln for ln in lines[1:]
        if ln and not ln.lower().startswith((b"connection:", b"proxy-connection:", b"proxy-authorization:"))
    ]  # fmt: skip
    first = f"{method} /{path} {version}".encode("ascii")
    return method, host, port, b"\r\n".join([first, *keep, b"Connection: close", b"", b""])


class EgressProxy:
    """The host side: an HTTP proxy on a Unix socket that connects only where `allow` admits."""

    def __init__(self, socket_path: Path, allow: Allowlist) -> None:
        self.socket_path = Path(socket_path)
        self.allow = allow
        self.connected: list[str] = []
        """Destinations connected to (the first `_RECORD_MAX`)."""
        self.denied: list[str] = []
        """Destinations refused (the first `_RECORD_MAX`)."""
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._handle, path=str(self.socket_path))
        # The verifier may run as a user the sandbox's exec_user names.
        os.chmod(self.socket_path, 0o666)

    def report(self) -> dict[str, list[str]]:
        return {"connected": self.connected, "denied": self.denied}

    @staticmethod
    def _record(into: list[str], item: str) -> None:
        if len(into) < _RECORD_MAX and item not in into:
            into.append(item)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            parsed = _origin_form(head[:_HEAD_MAX])
            if parsed is None:
                writer.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                return
            method, host, port, upstream_head = parsed
            dest = await self.allow.destination(host, port)
            if dest is None:
                self._record(self.denied, f"{host}:{port}")
                body = f"kwrl egress: {host}:{port} is not reachable from the verifier phase\n"
                writer.write(
                    b"HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
                )
                return
            try:
                up_r, up_w = await asyncio.open_connection(*dest)
            except OSError:
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
                return
            self._record(self.connected, f"{host}:{port}")
            try:
                if method == "CONNECT":
                    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                else:
                    up_w.write(upstream_head)
                await asyncio.gather(pump(reader, up_w), pump(up_r, writer))
            finally:
                up_w.close()
        except asyncio.CancelledError:
            pass  # close() cancels relays
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()
            self._relays.discard(task)

    async def close(self) -> None:
        await close_relays(self._server, self._relays)
        self._server = None
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
