"""The mail app reads the world's mbox files and appends everything sent to sent.mbox."""

from __future__ import annotations

import mailbox
from pathlib import Path

import pytest
from apps_testkit import data, demo_world, error, text
from fastmcp import Client

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build

ME = "ana.lima@northwind.example"


@pytest.fixture
def roots(tmp_path: Path) -> WorldRoots:
    return demo_world(tmp_path)


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("mail", roots)) as c:
        yield c


def sent(roots: WorldRoots) -> list[mailbox.mboxMessage]:
    return list(mailbox.mbox(roots.app_dir("mail") / "sent.mbox"))


async def test_list_mails_pages_newest_first(client: Client) -> None:
    page = await data(client, "list_mails", {"limit": 5})
    assert page["total"] == 40
    ids = [m["mail_id"] for m in page["mails"]]
    assert ids[0] == "<demo-0039@northwind.example>"
    nxt = await data(client, "list_mails", {"limit": 5, "offset": 5})
    assert nxt["mails"][0]["mail_id"] == "<demo-0034@northwind.example>"


async def test_read_mail_shows_headers_body_and_attachments(client: Client) -> None:
    out = await text(client, "read_mail", {"mail_id": "demo-0005@northwind.example"})
    assert "subject: Engagement letter" in out
    assert "attachments: figures.csv" in out
    assert "the figure to use is" in out


async def test_search_mail_by_fields_dates_and_thread(client: Client) -> None:
    hits = await data(client, "search_mail", {"subject": "atlas", "from_email": "chen.wei"})
    assert hits["total"] >= 1
    assert all("Chen Wei" in m["from"] and "Atlas" in m["subject"] for m in hits["mails"])
    assert (await data(client, "search_mail", {"subject": "no such words zzz"}))["total"] == 0
    everything = (await data(client, "search_mail", {"limit": 100}))["total"]
    late = (await data(client, "search_mail", {"after_date": "2025-03-10", "limit": 100}))["total"]
    early = (await data(client, "search_mail", {"before_date": "2025-03-10", "limit": 100}))[
        "total"
    ]
    assert 0 < late < everything and late + early <= everything
    assert "invalid date" in await error(client, "search_mail", {"after_date": "last tuesday"})
    msg = await error(client, "search_mail", {"query": "atlas"})
    assert "input.query: Extra inputs are not permitted" in msg


async def test_send_mail_is_visible_to_list_and_in_the_sent_mbox(
    client: Client, roots: WorldRoots
) -> None:
    (roots.filesystem / "reports" / "model.csv").write_text("a,b\n1,2\n")
    out = await data(
        client,
        "send_mail",
        {
            "from_email": ME,
            "to_email": "eli.haddad@clientco.example",
            "subject": "Model",
            "body": "Attached.",
            "cc": [ME],
            "attachments": ["/reports/model.csv"],
        },
    )
    assert out["success"] is True and out["recipients_count"] == 2
    [msg] = sent(roots)
    assert msg["From"] == ME
    assert msg["To"] == "eli.haddad@clientco.example" and msg["Cc"] == ME
    parts = list(msg.walk())
    assert any(p.get_filename() == "model.csv" for p in parts)
    assert any(
        p.get_payload(decode=True) == b"Attached.\n"
        for p in parts
        if p.get_content_type() == "text/plain"
    )
    listed = await data(client, "list_mails", {"limit": 1})
    assert listed["mails"][0]["mail_id"] == msg["Message-ID"] == out["mail_id"]


async def test_reply_reply_all_and_forward_thread_correctly(
    client: Client, roots: WorldRoots
) -> None:
    parent_id = "<demo-0003@northwind.example>"
    parent = await text(client, "read_mail", {"mail_id": parent_id})
    await text(client, "reply_mail", {"original_mail_id": parent_id, "body": "Thanks"})
    await text(client, "reply_all_mail", {"original_mail_id": parent_id, "body": "Thanks all"})
    await text(
        client,
        "forward_mail",
        {"original_mail_id": parent_id, "to_email": "dana.novak@northwind.example", "body": "FYI"},
    )
    reply, reply_all, fwd = sent(roots)
    sender = parent.split("from: ")[1].split("\n")[0]
    assert reply["To"] in sender and reply["In-Reply-To"] == parent_id
    assert reply["Subject"].startswith("Re: ")
    assert ME not in (reply_all["To"] + (reply_all["Cc"] or ""))
    assert reply_all["Cc"]  # the demo mail 3 has a cc, kept on reply-all
    assert fwd["Subject"].startswith("Fwd: ") and fwd["To"] == "dana.novak@northwind.example"
    body = next(p for p in fwd.walk() if p.get_content_type() == "text/plain").get_payload(
        decode=True
    )
    assert b"Forwarded message" in body and b"FYI" in body
    threads = await data(client, "search_mail", {"thread_id": reply["X-Thread-ID"], "limit": 100})
    assert {m["mail_id"] for m in threads["mails"]} >= {
        reply["Message-ID"],
        reply_all["Message-ID"],
    }


async def test_bad_input_is_a_tool_error_and_nothing_is_sent(
    client: Client, roots: WorldRoots
) -> None:
    assert "no mail with mail_id" in await error(client, "read_mail", {"mail_id": "<nope@x>"})
    assert "invalid email" in await error(
        client,
        "send_mail",
        {"from_email": ME, "to_email": "not-an-address", "subject": "s", "body": "b"},
    )
    msg = await error(client, "send_mail", {"to_email": ME, "subject": "s", "body": "b"})
    assert (
        msg == "Error calling tool 'send_mail': Validation error: input.from_email: Field required"
    )
    assert "does not exist" in await error(
        client,
        "reply_mail",
        {
            "original_mail_id": "<demo-0003@northwind.example>",
            "body": "b",
            "attachments": ["/nope.pdf"],
        },
    )
    assert "limit: Input should be less than or equal to 100" in await error(
        client, "list_mails", {"limit": 500}
    )
    assert await error(client, "list_mails", {"limit": "many"})
    assert not (roots.app_dir("mail") / "sent.mbox").exists()
