"""`kwrl.sandbox.network.egress`: which destinations the verifier phase may reach, and the proxy's
handling of requests (a real proxy on a Unix socket, real loopback servers)."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

import pytest

from kwrl.llm.spec import judge_endpoint
from kwrl.sandbox.conformance.testing import loopback_listener
from kwrl.sandbox.network.egress import (
    SPECIAL_V4,
    SPECIAL_V6,
    Allowlist,
    EgressProxy,
    embedded_ipv4,
    is_public,
    judge_endpoints,
)

HOSTILE_V4 = (
    "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1",
    "169.254.169.254", "100.64.0.1", "0.0.0.0", "192.0.0.8", "192.0.0.9", "192.0.0.170",
    "192.0.2.1", "192.88.99.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1",
    "239.255.255.250", "240.0.0.1", "255.255.255.255",
)  # fmt: skip
"""Loopback, private, link-local, metadata and other special-purpose IPv4 addresses."""
GLOBAL_V4 = ("8.8.8.8", "1.1.1.1", "93.184.216.34", "151.101.1.69")
TEREDO_SERVER = "65.54.227.120"


def _teredo(server: str, client: str) -> str:
    s, c = (int(ipaddress.IPv4Address(a)) for a in (server, client))
    return str(ipaddress.IPv6Address((0x20010000 << 96) | (s << 64) | (0x8000 << 48)
                                     | ((0x63BF ^ 0xFFFF) << 32) | (c ^ 0xFFFFFFFF)))  # fmt: skip


def _nat64_local(v4: str, prefix_len: int) -> str:
    """`v4` in 64:ff9b:1::/48 as RFC 6052 places it after `prefix_len` bits."""
    b = bytearray(ipaddress.IPv6Address("64:ff9b:1::").packed)
    a = ipaddress.IPv4Address(v4).packed
    if prefix_len == 96:
        b[12:] = a
    else:
        rest = bytearray(b[:8] + b[9:])
        rest[prefix_len // 8 : prefix_len // 8 + 4] = a
        b = rest[:8] + b"\0" + rest[8:15]
    return str(ipaddress.IPv6Address(bytes(b)))


def _embeddings(v4: str) -> list[str]:
    """Every IPv6 spelling of `v4` the allowlist must judge by `v4`."""
    n = int(ipaddress.IPv4Address(v4))
    hi, lo = n >> 16, n & 0xFFFF
    return [
        f"::ffff:{v4}", f"::ffff:{hi:x}:{lo:x}", f"::{v4}", f"::ffff:0:{v4}", f"64:ff9b::{v4}",
        f"64:ff9b::{hi:x}:{lo:x}", f"2002:{hi:x}:{lo:x}::", f"2002:{hi:x}:{lo:x}:1::5",
        _teredo(TEREDO_SERVER, v4), _teredo(v4, "8.8.8.8"),
        *(_nat64_local(v4, n) for n in (48, 56, 64, 96)),
    ]  # fmt: skip


HOSTILE_V6 = (
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "ff02::1", "100::1",
    "2001:db8::1", "2001:2::1", "5f00::1", "3fff::1", "2001:10::1",
)  # fmt: skip
GLOBAL_V6 = ("2606:4700:4700::1111", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e")


def test_the_judge_endpoint_comes_from_the_env_the_grader_reads() -> None:
    assert judge_endpoints({"KWRL_JUDGE": "http://127.0.0.1:8000/v1#j"}) == {("127.0.0.1", 8000)}
    assert judge_endpoints({"KWRL_JUDGE": "https://judge.example/v1"}) == {("judge.example", 443)}
    # litellm: the provider's host, or api_base when set; the default judge when only its key is.
    assert judge_endpoints({"KWRL_JUDGE": "litellm:openai/gpt-4o"}) == {("api.openai.com", 443)}
    assert judge_endpoints(
        {"KWRL_JUDGE": "litellm:hosted_vllm/m", "KWRL_JUDGE_API_BASE": "http://10.1.2.3:9000/v1"}
    ) == {("10.1.2.3", 9000)}
    assert judge_endpoints({"GEMINI_API_KEY": "k"}) == {("generativelanguage.googleapis.com", 443)}
    assert judge_endpoints({"KWRL_JUDGE_EGRESS": "a.example, b.example:8443"}) == {
        ("a.example", 443),
        ("b.example", 8443),
    }
    assert judge_endpoints({}) == set()
    assert judge_endpoint("litellm:nosuchprovider/m") is None


async def test_the_allowlist_admits_the_judge_globals_and_listed_hosts_only() -> None:
    judge = Allowlist(endpoints={("127.0.0.1", 8000)})
    assert await judge.destination("127.0.0.1", 8000) == ("127.0.0.1", 8000)
    assert await judge.destination("127.0.0.1", 8001) is None
    assert await judge.destination("8.8.8.8", 443) is None  # not public: the judge only

    public = Allowlist(public=True)
    assert await public.destination("8.8.8.8", 443) == ("8.8.8.8", 443)
    for special in ("127.0.0.1", "10.0.0.1", "192.168.1.1", "169.254.169.254", "::1", "0.0.0.0"):
        assert await public.destination(special, 80) is None, special
    assert await public.destination("localhost", 80) is None  # names resolve, then get checked

    listed = Allowlist(hosts=["*.example.org", "10.9.0.0/16"])
    assert await listed.destination("api.example.org", 443) == ("api.example.org", 443)
    assert await listed.destination("example.com", 443) is None
    assert await listed.destination("10.9.3.4", 22) == ("10.9.3.4", 22)
    assert await listed.destination("10.8.3.4", 22) is None


@pytest.mark.parametrize(
    "address", [*HOSTILE_V4, *HOSTILE_V6, *(e for v4 in HOSTILE_V4 for e in _embeddings(v4))]
)
def test_special_addresses_and_every_ipv6_form_of_one_are_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address)), address


@pytest.mark.parametrize(
    "address", [*GLOBAL_V4, *GLOBAL_V6, *(e for v4 in GLOBAL_V4 for e in _embeddings(v4)[:-4])]
)
def test_honest_global_addresses_and_their_embeddings_are_public(address: str) -> None:
    assert is_public(ipaddress.ip_address(address)), address


def test_each_special_purpose_block_is_refused_where_is_global_admits_it() -> None:
    """Python's `is_global` (3.12) calls some of these global; the registries' tables refuse
    every block, each checked at its first and last address."""
    for net in (*SPECIAL_V4, *SPECIAL_V6):
        for ip in (net[0], net[-1]):
            assert not is_public(ip) or embedded_ipv4(ip), (net, ip)
    admitted = [a for a in ("192.0.0.8", "192.88.99.1", "224.0.0.1", "5f00::1", "fec0::1",
                            "64:ff9b::7f00:1", "2002:7f00:1::", "::7f00:1")
                if ipaddress.ip_address(a).is_global]  # fmt: skip
    assert admitted, "is_global no longer admits any of these: the table's reason has gone"


def test_the_embedded_ipv4_is_read_by_the_ipaddress_modules_own_properties() -> None:
    v4 = ipaddress.IPv4Address("127.0.0.1")
    for spelling in ("::ffff:127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1", "::127.0.0.1"):
        assert embedded_ipv4(ipaddress.ip_address(spelling)) == [v4], spelling
    assert embedded_ipv4(ipaddress.ip_address(_teredo(TEREDO_SERVER, "127.0.0.1"))) == [
        ipaddress.IPv4Address(TEREDO_SERVER),
        v4,
    ]
    assert v4 in embedded_ipv4(ipaddress.ip_address(_nat64_local("127.0.0.1", 56)))
    assert embedded_ipv4(ipaddress.ip_address("2606:4700:4700::1111")) == []
    assert embedded_ipv4(ipaddress.ip_address("8.8.8.8")) == []


HOSTILE_SPELLINGS = (
    "localhost", "127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.1", "127.1",
    "017700000001", "[::1]", "::1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
    "[64:ff9b::7f00:1]", "[64:ff9b::127.0.0.1]", "[2002:7f00:1::]", "[64:ff9b::a9fe:a9fe]",
    "[::ffff:169.254.169.254]", "169.254.169.254", "0xa9fea9fe", "2852039166", "0251.0376.0251.0376",
    "[fe80::1]", "[fd00::1]", "10.1", "0xa.1", "192.0.0.8", "0", "0.0.0.0", "[::]",
)  # fmt: skip
"""How a host may be written in a proxy request (decimal, octal and hex IPv4 are numbers the
resolver takes as addresses; brackets as in a URL's or CONNECT's host)."""


async def test_every_hostile_spelling_of_a_host_is_refused_under_public() -> None:
    public = Allowlist(public=True)
    admitted = [h for h in HOSTILE_SPELLINGS if await public.destination(h.strip("[]"), 80)]
    assert admitted == []
    assert await public.destination("8.8.8.8", 443) == ("8.8.8.8", 443)
    nat64 = await public.destination("64:ff9b::8.8.8.8", 443)
    assert nat64 and ipaddress.ip_address(nat64[0]) == ipaddress.ip_address("64:ff9b::808:808")
    # a listed network admits the IPv4 address in any spelling of it, and nothing else
    listed = Allowlist(hosts=["10.9.0.0/16"])
    mapped = await listed.destination("::ffff:10.9.3.4", 22)
    assert mapped and embedded_ipv4(ipaddress.ip_address(mapped[0])) == [
        ipaddress.IPv4Address("10.9.3.4")
    ]
    assert await listed.destination("64:ff9b::10.8.3.4", 22) is None


async def _ask(sock: Path, request: bytes) -> bytes:
    reader, writer = await asyncio.open_unix_connection(str(sock))
    writer.write(request)
    await writer.drain()
    data = await reader.read()
    writer.close()
    return data


async def test_the_proxy_forwards_to_admitted_hosts_and_refuses_the_rest(tmp_path: Path) -> None:
    with loopback_listener() as (url, hits), loopback_listener() as (other, other_hits):
        host, port = url.removeprefix("http://").split(":")
        proxy = EgressProxy(tmp_path / "egress.sock", Allowlist(endpoints={(host, int(port))}))
        await proxy.start()
        try:
            ok = await _ask(
                proxy.socket_path,
                f"GET {url}/a HTTP/1.1\r\nHost: {host}\r\nProxy-Connection: keep-alive\r\n\r\n".encode(),
            )
            assert ok.startswith(b"HTTP/1.0 404") or ok.startswith(b"HTTP/1.1 404"), ok
            denied = await _ask(proxy.socket_path, f"GET {other}/b HTTP/1.1\r\n\r\n".encode())
            assert denied.startswith(b"HTTP/1.1 403"), denied
            tunnel = await _ask(proxy.socket_path, b"CONNECT 10.0.0.1:443 HTTP/1.1\r\n\r\n")
            assert tunnel.startswith(b"HTTP/1.1 403"), tunnel
            bad = await _ask(proxy.socket_path, b"GET /relative HTTP/1.1\r\n\r\n")
            assert bad.startswith(b"HTTP/1.1 400"), bad
        finally:
            await proxy.close()
        assert hits == ["/a"] and other_hits == []
        assert proxy.connected == [f"{host}:{port}"]
        assert proxy.denied == [other.removeprefix("http://"), "10.0.0.1:443"]
        assert not proxy.socket_path.exists()


async def test_the_proxy_refuses_the_host_loopback_in_every_embedded_form(tmp_path: Path) -> None:
    """A real proxy under `public`, a real listener on the host's loopback: no IPv6 form of
    127.0.0.1 (nor a numeric IPv4 spelling) reaches it, by CONNECT or by a plain request."""
    with loopback_listener() as (url, hits):
        port = int(url.rsplit(":", 1)[1])
        proxy = EgressProxy(tmp_path / "egress.sock", Allowlist(public=True))
        await proxy.start()
        try:
            for host in ("[::ffff:127.0.0.1]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
                         "[::127.0.0.1]", "2130706433", "0x7f.1"):  # fmt: skip
                tunnel = await _ask(
                    proxy.socket_path, f"CONNECT {host}:{port} HTTP/1.1\r\n\r\n".encode()
                )
                plain = await _ask(
                    proxy.socket_path, f"GET http://{host}:{port}/x HTTP/1.1\r\n\r\n".encode()
                )
                assert tunnel.startswith(b"HTTP/1.1 403") and plain.startswith(b"HTTP/1.1 403"), (
                    host
                )
        finally:
            await proxy.close()
        assert hits == [] and proxy.connected == [] and len(proxy.denied) == 6
