"""Archipelago-shaped calls replayed against a generated world: every upstream tool, called as
upstream's schema asks (envelopes included), at least once validly and once invalidly.

The world comes from the generator (`kwrl.synth.generate`); the gateway is the real one
(`kwrl.worlds.gateway.build_server`, every app) behind fastmcp's MCP client. Calls run in order on
one copy of the world (later calls use what earlier ones made: a workbook, a deck, a sent mail);
each valid call's effect is checked on the result or on the files, each invalid call must be a
tool error with the expected text. Images and an image-bearing PDF are made by upstream-shaped
`code_exec` shell commands.
"""

from __future__ import annotations

import asyncio
import json
import mailbox
import shutil
from collections.abc import Callable
from typing import Any

import openpyxl
import pytest
from fastmcp import Client

from kwrl.synth.generate import SynthConfig, generate
from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps.contract import UPSTREAM_SERVER, specs
from kwrl.worlds.gateway import build_server

Check = Callable[[str, dict[str, Any]], object]
MAKE_FILES = (
    "python -c \"from PIL import Image; Image.new('RGB', (40, 20), (200, 0, 0)).save('logo.png')\""
    " && printf 'a,b\\n1,2\\n' > t.csv"
    " && python -c \"from reportlab.pdfgen import canvas; c = canvas.Canvas('img.pdf');"
    " c.drawString(72, 720, 'Logo page'); c.drawImage('logo.png', 72, 500, 80, 40); c.save()\""
    " && ls"
)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> WorldRoots:
    tmp = tmp_path_factory.mktemp("replay")
    cfg = SynthConfig(out=tmp / "ds", worlds=1, tasks_per_world=1, seed=11, workers=1,
                      domains=["Investment Banking"])  # fmt: skip
    generate(cfg, progress=False)
    (seed,) = (tmp / "ds" / "worlds").iterdir()
    shutil.copytree(seed, tmp / "root", ignore=shutil.ignore_patterns("world.json"))
    return WorldRoots.of_dir(tmp / "root")


def find(roots: WorldRoots, suffix: str) -> str:
    return (
        "/"
        + sorted(p for p in roots.filesystem.rglob(f"*{suffix}"))[0]
        .relative_to(roots.filesystem)
        .as_posix()
    )


