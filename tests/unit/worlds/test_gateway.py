"""The gateway mounts every app as `<server>_<tool>` with upstream's schemas, and skips only app
modules that do not exist."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fastmcp import Client

from kwrl.tasks.apps import App
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds import gateway

DESIGN_TOOLS = {
    "filesystem": ["list_files", "read_text_file", "read_image_file", "search_files", "get_file_metadata", "get_directory_tree"],
    "code_execution": ["code_exec"],
    "mail": ["list_mails", "read_mail", "search_mail", "send_mail", "reply_mail", "reply_all_mail", "forward_mail"],
    "calendar": ["list_events", "read_event", "create_event", "update_event", "delete_event"],
    "chat": ["list_channels", "get_channel_history", "get_thread_replies", "post_message", "reply_to_thread",
             "add_reaction", "delete_post", "get_users", "get_user_profile"],
}  # fmt: skip


@pytest.fixture
def only_my_apps(app_table: dict[str, App]) -> None:
    for name in [n for n in app_table if n not in DESIGN_TOOLS]:
        del app_table[name]


async def test_tools_are_named_server_underscore_tool_with_upstreams_schemas(
    tmp_path: Path, only_my_apps
) -> None:
    server, mounted, missing = gateway.build_server(WorldRoots.of_dir(tmp_path))
    assert mounted == list(DESIGN_TOOLS) and missing == []
    async with Client(server) as c:
        tools = {t.name: t for t in await c.list_tools()}
        assert set(tools) == {f"{s}_{t}" for s, names in DESIGN_TOOLS.items() for t in names}
        for tool in tools.values():  # flattened as upstream publishes them: no refs, no anyOf
            assert "$ref" not in str(tool.input_schema) and "anyOf" not in str(tool.input_schema)
        assert list(tools["mail_send_mail"].input_schema["properties"]) == ["input"]
        assert list(tools["chat_post_message"].input_schema["properties"]) == ["request"]
        bad = await c.call_tool("mail_read_mail", {}, raise_on_error=False)
        assert bad.is_error
        assert bad.content[0].text == (  # type: ignore[union-attr]
            "Error calling tool 'mail_read_mail': Validation error: mail_id: Field required"
        )


async def test_every_listed_schema_is_self_contained(tmp_path: Path) -> None:
    """No $ref or $defs in any tool's schemas: the composed server lists them as the apps made
    them, without dereferencing them again on every tools/list."""
    server, _, _ = gateway.build_server(WorldRoots.of_dir(tmp_path))
    async with Client(server) as c:
        tools = await c.list_tools()
    assert len(tools) >= 73
    for tool in tools:
        text = str(tool.input_schema) + str(tool.output_schema)
        assert "$ref" not in text and "$defs" not in text, tool.name


def test_a_missing_app_module_is_skipped_with_a_warning(
    tmp_path: Path, app_table: dict[str, App], caplog
) -> None:
    for name in [n for n in app_table if n != "mail"]:
        del app_table[name]
    app_table["ghost"] = App("Ghost", "mail_server", "kwrl.worlds.apps.ghost:Ghost")
    _, mounted, missing = gateway.build_server(WorldRoots.of_dir(tmp_path))
    assert mounted == ["mail"] and missing == ["ghost"]
    assert "kwrl.worlds.apps.ghost does not exist" in caplog.text


def test_a_broken_app_module_is_an_error_not_a_skip(
    tmp_path: Path, monkeypatch, app_table: dict[str, App]
) -> None:
    pkg = tmp_path / "brokenapps"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("import kwrl_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    app_table.clear()
    app_table["bad"] = App("Bad", "mail_server", "brokenapps.bad:BadApp")
    with pytest.raises(ModuleNotFoundError, match="kwrl_no_such_dependency"):
        gateway.build_server(WorldRoots.of_dir(tmp_path))
    sys.modules.pop("brokenapps", None)


def test_bound_tcp_socket_gets_nodelay_on_accept() -> None:
    """asyncio sets TCP_NODELAY only on proto=IPPROTO_TCP sockets; without it each reply waits ~40 ms."""
    import asyncio
    import socket

    from kwrl.worlds.cli import _bind

    sock, url = _bind("127.0.0.1", 0, None)
    assert sock.proto == socket.IPPROTO_TCP
    seen: list[int] = []

    async def main() -> None:
        async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            raw = w.get_extra_info("socket")
            seen.append(raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            w.close()

        server = await asyncio.start_server(on_conn, sock=sock)
        port = sock.getsockname()[1]
        _, w = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        w.close()
        server.close()

    asyncio.run(main())
    assert url.startswith("http://127.0.0.1:")
    assert seen and seen[0] != 0
