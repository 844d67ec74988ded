"""`GatewayClient`: the async MCP client for a world gateway, over TCP or a Unix socket.

`GatewayClient(url)` accepts `http://host:port/mcp/` or `unix:///path/to.sock` (the sandbox's
socket; the MCP path defaults to `/mcp/`, or give it after the socket as `unix:///run/gw.sock#/mcp/`).
The gateway's base URL (`http://host:port`, what `kwrl world serve` prints) means its `/mcp/`.
It wraps the official MCP SDK client (`mcp.Client` over `mcp.client.streamable_http`), so the agent,
`kwrl world call` and the tests speak exactly what a real MCP host speaks.

`call_flat(name, args)` takes a tool's arguments as the agent's model writes them: Archipelago's
tools that take one `input`/`request` envelope object get their fields flat and are re-wrapped
(RECIPE's rewrap; arguments already wrapped pass unchanged). `kwrl world call` and gold solutions
use it.

Non-obvious choice: a tool error is a *result* (`is_error=True`) that the agent shows the model,
never an exception; only transport failures raise (`WorldError` naming the URL).
"""

from __future__ import annotations

import functools
import os
import ssl
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, ImageContent, TextContent, Tool

from kwrl.errors import WorldError

ENV_GATEWAY = "KWRL_GATEWAY"
ENVELOPE_KEYS = ("input", "request")
DEFAULT_TIMEOUT_S = 600.0


def resolve_url(url: str | None) -> str:
    """The gateway URL from the argument or env `KWRL_GATEWAY`; a clear error when neither is set."""
    url = url or os.environ.get(ENV_GATEWAY)
    if not url:
        raise WorldError(f"no gateway URL: pass --gateway URL or set {ENV_GATEWAY}")
    if not url.startswith(("http://", "https://", "unix://")):
        raise WorldError(
            f"gateway URL {url!r}: expected http://host:port/mcp/ or unix:///path.sock"
        )
    if url.startswith(("http://", "https://")):
        parts = urlsplit(url)
        if parts.path in ("", "/", "/mcp"):  # the base URL (or no trailing slash): the endpoint
            url = urlunsplit(parts._replace(path="/mcp/"))
    return url


def _connect_error(url: str, e: Exception) -> WorldError:
    """What a failed connection says: a missing MCP endpoint names the path to use."""
    text = repr(e)
    if "Not Found" in text or "404" in text:
        base = urlunsplit(urlsplit(url)._replace(path="", query="", fragment=""))
        return WorldError(
            f"gateway {url}: no MCP endpoint at this path (HTTP 404); a kwrl gateway serves it at "
            f"{base}/mcp/ (or pass the base URL {base})"
        )
    return WorldError(f"gateway {url}: cannot connect: {text}")


@functools.cache
def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: making it loads the CA bundle (~30 ms,
    most of a session's start against a local gateway), which every client would otherwise repeat."""
    return httpx2.create_ssl_context()


def _split(url: str, timeout_s: float) -> tuple[str, httpx2.AsyncClient]:
    timeout = httpx2.Timeout(30.0, read=timeout_s)
    if url.startswith("unix://"):
        sock, _, path = url.removeprefix("unix://").partition("#")
        transport = httpx2.AsyncHTTPTransport(uds=sock, verify=_tls())
        return f"http://localhost{path or '/mcp/'}", httpx2.AsyncClient(
            transport=transport, timeout=timeout
        )
    return url, httpx2.AsyncClient(timeout=timeout, verify=_tls())


def envelope_key(schema: dict[str, Any]) -> str | None:
    """The envelope parameter of a schema whose only property is an `input`/`request` object."""
    props = schema.get("properties") or {}
    if len(props) != 1:
        return None
    ((key, sub),) = props.items()
    return key if key in ENVELOPE_KEYS and isinstance(sub, dict) and "properties" in sub else None


def rewrap(arguments: dict[str, Any], key: str | None) -> dict[str, Any]:
    """Flat arguments re-wrapped under the envelope `key`; already wrapped ones unchanged."""
    if key is None or (set(arguments) == {key} and isinstance(arguments[key], dict)):
        return arguments
    return {key: arguments}


def result_text(result: CallToolResult) -> str:
    """A tool result as text: text blocks joined; other blocks named by type."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        else:
            parts.append(f"[{block.type} content]")
    return "\n".join(parts)


class GatewayClient:
    """One MCP session with a world gateway. Use as `async with GatewayClient(url) as gw:`."""

    def __init__(self, url: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.url = resolve_url(url)
        self.timeout_s = timeout_s
        self._stack: AsyncExitStack | None = None
        self._client: Client | None = None
        self._envelopes: dict[str, str | None] | None = None

    async def __aenter__(self) -> GatewayClient:
        stack = AsyncExitStack()
        endpoint, http = _split(self.url, self.timeout_s)
        try:
            await stack.enter_async_context(http)
            transport = streamable_http_client(endpoint, http_client=http)
            self._client = await stack.enter_async_context(
                Client(transport, read_timeout_seconds=self.timeout_s, cache=None)
            )
        except BaseException as e:
            await stack.aclose()
            if isinstance(e, Exception):
                raise _connect_error(self.url, e) from e
            raise
        self._stack = stack
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._stack = self._client = None

    @property
    def client(self) -> Client:
        if self._client is None:
            raise WorldError("GatewayClient used outside 'async with'")
        return self._client

    async def list_tools(self) -> list[Tool]:
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            page = await self.client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        return await self.client.call_tool(name, arguments or {})

    async def call_flat(self, name: str, arguments: dict[str, Any] | None = None) -> CallToolResult:
        """`call_tool` with an envelope tool's fields given flat (see the module docstring)."""
        if self._envelopes is None:
            self._envelopes = {
                t.name: envelope_key(t.input_schema) for t in await self.list_tools()
            }
        return await self.call_tool(name, rewrap(arguments or {}, self._envelopes.get(name)))
