"""The gateway URL a user types: the base URL means its `/mcp/` endpoint; a wrong path says which
path to use instead of an MCP error."""

from __future__ import annotations

import pytest

from kwrl.errors import WorldError
from kwrl.worlds.client import _connect_error, resolve_url


@pytest.mark.parametrize(
    ("typed", "used"),
    [
        ("http://127.0.0.1:8765", "http://127.0.0.1:8765/mcp/"),
        ("http://127.0.0.1:8765/", "http://127.0.0.1:8765/mcp/"),
        ("http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765/mcp/"),
        ("http://127.0.0.1:8765/mcp/", "http://127.0.0.1:8765/mcp/"),
        ("https://gw.example/other/", "https://gw.example/other/"),
        ("unix:///run/gw.sock", "unix:///run/gw.sock"),
    ],
)
def test_the_base_url_means_the_mcp_endpoint(typed: str, used: str) -> None:
    assert resolve_url(typed) == used


def test_a_url_without_a_scheme_is_refused_with_the_forms_it_takes() -> None:
    with pytest.raises(WorldError, match="expected http://host:port/mcp/"):
        resolve_url("127.0.0.1:8765")


def test_a_404_names_the_endpoint_to_use() -> None:
    e = _connect_error("http://127.0.0.1:8765/x/", RuntimeError("MCPError(-32601, 'Not Found')"))
    assert "http://127.0.0.1:8765/mcp/" in str(e) and "MCPError" not in str(e)