def cases(roots: WorldRoots) -> list[tuple[str, Any, str, Any]]:
    """(tool, arguments or a function of the state, "ok" | "error", check or expected error text)."""
    xlsx, pdf = find(roots, ".xlsx"), find(roots, ".pdf")
    inbox = list(mailbox.mbox(roots.app_dir("mail") / "inbox.mbox"))
    mail_id, me = str(inbox[0]["Message-ID"]), str(inbox[0]["To"]).split(",")[0].strip()
    channel = json.loads((roots.app_dir("chat") / "channels.json").read_text())["channels"][0]["id"]
    history = json.loads((roots.app_dir("chat") / "messages" / f"{channel}.json").read_text())[
        "messages"
    ]
    user = json.loads((roots.app_dir("chat") / "users.json").read_text())["users"][0]["id"]
    R, D, P, N = "/Outputs/r.xlsx", "/Outputs/m.docx", "/Outputs/d.pptx", "/Outputs/n.pdf"
    fs = roots.filesystem

    def has(*needles: str) -> Check:
        return lambda text, _: (
            all(n in text for n in needles) or pytest.fail(f"{needles} not in {text[:400]}")
        )

    def js(pred: Callable[[Any], bool]) -> Check:
        return lambda text, _: pred(json.loads(text)) or pytest.fail(text[:400])

    def keep(key: str, field: str) -> Check:
        def check(text: str, state: dict[str, Any]) -> None:
            state[key] = json.loads(text)[field]

        return check

    image: Check = lambda text, _: text.startswith("[image") or pytest.fail(text[:200])  # noqa: E731
    day = {"dateTime": "2025-06-02T10:00:00", "timeZone": "UTC"}
    end = {"dateTime": "2025-06-02T11:00:00", "timeZone": "UTC"}
    return [
        # filesystem
        ("filesystem_list_files", {"path": "/"}, "ok", has("'Firm' (folder)")),
        ("filesystem_list_files", {"path": "/nope"}, "ok", has("[not found: /nope]")),
        ("filesystem_list_files", {"path": 3}, "error", "Validation error: path"),
        ("code_execution_code_exec", {"request": {"code": MAKE_FILES}}, "ok",
         js(lambda r: r["success"] and "logo.png" in r["output"])),
        ("code_execution_code_exec", {"request": {"code": "import os"}}, "ok",
         js(lambda r: not r["success"] and "raw Python" in r["output"])),
        ("code_execution_code_exec", {"code": "ls"}, "error", "request: Field required"),
        ("filesystem_read_text_file", {"file_path": "/Outputs/README.txt"}, "ok", has("deliverables")),
        ("filesystem_read_text_file", {"file_path": "/t.csv", "encoding": "ascii", "max_size": 5},
         "ok", has("a,b\n1,2")),
        ("filesystem_read_text_file", {"path": "/t.csv"}, "error", "file_path: Field required"),
        ("filesystem_read_image_file", {"file_path": "/logo.png"}, "ok", image),
        ("filesystem_read_image_file", {"file_path": "/t.csv"}, "error", "Unsupported image format"),
        ("filesystem_search_files", {"pattern": "*.xlsx", "max_results": 1}, "ok",
         has("Found 1 file(s)", "(Results limited to 1)")),
        ("filesystem_search_files", {"path": "/"}, "error", "pattern: Field required"),
        ("filesystem_get_file_metadata", {"file_path": xlsx}, "ok", has("Type: file")),
        ("filesystem_get_file_metadata", {"file_path": "/../etc/passwd"}, "ok", has("[access denied")),
        ("filesystem_get_file_metadata", {}, "error", "file_path: Field required"),
        ("filesystem_get_directory_tree", {"path": "/Firm", "show_size": True}, "ok", has("bytes)")),
        ("filesystem_get_directory_tree", {"max_depth": "deep"}, "error", "max_depth"),
        # excel
        ("excel_list_tabs_in_spreadsheet", {"file_path": xlsx}, "ok", has("tab_index")),
        ("excel_list_tabs_in_spreadsheet", {"file_path": "/none.xlsx"}, "error", "file not found"),
        ("excel_read_tab", {"input": {"file_path": xlsx, "tab_index": 0, "max_rows": 3}}, "ok", has("tab 0")),
        ("excel_read_tab", {"input": {"file_path": xlsx}}, "error", "input.tab_index: Field required"),
        ("excel_read_csv", {"input": {"file_path": "/t.csv"}}, "ok", has("1 data rows x 2 columns")),
        ("excel_read_csv", {"input": {"file_path": "/t.csv", "row_limit": "all"}}, "error", "row_limit"),
        ("excel_create_spreadsheet", {"input": {"directory": "/Outputs", "file_name": "r.xlsx", "sheets": [
            {"name": "S", "headers": ["k", "v"], "rows": [["a", 1], ["b", 2]]}]}}, "ok",
         lambda *_: openpyxl.load_workbook(fs / R[1:])["S"]["B3"].value == 2 or pytest.fail("B3")),
        ("excel_create_spreadsheet", {"input": {"directory": "/Outputs", "file_name": "chart.xlsx", "sheets": [
            {"name": "Data", "headers": ["Q", "Rev"], "rows": [["Q1", 1], ["Q2", 3]]}]}}, "ok", has("chart.xlsx")),
        ("excel_create_spreadsheet", {"input": {"directory": "/", "file_name": "x.xlsx"}}, "error",
         "input.sheets: Field required"),
        ("excel_add_tab", {"input": {"file_path": R, "tab_name": "T2", "sheet_data": {"headers": ["x"], "rows": [[1]]}}},
         "ok", has("Added sheet 'T2'")),
        ("excel_add_tab", {"input": {"file_path": R, "tab_name": "x" * 40}}, "error", "at most 31 characters"),
        ("excel_edit_spreadsheet", {"input": {"file_path": R, "operations": [
            {"type": "set_cell", "sheet": "S", "cell": "C1", "value": "=SUM(B2:B3)"},
            {"type": "format_cells", "sheet": "S", "range": "A1:B1", "font_bold": True}]}}, "ok",
         lambda *_: openpyxl.load_workbook(fs / R[1:])["S"]["C1"].value == "=SUM(B2:B3)" or pytest.fail("C1")),
        ("excel_edit_spreadsheet", {"input": {"file_path": R, "operations": [{"type": "paint"}]}}, "error",
         "does not match any of the expected tags"),
        ("excel_add_content_text", {"file_path": R, "tab_index": 0, "cell": "D5", "value": 3.5}, "ok", has("D5 = 3.5")),
        ("excel_add_content_text", {"file_path": R, "tab_index": 0, "cell": "D5", "value": 1}, "error", "already holds"),
        ("excel_delete_content_cell", {"file_path": R, "tab_index": 0, "cell": "D5"}, "ok", has("Cleared S!D5")),
        ("excel_delete_content_cell", {"file_path": R, "cell": "D5"}, "error", "tab_index: Field required"),
        ("excel_create_chart", {"input": {"file_path": R, "sheet": "S", "data_range": "A1:B3"}}, "ok", has("bar chart")),
        ("excel_create_chart", {"input": {"file_path": R, "sheet": "S", "data_range": "A1:B3", "chart_type": "scatter"}},
         "error", "Input should be 'bar', 'line' or 'pie'"),
        ("excel_filter_tab", {"input": {"file_path": R, "tab_index": 0, "filters": [
            {"column": "v", "operator": "greater_than", "value": 1}]}}, "ok", has("1 matching row(s)")),
        ("excel_filter_tab", {"input": {"file_path": R, "tab_index": 0, "filters": [
            {"column": "v", "operator": ">", "value": 1}]}}, "error", "operator"),
        ("excel_delete_tab", {"file_path": R, "tab_index": 1}, "ok", has("Deleted sheet 'T2'")),
        ("excel_delete_tab", {"file_path": R, "tab_index": 9}, "error", "out of range"),
        ("excel_delete_spreadsheet", {"file_path": R}, "ok", lambda *_: not (fs / R[1:]).exists() or pytest.fail()),
        ("excel_delete_spreadsheet", {"file_path": R}, "error", "not found"),
        # word
        ("word_create_document", {"input": {"directory": "/Outputs", "file_name": "m.docx", "content": [
            {"type": "heading", "text": "Memo", "level": 1}, {"type": "paragraph", "text": "Hello"}],
            "metadata": {"title": "Memo"}}}, "ok", has("Created /Outputs/m.docx")),
        ("word_create_document", {"input": {"directory": "/Outputs", "file_name": "x.docx", "content": "Hello"}},
         "error", "input.content"),
        ("word_get_document_overview", {"file_path": D}, "ok", has("Memo")),
        ("word_get_document_overview", {"file_path": "/Outputs/none.docx"}, "error", "file not found"),
        ("word_read_document_content", {"input": {"file_path": D}}, "ok", has("[body.p.1] Hello", "total_pages 1")),
        ("word_read_document_content", {"input": {"file_path": D, "page_index": 5}}, "error", "out of range"),
        ("word_add_content_text", {"file_path": D, "identifier": "body.p.1", "text": " world", "position": "after"},
         "ok", has("end of body.p.1")),
        ("word_add_content_text", {"file_path": D, "identifier": "body.p.99", "text": "x"}, "error", "out of range"),
        ("word_edit_content_text", {"file_path": D, "identifier": "body.p.1", "new_text": "Hi there"}, "ok", has("body.p.1")),
        ("word_edit_content_text", {"file_path": D, "identifier": "body.p.1"}, "error", "new_text: Field required"),
        ("word_apply_formatting", {"input": {"file_path": D, "identifier": "body.p.1", "bold": True, "font_size": 14}},
         "ok", has("body.p.1")),
        ("word_apply_formatting", {"input": {"file_path": D, "identifier": "body.p.1", "font_size": "big"}},
         "error", "font_size"),
        ("word_comments", {"input": {"file_path": D, "action": "add", "identifier": "body.p.1", "text": "Check",
                                     "author": "Ana"}}, "ok", has("omment")),
        ("word_comments", {"input": {"file_path": D, "action": "read"}}, "ok", has("Check")),
        ("word_comments", {"input": {"file_path": D, "action": "edit"}}, "error", "action must be"),
        ("word_header_footer", {"input": {"file_path": D, "action": "set", "area": "header",
                                          "content": [{"type": "paragraph", "text": "Confidential"}]}}, "ok", has("header")),
        ("word_header_footer", {"input": {"file_path": D, "action": "set", "area": "header"}}, "error", "needs content"),
        ("word_page_margins", {"input": {"file_path": D, "action": "set", "top": 0.5}}, "ok", has("top 0.50 in")),
        ("word_page_margins", {"input": {"file_path": D, "action": "grow"}}, "error", "action must be"),
        ("word_page_orientation", {"input": {"file_path": D, "action": "set", "orientation": "landscape"}}, "ok",
         has("landscape")),
        ("word_page_orientation", {"input": {"file_path": D, "action": "set", "orientation": "sideways"}}, "error",
         "orientation must be"),
        ("word_add_image", {"input": {"file_path": D, "image_path": "/logo.png", "identifier": "body.p.1"}}, "ok",
         has("img0")),
        ("word_add_image", {"input": {"file_path": D, "image_path": "/none.png", "identifier": "body.p.1"}}, "error",
         "none.png"),
        ("word_modify_image", {"input": {"file_path": D, "image_index": 0, "operation": "rotate", "rotation": 90}},
         "ok", has("rotate")),
        ("word_modify_image", {"input": {"file_path": D, "image_index": 0, "operation": "crop"}}, "error",
         "operation must be"),
        ("word_read_image", {"file_path": D, "annotation": "img0"}, "ok", image),
        ("word_read_image", {"file_path": D, "annotation": "img9"}, "error", "not found"),
        ("word_delete_content_text", {"file_path": D, "identifier": "body.p.0", "scope": "element"}, "ok", has("Removed")),
        ("word_delete_content_text", {"file_path": D, "identifier": "body.p.0", "scope": "all"}, "error", "scope must be"),
        ("word_delete_document", {"file_path": D}, "ok", lambda *_: not (fs / D[1:]).exists() or pytest.fail()),
        ("word_delete_document", {}, "error", "file_path: Field required"),
        # powerpoint
        ("powerpoint_create_deck", {"request": {"directory": "/Outputs", "file_name": "d.pptx", "slides": [
            {"layout": "title", "title": "Deck"},
            {"layout": "title_and_content", "title": "Points", "bullets": {"items": ["a", "b"]}}]}}, "ok",
         has("2 slide(s)")),
        ("powerpoint_create_deck", {"request": {"directory": "/Outputs", "file_name": "e.pptx", "slides": []}},
         "error", "at least 1 item"),
        ("powerpoint_add_slide", {"request": {"file_path": P, "index": 2, "title": "More", "bullets": ["c"]}}, "ok",
         has("Added slide 2")),
        ("powerpoint_add_slide", {"request": {"file_path": P, "index": -1}}, "error", "greater than or equal to 0"),
        ("powerpoint_edit_slides", {"request": {"file_path": P, "operations": [
            {"type": "update_slide_title", "index": 0, "title": "Deck v2"},
            {"type": "set_notes", "index": 1, "notes": "speak slowly"}]}}, "ok", has("Applied")),
        ("powerpoint_edit_slides", {"request": {"file_path": P, "operations": []}}, "error", "at least 1 item"),
        ("powerpoint_read_completedeck", {"request": {"file_path": P}}, "ok", has("Deck v2", "3 slide(s)")),
        ("powerpoint_read_completedeck", {"request": {"file_path": "/Outputs/none.pptx"}}, "error", "file not found"),
        ("powerpoint_read_slides", {"request": {"file_path": P, "start": 0, "end": 2000}}, "ok", has("Deck v2")),
        ("powerpoint_read_slides", {"request": {"file_path": P, "start": 0, "end": 50_000}}, "error", "end - start"),
        ("powerpoint_read_individualslide", {"request": {"file_path": P, "slide_index": 1}}, "ok", has("speak slowly")),
        ("powerpoint_read_individualslide", {"request": {"file_path": P, "slide_index": 9}}, "error", "out of range"),
        ("powerpoint_add_shape", {"request": {"file_path": P, "slide_index": 1, "shape_type": "star", "text": "!"}},
         "ok", has("Added star")),
        ("powerpoint_add_shape", {"request": {"file_path": P, "slide_index": 1, "shape_type": "blob"}}, "error",
         "shape_type"),
        ("powerpoint_insert_table", {"request": {"file_path": P, "slide_index": 2, "rows": [["k", "v"], ["a", "1"]]}},
         "ok", has("2x2 table")),
        ("powerpoint_insert_table", {"request": {"file_path": P, "slide_index": 2, "rows": [["k"]], "width": 0}},
         "error", "greater than 0"),
        ("powerpoint_insert_chart", {"request": {"presentation_path": P, "slide_index": 2,
                                                 "spreadsheet_path": "/Outputs/chart.xlsx", "sheet_name": "Data",
                                                 "data_range": "A1:B3", "position": "right"}}, "ok", has("bar chart")),
        ("powerpoint_insert_chart", {"request": {"presentation_path": P, "slide_index": 2,
                                                 "spreadsheet_path": "/Outputs/chart.xlsx", "sheet_name": "Data",
                                                 "data_range": "A1:B3", "chart_type": "bubble"}}, "error", "chart_type"),
        ("powerpoint_add_image", {"request": {"file_path": P, "image_path": "/logo.png", "slide_index": 0}}, "ok",
         has("slide0_img0")),
        ("powerpoint_add_image", {"request": {"file_path": P, "image_path": "/logo.png", "slide_index": "first"}},
         "error", "slide_index"),
        ("powerpoint_modify_image", {"request": {"file_path": P, "slide_index": 0, "image_index": 0,
                                                 "operation": "flip", "flip": "horizontal"}}, "ok", has("flip")),
        ("powerpoint_modify_image", {"request": {"file_path": P, "slide_index": 0, "image_index": 0,
                                                 "operation": "blur"}}, "error", "operation"),
        ("powerpoint_read_image", {"request": {"file_path": P, "annotation": "slide0_img0"}}, "ok", image),
        ("powerpoint_read_image", {"request": {"file_path": P, "annotation": "slide0_img5"}}, "error", "not found"),
        ("powerpoint_delete_deck", {"request": {"file_path": P}}, "ok", lambda *_: not (fs / P[1:]).exists() or pytest.fail()),
        ("powerpoint_delete_deck", {"request": {}}, "error", "request.file_path: Field required"),
        # pdfs
        ("pdfs_read_pdf_pages", {"input": {"file_path": pdf}}, "ok", has("--- page 1 ---")),
        ("pdfs_read_pdf_pages", {"input": {"file_path": pdf, "pages": [99]}}, "error", "out of range"),
        ("pdfs_create_pdf", {"input": {"directory": "/Outputs", "file_name": "n.pdf", "content": [
            {"type": "heading", "text": "Notice"}, {"type": "paragraph", "text": "Settlement agreed"}]}}, "ok",
         has("PDF n.pdf created")),
        ("pdfs_create_pdf", {"input": {"directory": "/Outputs", "file_name": "x.pdf", "content": "text"}}, "error",
         "input.content"),
        ("pdfs_search_pdf", {"file_path": N, "query": "settlement"}, "ok", has("[Settlement]")),
        ("pdfs_search_pdf", {"file_path": N}, "error", "query: Field required"),
        ("pdfs_read_page_as_image", {"file_path": N, "page_number": 1}, "ok", image),
        ("pdfs_read_page_as_image", {"file_path": N, "page_number": 5}, "error", "out of range"),
        ("pdfs_read_image", {"file_path": "/img.pdf", "annotation": "page1_img0"}, "ok", image),
        ("pdfs_read_image", {"file_path": "/img.pdf", "annotation": "page1_img3"}, "error", "not found"),
        # mail
        ("mail_list_mails", {"limit": 2}, "ok", js(lambda r: len(r["mails"]) == 2 and r["has_more"])),
        ("mail_list_mails", {"limit": 0}, "error", "limit: Input should be greater than or equal to 1"),
        ("mail_read_mail", {"mail_id": mail_id}, "ok", has(f"mail_id: {mail_id}")),
        ("mail_read_mail", {"mail_id": "<nope@x>"}, "error", "no mail"),
        ("mail_search_mail", {"input": {"from_email": "@", "limit": 3}}, "ok", js(lambda r: len(r["mails"]) == 3)),
        ("mail_search_mail", {"input": {"query": "x"}}, "error", "input.query: Extra inputs are not permitted"),
        ("mail_send_mail", {"input": {"from_email": me, "to_email": "cfo@client.example", "subject": "Numbers",
                                      "body": "Attached.", "attachments": ["/t.csv"]}}, "ok",
         js(lambda r: r["success"] and r["recipients_count"] == 1)),
        ("mail_send_mail", {"input": {"to_email": "cfo@client.example", "subject": "s", "body": "b"}}, "error",
         "input.from_email: Field required"),
        ("mail_reply_mail", {"input": {"original_mail_id": mail_id, "body": "Thanks"}}, "ok", js(lambda r: r["success"])),
        ("mail_reply_mail", {"input": {"original_mail_id": mail_id}}, "error", "input.body: Field required"),
        ("mail_reply_all_mail", {"input": {"original_mail_id": mail_id, "body": "Thanks all", "body_format": "html"}},
         "ok", js(lambda r: r["success"])),
        ("mail_reply_all_mail", {"input": {"original_mail_id": "<nope@x>", "body": "x"}}, "error", "no mail"),
        ("mail_forward_mail", {"input": {"original_mail_id": mail_id, "to_email": ["dana@client.example"],
                                         "body": "FYI"}}, "ok", js(lambda r: r["success"])),
        ("mail_forward_mail", {"input": {"original_mail_id": mail_id}}, "error", "input.to_email: Field required"),
        # calendar
        ("calendar_list_events", {"request": {"limit": 5}}, "ok", js(lambda r: len(r["events"]) == 5)),
        ("calendar_list_events", {"request": {"limit": 101}}, "error", "less than or equal to 100"),
        ("calendar_create_event", {"request": {
            "summary": "Replay sync", "start": day, "end": end, "attendees": [{"email": "cfo@client.example"}],
            "reminders": {"useDefault": False, "overrides": [{"method": "popup", "minutes": 15}]},
            "recurrence": ["RRULE:FREQ=WEEKLY;COUNT=2"], "colorId": "3"}}, "ok", keep("event", "event_id")),
        ("calendar_create_event", {"request": {"summary": "x", "start": day, "end": end, "reminders": {
            "overrides": [{"method": "sms", "minutes": 5}]}}}, "error", "method"),
        ("calendar_read_event", lambda st: {"request": {"event_id": st["event"]}}, "ok",
         js(lambda r: r["recurrence"] == ["RRULE:FREQ=WEEKLY;COUNT=2"] and r["colorId"] == "3")),
        ("calendar_read_event", {"request": {}}, "error", "request.event_id: Field required"),
        ("calendar_update_event", lambda st: {"request": {"event_id": st["event"], "location": "Room 1"}}, "ok",
         js(lambda r: r["success"])),
        ("calendar_update_event", {"request": {"event_id": "nope", "location": "x"}}, "error", "no event"),
        ("calendar_delete_event", lambda st: {"request": {"event_id": st["event"]}}, "ok", js(lambda r: r["success"])),
        ("calendar_delete_event", lambda st: {"request": {"event_id": st["event"]}}, "error", "no event"),
        # chat
        ("chat_list_channels", {"request": {"limit": 1, "page": 0}}, "ok", js(lambda r: len(r["channels"]) == 1)),
        ("chat_list_channels", {"request": {"limit": "all"}}, "error", "request.limit"),
        ("chat_get_channel_history", {"request": {"channel_id": channel, "limit": 3}}, "ok",
         js(lambda r: len(r["messages"]) <= 3 and r["channel_id"] == channel)),
        ("chat_get_channel_history", {"request": {"channel_id": "nope"}}, "error", "no channel"),
        ("chat_get_thread_replies", {"request": {"channel_id": channel, "post_id": history[0]["id"]}}, "ok",
         js(lambda r: r["messages"][0]["message_id"] == history[0]["id"])),
        ("chat_get_thread_replies", {"request": {"channel_id": channel, "post_id": "m-nope"}}, "error", "no message"),
        ("chat_get_users", {"request": {}}, "ok", js(lambda r: r["total"] >= 1)),
        ("chat_get_users", {"request": {"page": -1}}, "error", "page >= 0"),
        ("chat_get_user_profile", {"request": {"user_id": user}}, "ok", js(lambda r: r["user_id"] == user)),
        ("chat_get_user_profile", {"request": {"user_id": "u_nobody"}}, "error", "no user"),
        ("chat_post_message", {"request": {"channel_id": channel, "message": "Replay post"}}, "ok",
         keep("post", "message_id")),
        ("chat_post_message", {"request": {"channel_id": channel}}, "error", "request.message: Field required"),
        ("chat_reply_to_thread", lambda st: {"request": {"channel_id": channel, "post_id": st["post"],
                                                         "message": "Replay reply"}}, "ok",
         js(lambda r: r["thread_id"] is not None)),
        ("chat_reply_to_thread", {"request": {"channel_id": channel, "post_id": "m-nope", "message": "x"}},
         "error", "no message"),
        ("chat_add_reaction", lambda st: {"request": {"channel_id": channel, "post_id": st["post"],
                                                      "emoji_name": "👍"}}, "ok", js(lambda r: r["reactions"] == {"👍": 1})),
        ("chat_add_reaction", lambda st: {"request": {"channel_id": channel, "post_id": st["post"]}}, "error",
         "request.emoji_name: Field required"),
        ("chat_delete_post", lambda st: {"request": {"channel_id": channel, "post_id": st["post"]}}, "ok",
         has("deleted")),
        ("chat_delete_post", lambda st: {"request": {"channel_id": channel, "post_id": st["post"]}}, "error",
         "already deleted"),
    ]  # fmt: skip


