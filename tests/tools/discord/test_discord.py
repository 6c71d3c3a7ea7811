"""The Discord platform tools against a loopback Discord REST fake."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging.discord_rest import FakeDiscordRest
from hermes.tools.discovery import discover_builtin_tools
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface, resolve_toolsets

TOKEN = "discord-bot-token-abcdefghijkl"


@pytest.fixture
def discord(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDiscordRest]:
    fake = FakeDiscordRest(TOKEN)
    monkeypatch.setenv("DISCORD_BOT_TOKEN", TOKEN)
    (hermes_home / "config.yaml").write_text(f"discord:\n  api_base_url: {fake.url}\n")
    discover_builtin_tools(registry)
    yield fake
    fake.close()


def run(tool: str, **args: Any) -> dict[str, Any]:
    return dict(json.loads(registry.dispatch(tool, args)))


def test_messages_threads_and_admin_actions(discord: FakeDiscordRest) -> None:
    got = run("discord", action="fetch_messages", channel_id="700", limit=10)
    assert got["result"] == [
        {"id": "11", "author": "alice", "content": "first", "timestamp": "2026-12-01T10:00:00Z"},
        {"id": "12", "author": "bob", "content": "second", "timestamp": "2026-12-01T10:01:00Z"},
    ]
    assert discord.calls[-1][1] == "/channels/700/messages?limit=10"
    thread = run("discord", action="create_thread", channel_id="700", name="plans", auto_archive_duration=60)
    assert thread["result"]["id"] == "800"
    assert discord.calls[-1][2] == {"name": "plans", "type": 11, "auto_archive_duration": 60}
    assert run("discord_admin", action="list_guilds")["result"] == [{"id": "500", "name": "Test server"}]
    assert run("discord_admin", action="pin_message", channel_id="700", message_id="11")["result"] == "done"
    assert ("PUT", "/channels/700/pins/11", None) in discord.calls


def test_a_403_names_the_missing_permission(discord: FakeDiscordRest) -> None:
    discord.forbidden.add(r"/guilds/500/members/\d+/roles/\d+")
    got = run("discord_admin", action="add_role", guild_id="500", user_id="1", role_id="9")
    assert "403 Missing Permissions" in got["error"] and "Manage Roles" in got["error"]


def test_member_actions_need_the_members_intent(discord: FakeDiscordRest, hermes_home: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    discord.flags = 0
    got = run("discord", action="search_members", guild_id="500", query="al")
    assert "Server Members intent" in got["error"]
    assert not any("/members/search" in path for _, path, _ in discord.calls)
    discord_with = FakeDiscordRest(TOKEN[:-4] + "wxyz")  # another application, which has the intent
    try:
        discord_with.flags = 1 << 15
        # (intent answers are cached per token: a second bot is a second token)
        monkeypatch.setenv("DISCORD_BOT_TOKEN", discord_with.token)
        (hermes_home / "config.yaml").write_text(f"discord:\n  api_base_url: {discord_with.url}\n")
        found = run("discord", action="search_members", guild_id="500", query="al")
        assert found["result"][0]["username"] == "alice"
    finally:
        discord_with.close()


def test_bad_calls_are_refused_with_the_reason(discord: FakeDiscordRest, hermes_home: Path) -> None:
    assert run("discord", action="fetch_messages")["error"] == "fetch_messages needs channel_id"
    assert "must be one of" in run("discord", action="delete_message", channel_id="1", message_id="2")["error"]
    (hermes_home / "config.yaml").write_text(
        f"discord:\n  api_base_url: {discord.url}\n  server_actions: [list_guilds]\n")
    assert "not offered here" in run("discord_admin", action="list_roles", guild_id="500")["error"]
    assert "result" in run("discord_admin", action="list_guilds")


def test_only_messaging_sessions_get_them(discord: FakeDiscordRest) -> None:
    registered = registry.toolsets()
    on_discord = resolve_toolsets(Surface.MESSAGING, ["hermes-discord"], registered=registered)
    assert {"discord", "discord_admin"} <= set(on_discord.tools)
    on_cli = resolve_toolsets(Surface.CLI, ["discord", "discord_admin"], registered=registered)
    assert "discord" not in on_cli.tools and "discord_admin" not in on_cli.tools
