"""A real `kwrl world serve` subprocess over a world of real office files, driven by the official MCP
SDK client over HTTP: every DESIGN §4 tool is listed and called, results are checked against the files,
populate/snapshot round-trip byte-exactly, bad input is a tool error, and nothing outside the roots is
read or written. One gateway serves the whole module (starting one is the slow part)."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import io
import json
import mailbox
import os
import select
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from kwrl.tasks.apps import APPS
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.client import GatewayClient, result_text
from kwrl.worlds.demo import write_demo_apps_data

READY_TIMEOUT_S = 180
DESIGN_TOOLS = {
    "filesystem": ["list_files", "read_text_file", "read_image_file", "search_files", "get_file_metadata", "get_directory_tree"],
    "code_execution": ["code_exec"],
    "word": ["create_document", "delete_document", "read_document_content", "get_document_overview", "add_content_text",
             "edit_content_text", "delete_content_text", "apply_formatting", "comments", "header_footer", "page_margins",
             "page_orientation", "add_image", "modify_image", "read_image"],
    "excel": ["create_spreadsheet", "delete_spreadsheet", "read_tab", "read_csv", "list_tabs_in_spreadsheet", "add_tab",
              "delete_tab", "edit_spreadsheet", "add_content_text", "delete_content_cell", "create_chart", "filter_tab"],
    "powerpoint": ["create_deck", "add_slide", "edit_slides", "delete_deck", "read_slides", "read_completedeck",
                   "read_individualslide", "add_shape", "insert_chart", "insert_table", "add_image", "modify_image", "read_image"],
    "pdfs": ["read_pdf_pages", "search_pdf", "read_page_as_image", "read_image", "create_pdf"],
    "mail": ["list_mails", "read_mail", "search_mail", "send_mail", "reply_mail", "reply_all_mail", "forward_mail"],
    "calendar": ["list_events", "read_event", "create_event", "update_event", "delete_event"],
    "chat": ["list_channels", "get_channel_history", "get_thread_replies", "post_message", "reply_to_thread",
             "add_reaction", "delete_post", "get_users", "get_user_profile"],
}  # fmt: skip
OFFICE_FIXTURE = {"word": "docx", "excel": "xlsx", "powerpoint": "pptx", "pdfs": "pdf"}
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def start_gateway(
    root: Path, *extra: str, log: Path, in_place: bool = True
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `kwrl world serve` (on ROOT itself: the tests' scratch world) and wait (with a
    deadline) for its ready line."""
    cmd = [sys.executable, "-m", "kwrl.cli", "world", "serve", str(root), *extra]
    cmd += ["--in_place"] if in_place else []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log.open("wb"))
    assert proc.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    line = b""
    while time.monotonic() < deadline and not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            line += chunk
    if not line.startswith(b"kwrl-gateway ready "):
        proc.kill()
        pytest.fail(f"gateway not ready: {line!r}; stderr: {log.read_text()[-2000:]}")
    return proc, line.decode().split()[2]


def stop(proc: subprocess.Popen[bytes]) -> None:
    assert proc.poll() is None, "the gateway died during the tests"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, office_fixtures: Path) -> Path:
    base = tmp_path_factory.mktemp("gw")
    roots = WorldRoots.of_dir(base / "world")
    write_demo_apps_data(roots)
    for kind in ("docx", "xlsx", "pptx", "pdf"):
        shutil.copytree(office_fixtures / kind, roots.filesystem / kind)
    for f in roots.filesystem.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    (roots.filesystem / "notes.txt").write_text("alpha\nbeta\n")
    (roots.filesystem / "table.csv").write_text("name,amount\nA,1\nB,2\n")
    (roots.filesystem / "logo.png").write_bytes(PNG)
    (base / "secret.txt").write_text("TOP SECRET")
    (roots.filesystem / "link_out.txt").symlink_to(base / "secret.txt")
    return base