def test_every_upstream_tool_replays_valid_and_invalid_calls(world: WorldRoots) -> None:
    server, _, missing = build_server(world)
    assert missing == []
    plan = cases(world)
    state: dict[str, Any] = {}
    done: dict[str, set[str]] = {}
    failures: list[str] = []

    async def replay() -> None:
        async with Client(server) as client:
            for i, (tool, args, outcome, expect) in enumerate(plan):
                arguments = args(state) if callable(args) else args
                r = await client.call_tool(tool, arguments, raise_on_error=False)
                text = "\n".join(
                    getattr(b, "text", None) or f"[image {getattr(b, 'mimeType', '')}]"
                    for b in r.content
                )
                where = f"case {i}: {tool}({json.dumps(arguments)[:200]})"
                if outcome == "error" and not (r.is_error and expect in text):
                    failures.append(
                        f"{where}: expected an error with {expect!r}, got {text[:400]!r}"
                    )
                elif outcome == "ok" and r.is_error:
                    failures.append(f"{where}: {text[:400]}")
                elif outcome == "ok":
                    try:
                        expect(text, state)
                    except (AssertionError, pytest.fail.Exception, KeyError) as e:
                        failures.append(f"{where}: {e}")
                done.setdefault(tool, set()).add(outcome)

    asyncio.run(replay())
    assert not failures, "\n".join(failures)
    kwrl_name = {v: k for k, v in UPSTREAM_SERVER.items()}
    every = {f"{kwrl_name[server_]}_{name}" for server_, name in specs()}
    assert {t for t, seen in done.items() if seen == {"ok", "error"}} == every
    # effects the results alone do not show
    sent = list(mailbox.mbox(world.app_dir("mail") / "sent.mbox"))
    assert [m["Subject"] for m in sent][:1] == ["Numbers"] and len(sent) == 4
    assert any(p.get_filename() == "t.csv" for p in sent[0].walk())
    assert (
        "Replay sync" not in (world.app_dir("calendar") / "calendar.ics").read_text()
    )  # deleted again
