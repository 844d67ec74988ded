"""The chat app reads and writes the documented JSON state under .apps_data/chat/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apps_testkit import data, demo_world, error
from fastmcp import Client

from kwrl.tasks.layout import WorldRoots
from kwrl.worlds.apps import build


@pytest.fixture
def roots(tmp_path: Path) -> WorldRoots:
    return demo_world(tmp_path)


@pytest.fixture
async def client(roots: WorldRoots):
    async with Client(build("chat", roots)) as c:
        yield c


def stored(roots: WorldRoots, channel: str) -> list[dict]:
    return json.loads((roots.app_dir("chat") / "messages" / f"{channel}.json").read_text())[
        "messages"
    ]


async def test_channels_history_and_threads(client: Client) -> None:
    channels = (await data(client, "list_channels"))["channels"]
    assert [c["channel_id"] for c in channels] == ["general", "atlas", "random"]
    page = await data(client, "list_channels", {"limit": 2, "page": 1})
    assert [c["channel_id"] for c in page["channels"]] == ["random"] and page["has_next"] is False
    hist = await data(client, "get_channel_history", {"channel_id": "#project-atlas", "limit": 100})
    assert hist["channel_id"] == "atlas"
    assert all("thread_id" not in m for m in hist["messages"])
    threaded = [m for m in hist["messages"] if m.get("reply_count")]
    assert threaded
    thread = await data(
        client,
        "get_thread_replies",
        {"channel_id": "atlas", "post_id": threaded[0]["message_id"]},
    )
    assert len(thread["messages"]) == threaded[0]["reply_count"] + 1
    newest = await data(client, "get_channel_history", {"channel_id": "atlas", "limit": 2})
    assert [m["message_id"] for m in newest["messages"]] == [
        m["message_id"] for m in hist["messages"][-2:]
    ]
    older = await data(
        client, "get_channel_history", {"channel_id": "atlas", "limit": 2, "page": 1}
    )
    assert [m["message_id"] for m in older["messages"]] == [
        m["message_id"] for m in hist["messages"][-4:-2]
    ]
    assert newest["has_next"] is True and newest["total"] == len(hist["messages"])


async def test_post_reply_react_delete_are_written_to_the_json(
    client: Client, roots: WorldRoots
) -> None:
    posted = await data(
        client, "post_message", {"channel_id": "general", "message": "Deck is ready"}
    )
    assert posted["message_id"] == "m0021"
    reply = await data(
        client,
        "reply_to_thread",
        {"channel_id": "general", "post_id": "m0021", "message": "Thanks!"},
    )
    await data(
        client, "add_reaction", {"channel_id": "general", "post_id": "m0021", "emoji_name": "🎉"}
    )
    msgs = {m["id"]: m for m in stored(roots, "general")}
    assert msgs["m0021"]["user"] == "u_ana" and msgs["m0021"]["text"] == "Deck is ready"
    assert msgs[reply["message_id"]]["thread_id"] == "m0021"
    assert msgs["m0021"]["reactions"] == {"🎉": ["u_ana"]}
    await data(client, "delete_post", {"channel_id": "general", "post_id": "m0021"})
    msgs = {m["id"]: m for m in stored(roots, "general")}
    assert msgs["m0021"]["deleted"] is True and msgs["m0021"]["text"] == ""
    hist = await data(client, "get_channel_history", {"channel_id": "general", "limit": 500})
    assert "m0021" not in [m["message_id"] for m in hist["messages"]]


async def test_users_and_profiles(client: Client) -> None:
    users = await data(client, "get_users")
    assert users["total"] == 5 and users["users"][0] == {
        "user_id": "u_ana",
        "name": "Ana Lima",
        "title": "Associate",
        "is_me": True,
    }
    assert [
        u["user_id"] for u in (await data(client, "get_users", {"limit": 2, "page": 2}))["users"]
    ] == [users["users"][4]["user_id"]]
    prof = await data(client, "get_user_profile", {"user_id": "ben.okafor@northwind.example"})
    assert prof["user_id"] == "u_ben" and prof["title"] == "Vice President"


async def test_bad_input_is_a_tool_error_and_leaves_state_alone(
    client: Client, roots: WorldRoots
) -> None:
    before = (roots.app_dir("chat") / "messages" / "general.json").read_bytes()
    assert "no channel" in await error(
        client, "post_message", {"channel_id": "nope", "message": "x"}
    )
    assert "no message" in await error(
        client, "reply_to_thread", {"channel_id": "general", "post_id": "m9999", "message": "x"}
    )
    assert "must not be empty" in await error(
        client, "post_message", {"channel_id": "general", "message": " "}
    )
    assert "no user" in await error(client, "get_user_profile", {"user_id": "u_zed"})
    msg = await error(client, "post_message", {"channel_id": "general", "text": "x"})
    # upstream's chat request models ignore unknown keys
    assert (
        msg
        == "Error calling tool 'post_message': Validation error: request.message: Field required"
    )
    assert "page >= 0" in await error(client, "get_users", {"page": -1})
    assert (roots.app_dir("chat") / "messages" / "general.json").read_bytes() == before


async def test_corrupt_state_files_are_reported_by_name(client: Client, roots: WorldRoots) -> None:
    (roots.app_dir("chat") / "channels.json").write_text("{not json")
    assert "channels.json is not valid JSON" in await error(client, "list_channels", {})
    (roots.app_dir("chat") / "users.json").write_text('{"people": []}')
    assert "users.json: expected an object with a 'users' list" in await error(
        client, "get_users", {}
    )
