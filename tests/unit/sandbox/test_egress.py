"""`kwrl.sandbox.egress`: which destinations the verifier phase may reach, and the proxy's
handling of requests (a real proxy on a Unix socket, real loopback servers)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kwrl.llm.spec import judge_endpoint
from kwrl.sandbox.egress import Allowlist, EgressProxy, judge_endpoints
from kwrl.sandbox.testing import loopback_listener


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