@pytest.fixture(scope="module")
def gateway(world: Path) -> Iterator[str]:
    proc, url = start_gateway(world / "world", "--port", "0", log=world / "gateway.log")
    yield url
    stop(proc)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def call(url: str, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    async with GatewayClient(url) as gw:
        r = await gw.call_tool(tool, args)
        return r.is_error, result_text(r)


def outside_state(world: Path) -> dict[str, float]:
    return {
        p.name: p.stat().st_mtime for p in world.iterdir() if p.name not in ("world", "gateway.log")
    }


def test_every_design_tool_is_listed_with_server_prefix(gateway: str) -> None:
    health = httpx.get(gateway.replace("/mcp/", "/health")).json()
    assert health["status"] == "ok"

    async def names() -> set[str]:
        async with Client(gateway) as c:  # the official SDK client, plain URL
            return {t.name for t in (await c.list_tools()).tools}

    listed = run(names())
    expected = {f"{s}_{t}" for s, tools in DESIGN_TOOLS.items() for t in tools}
    assert expected <= listed
    assert health["apps"] == list(APPS) and health["missing_apps"] == []


def test_each_non_office_tool_is_called_and_checked_against_the_files(
    gateway: str, world: Path
) -> None:
    roots = WorldRoots.of_dir(world / "world")

    async def scenario() -> None:
        async with GatewayClient(gateway) as gw:

            async def ok(tool: str, args: dict[str, Any]) -> str:
                r = await gw.call_flat(tool, args)  # envelope fields flat, as the agent sends them
                assert not r.is_error, f"{tool}: {result_text(r)}"
                return result_text(r)

            async def js(tool: str, args: dict[str, Any]) -> Any:
                return json.loads(await ok(tool, args))

            assert "'docx' (folder)" in await ok("filesystem_list_files", {"path": "/"})
            assert (
                await ok("filesystem_read_text_file", {"file_path": "/notes.txt"})
                == "alpha\nbeta\n"
            )
            img = await gw.call_tool("filesystem_read_image_file", {"file_path": "/logo.png"})
            assert base64.b64decode(img.content[0].data) == PNG  # type: ignore[union-attr]
            found = await ok("filesystem_search_files", {"pattern": "*.pptx"})
            n_pptx = len(list((roots.filesystem / "pptx").iterdir()))
            assert found.splitlines()[0] == f"Found {n_pptx} file(s) matching '*.pptx':"
            meta = await ok(
                "filesystem_get_file_metadata", {"file_path": "/pdf/pypdf__crazyones.pdf"}
            )
            size = (roots.filesystem / "pdf" / "pypdf__crazyones.pdf").stat().st_size
            assert f"Size: {size} bytes" in meta
            assert "── xlsx/" in await ok("filesystem_get_directory_tree", {})
            # upstream's code_exec: the code is a shell command
            out = await js("code_execution_code_exec", {"code": "ls docx | wc -l"})
            assert out["success"] and out["output"].strip() == str(
                len(list((roots.filesystem / "docx").iterdir()))
            )
            raw = await gw.call_tool("code_execution_code_exec", {"request": {"code": "echo hi"}})
            assert json.loads(result_text(raw)) == {"success": True, "output": "hi\n"}

            mails = await js("mail_list_mails", {"limit": 3})
            first = mails["mails"][0]["mail_id"]
            assert "subject:" in await ok("mail_read_mail", {"mail_id": first})
            assert (await js("mail_search_mail", {"subject": "atlas"}))["total"] > 0
            sent = await js(
                "mail_send_mail",
                {
                    "from_email": "ana.lima@northwind.example",
                    "to_email": ["ben.okafor@northwind.example"],
                    "subject": "Q3 deck",
                    "body": "Done.",
                },
            )
            for tool, args in [
                ("mail_reply_mail", {"original_mail_id": first, "body": "ok"}),
                ("mail_reply_all_mail", {"original_mail_id": first, "body": "ok all"}),
                (
                    "mail_forward_mail",
                    {"original_mail_id": first, "to_email": "dana.novak@northwind.example"},
                ),
            ]:
                await ok(tool, args)
            on_disk = list(mailbox.mbox(roots.app_dir("mail") / "sent.mbox"))
            assert len(on_disk) == 4 and on_disk[0]["Subject"] == "Q3 deck"
            assert on_disk[0]["Message-ID"] == sent["mail_id"]
            newest = await js("mail_list_mails", {"limit": 4})
            assert {m["mail_id"] for m in newest["mails"]} == {m["Message-ID"] for m in on_disk}

            ev = await js(
                "calendar_create_event",
                {
                    "summary": "Atlas IC",
                    "start": {"dateTime": "2025-04-01T10:00:00"},
                    "end": {"dateTime": "2025-04-01T11:30:00"},
                },
            )
            read = await js("calendar_read_event", {"event_id": ev["event_id"]})
            assert read["summary"] == "Atlas IC" and read["end"] == {
                "dateTime": "2025-04-01T11:30:00"
            }
            assert (
                ev["event_id"].encode() in (roots.app_dir("calendar") / "calendar.ics").read_bytes()
            )
            listed = await js("calendar_list_events", {"limit": 100})
            assert [e["summary"] for e in listed["events"]].count("Atlas IC") == 1
            await js("calendar_update_event", {"event_id": ev["event_id"], "location": "Room 9"})
            assert (await js("calendar_read_event", {"event_id": ev["event_id"]}))[
                "location"
            ] == "Room 9"
            await js("calendar_delete_event", {"event_id": ev["event_id"]})
            assert (
                ev["event_id"].encode()
                not in (roots.app_dir("calendar") / "calendar.ics").read_bytes()
            )

            assert len((await js("chat_list_channels", {}))["channels"]) == 3
            hist = await js("chat_get_channel_history", {"channel_id": "general"})
            root_id = next(m["message_id"] for m in hist["messages"] if m.get("reply_count"))
            thread = await js(
                "chat_get_thread_replies", {"channel_id": "general", "post_id": root_id}
            )
            assert len(thread["messages"]) > 1
            post = await js(
                "chat_post_message", {"channel_id": "general", "message": "hello from the gateway"}
            )
            await js(
                "chat_reply_to_thread",
                {"channel_id": "general", "post_id": post["message_id"], "message": "reply"},
            )
            await js(
                "chat_add_reaction",
                {"channel_id": "general", "post_id": post["message_id"], "emoji_name": "👍"},
            )
            stored = json.loads((roots.app_dir("chat") / "messages" / "general.json").read_text())[
                "messages"
            ]
            mine = next(m for m in stored if m["id"] == post["message_id"])
            assert mine["text"] == "hello from the gateway" and mine["reactions"] == {
                "👍": ["u_ana"]
            }
            await js("chat_delete_post", {"channel_id": "general", "post_id": post["message_id"]})
            assert (await js("chat_get_users", {}))["total"] == 5
            assert (await js("chat_get_user_profile", {"user_id": "u_ben"}))["name"] == "Ben Okafor"

    run(scenario())


def test_office_read_tools_answer_on_real_fixtures(gateway: str, world: Path) -> None:
    """Each office read tool whose only required argument is file_path reads a real fixture."""
    roots = WorldRoots.of_dir(world / "world")

    async def scenario() -> int:
        called = 0
        async with GatewayClient(gateway) as gw:
            for tool in await gw.list_tools():
                app, _, name = tool.name.partition("_")
                if app not in OFFICE_FIXTURE or not name.startswith(("read_", "get_", "list_")):
                    continue
                if tool.input_schema.get("required") != ["file_path"]:
                    continue
                kind = OFFICE_FIXTURE[app]
                path = (
                    "/table.csv"
                    if name == "read_csv"
                    else f"/{kind}/{sorted(os.listdir(roots.filesystem / kind))[0]}"
                )
                r = await gw.call_tool(tool.name, {"file_path": path})
                assert not r.is_error, f"{tool.name}({path}): {result_text(r)}"
                assert result_text(r).strip()
                called += 1
        return called

    called = run(scenario())
    health = httpx.get(gateway.replace("/mcp/", "/health")).json()
    if not set(OFFICE_FIXTURE) & set(health["apps"]):
        pytest.skip("no office app modules yet")
    assert called >= 1


def test_populate_then_snapshot_round_trips_byte_exactly(
    gateway: str, world: Path, office_fixtures: Path
) -> None:
    base = gateway.removesuffix("/mcp/")
    uploads = {
        f"uploaded/{p.name}": p.read_bytes() for p in sorted((office_fixtures / "pdf").iterdir())
    }
    uploads["uploaded/nested/empty.txt"] = b""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, payload in uploads.items():
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    r = httpx.post(
        f"{base}/data/populate",
        params={"subsystem": "filesystem"},
        content=buf.getvalue(),
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert r.json()["files"] == len(uploads)
    overlay = io.BytesIO()
    with tarfile.open(fileobj=overlay, mode="w") as tar:
        info = tarfile.TarInfo("chat/extra.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    assert (
        httpx.post(
            f"{base}/data/populate", params={"subsystem": ".apps_data"}, content=overlay.getvalue()
        ).status_code
        == 200
    )

    snap = httpx.post(f"{base}/data/snapshot", timeout=60)
    assert snap.status_code == 200 and snap.headers["content-type"] == "application/gzip"
    root = world / "world"
    with tarfile.open(fileobj=io.BytesIO(snap.content), mode="r:gz") as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    for name, payload in uploads.items():
        assert files[f"filesystem/{name}"] == payload
    assert files[".apps_data/chat/extra.json"] == b"{}"
    on_disk = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for sub in ("filesystem", ".apps_data")
        for p in (root / sub).rglob("*")
        if p.is_file() and not p.is_symlink()
    }
    assert files == on_disk


def test_unsafe_populate_is_refused_and_writes_nothing(gateway: str, world: Path) -> None:
    base = gateway.removesuffix("/mcp/")
    before = outside_state(world)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("../../escaped.txt")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    r = httpx.post(
        f"{base}/data/populate", params={"subsystem": "filesystem"}, content=buf.getvalue()
    )
    assert r.status_code == 400 and "escapes" in r.json()["error"]
    assert (
        httpx.post(f"{base}/data/populate", params={"subsystem": "/etc"}, content=b"").status_code
        == 400
    )
    assert outside_state(world) == before


def test_bad_input_gives_clear_tool_errors_and_the_server_keeps_serving(
    gateway: str, world: Path
) -> None:
    before = outside_state(world)
    day = {"date": "2025-04-01"}
    cases = [
        ("filesystem_read_text_file", {"file_path": "/missing.txt"}, "File not found"),
        ("filesystem_read_text_file", {"file_path": 7}, "Validation error: file_path"),
        ("filesystem_read_text_file", {"file_path": "/link_out.txt"}, "Access denied"),
        ("mail_read_mail", {"mail_id": "<none@x>"}, "no mail"),
        (
            "calendar_create_event",
            {"request": {"summary": "x", "start": {"dateTime": "soon"}, "end": day}},
            "ISO 8601",
        ),
        ("chat_post_message", {"request": {"channel_id": "nope", "message": "x"}}, "no channel"),
        ("chat_post_message", {"channel_id": "general", "message": "x"}, "request: Field required"),
        ("no_such_tool", {}, "no_such_tool"),
    ]
    for tool, args, needle in cases:
        is_error, text = run(call(gateway, tool, args))
        assert is_error, tool
        assert needle in text, (tool, text)
    assert httpx.get(gateway.replace("/mcp/", "/health")).status_code == 200
    assert outside_state(world) == before


_SEGMENTS = st.sampled_from(
    ["..", ".", "", "secret.txt", "world", "filesystem", "notes.txt", "link_out.txt", "%2e%2e", "~"]
)


@pytest.fixture(scope="module")
def session(gateway: str) -> Iterator[Any]:
    """One MCP session kept open on a private event loop, so each fuzz example is just 3 calls."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()
    opened: concurrent.futures.Future[GatewayClient] = concurrent.futures.Future()

    async def hold() -> None:  # the session is entered and left in this one task
        async with GatewayClient(gateway) as gw:
            opened.set_result(gw)
            await stop.wait()

    held = asyncio.run_coroutine_threadsafe(hold(), loop)
    gw = opened.result(120)

    def call_sync(tool: str, args: dict[str, Any]) -> tuple[bool, str]:
        r = asyncio.run_coroutine_threadsafe(gw.call_tool(tool, args), loop).result(120)
        return r.is_error, result_text(r)

    yield call_sync
    loop.call_soon_threadsafe(stop.set)
    held.result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    parts=st.lists(_SEGMENTS, min_size=1, max_size=6),
    lead=st.sampled_from(["", "/", "/filesystem/"]),
)
def test_fuzzed_path_escapes_never_read_outside(session: Any, parts: list[str], lead: str) -> None:
    path = lead + "/".join(parts)
    for tool in (
        "filesystem_read_text_file",
        "filesystem_get_file_metadata",
        "filesystem_list_files",
    ):
        key = "path" if tool == "filesystem_list_files" else "file_path"
        is_error, text = session(tool, {key: path})
        assert "TOP SECRET" not in text
        if not is_error:
            assert "gateway.log" not in text  # a listing of the world's parent would show it
        else:
            assert text.strip(), "a tool error must say what went wrong"


def test_world_call_cli_prints_results_and_exits_1_on_tool_errors(
    gateway: str, monkeypatch
) -> None:
    from typer.testing import CliRunner

    from kwrl.cli import app

    runner = CliRunner()
    monkeypatch.setenv("KWRL_GATEWAY", gateway)
    done = runner.invoke(
        app, ["world", "call", "filesystem_read_text_file", '{"file_path": "/notes.txt"}']
    )
    assert done.exit_code == 0, done.output
    assert done.stdout == "alpha\nbeta\n"
    bad = runner.invoke(
        app, ["world", "call", "filesystem_read_text_file", '{"file_path": "/nope"}']
    )
    assert bad.exit_code == 1 and "File not found" in bad.stderr
    # an envelope tool takes its fields flat (re-wrapped) or wrapped
    for args in ('{"code": "echo $((6*7))"}', '{"request": {"code": "echo $((6*7))"}}'):
        shell = runner.invoke(app, ["world", "call", "code_execution_code_exec", args])
        assert shell.exit_code == 0 and json.loads(shell.stdout)["output"] == "42\n"
    assert runner.invoke(app, ["world", "call", "filesystem_list_files", "[1]"]).exit_code != 0


def test_gateway_over_a_unix_socket(world: Path, tmp_path: Path) -> None:
    sock = tmp_path / "gw.sock"
    proc, url = start_gateway(world / "world", "--uds", str(sock), log=tmp_path / "uds.log")
    try:
        assert url == f"unix://{sock}"
        assert run(call(url, "filesystem_read_text_file", {"file_path": "/notes.txt"})) == (
            False,
            "alpha\nbeta\n",
        )
        is_error, text = run(call(url, "filesystem_read_text_file", {"file_path": "/nope"}))
        assert is_error and "File not found" in text
    finally:
        stop(proc)
    assert not sock.exists()


def test_a_world_seed_is_served_as_a_copy_unless_in_place(world: Path, tmp_path: Path) -> None:
    """A gold `powerpoint_add_slide` and a `code_exec` write change the served copy (read back
    through the gateway), never the seed dir: byte for byte, nothing under it changes. Before, the
    tool calls wrote into the dataset's world seed. `--in_place` changes the seed."""
    seed = tmp_path / "seed"
    shutil.copytree(world / "world", seed, symlinks=True)

    def tree() -> dict[str, bytes | None]:
        return {
            str(p.relative_to(seed)): None if p.is_dir() or p.is_symlink() else p.read_bytes()
            for p in sorted(seed.rglob("*"))
        }

    before = tree()
    deck = "/pptx/python-pptx__prs-notes.pptx"
    slide = {"request": {"file_path": deck, "index": 0, "title": "Added", "bullets": ["x"]}}
    for in_place in (False, True):
        log = tmp_path / f"serve-{in_place}.log"
        proc, url = start_gateway(seed, "--port", "0", log=log, in_place=in_place)
        try:
            assert run(call(url, "powerpoint_add_slide", slide))[0] is False
            code = {"request": {"code": "echo new > made.txt"}}
            assert json.loads(run(call(url, "code_execution_code_exec", code))[1])["success"]
            is_error, text = run(call(url, "filesystem_read_text_file", {"file_path": "/made.txt"}))
            assert (is_error, text.strip()) == (False, "new")
        finally:
            stop(proc)
        if not in_place:
            assert tree() == before
            assert f"serving a copy of {seed}" in log.read_text()
    after = tree()
    assert after["filesystem/made.txt"] == b"new\n"
    assert after[f"filesystem{deck}"] != before[f"filesystem{deck}"]
