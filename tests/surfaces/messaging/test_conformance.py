"""The adapter conformance suite: every platform adapter against its loopback fake, the same checks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging import Driver
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, scripted

PLATFORMS = ["irc", "telegram", "discord", "slack", "teams", "feishu", "yuanbao"]


@pytest.fixture(scope="module")
def ngircd() -> Iterator[Any]:
    from fakes.messaging.irc import NGIRCD, NgircdServer

    if NGIRCD is None:
        pytest.skip("ngircd is not installed (.ci/run installs it)")
    server = NgircdServer()
    yield server
    server.stop()


@pytest.fixture(params=PLATFORMS)
def driver(request: pytest.FixtureRequest) -> Iterator[Driver]:
    if request.param == "irc":
        from fakes.messaging.irc import IrcDriver

        made: Driver = IrcDriver(request.getfixturevalue("ngircd"))
    elif request.param == "telegram":
        from fakes.messaging.telegram import TelegramDriver

        made = TelegramDriver()
    elif request.param == "discord":
        from fakes.messaging.discord import DiscordDriver

        made = DiscordDriver()
    elif request.param == "slack":
        from fakes.messaging.slack import SlackDriver

        made = SlackDriver()
    elif request.param == "feishu":
        from fakes.messaging.feishu import FeishuDriver

        made = FeishuDriver()
    elif request.param == "yuanbao":
        from fakes.messaging.yuanbao import YuanbaoDriver

        made = YuanbaoDriver()
    else:
        from fakes.messaging.teams import TeamsDriver

        made = TeamsDriver()
    yield made
    made.close()


@pytest.fixture
def gateway(hermes_home: Path, model_server: Any, driver: Driver) -> Iterator[GatewayThread]:
    server = model_server(scripted)
    access = {driver.name: PlatformAccess(allow_users=frozenset(driver.allowed(["alice"])))}
    running = GatewayThread(hermes_home, server.url, [driver.adapter()], access=access, loop_max_events=8,
                            secrets=driver.secrets)
    running.model = server  # type: ignore[attr-defined]
    yield running
    running.stop()


def said(driver: Driver, chat: str, needle: str) -> Any:
    return driver.wait_for(lambda posts: [p for p in posts if p.chat == chat and needle in p.text])


def test_message_in_answer_out(driver: Driver, gateway: GatewayThread) -> None:
    driver.say("alice", "hello there", direct=True)
    said(driver, driver.dm_chat("alice"), "re: hello there")
    driver.say("alice", "in the group")
    said(driver, driver.group, "re: in the group")


def test_a_long_answer_is_split_within_the_limit(driver: Driver, gateway: GatewayThread) -> None:
    adapter = next(iter(gateway.gateway.adapters.values()))
    count = max(20, adapter.max_text // 300 + 5)  # well over one message's limit
    driver.say("alice", f"long {count}", direct=True)
    chat = driver.dm_chat("alice")
    posts = driver.wait_for(lambda ps: [p for p in ps if p.chat == chat] if any(
        f"Paragraph {count}." in p.text for p in ps) else None)
    assert len(posts) > 1
    assert all(adapter.measure(p.text) <= adapter.max_text for p in posts)
    joined = " ".join(p.text for p in posts)
    assert all(f"Paragraph {i}." in joined for i in range(1, count + 1))


def test_a_file_goes_out_as_an_attachment(driver: Driver, gateway: GatewayThread, tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("the report\n")
    driver.say("alice", f"file {report}", direct=True)
    chat = driver.dm_chat("alice")
    said(driver, chat, "Here it is.")
    if driver.supports_files:
        post = driver.wait_for(lambda ps: [p for p in ps if p.kind == "file" and p.chat == chat])[0]
        assert post.text == "report.txt" and post.extra == b"the report\n"
    else:
        said(driver, chat, "[file report.txt: this platform cannot receive files]")


def test_tool_progress_is_edited_in_place(driver: Driver, gateway: GatewayThread) -> None:
    driver.say("alice", "tools now", direct=True)
    chat = driver.dm_chat("alice")
    said(driver, chat, "tools done")
    progress = [p for p in driver.posts if p.chat == chat and "⚙ todo_list" in p.text]
    if driver.supports_edit:
        edits = [p for p in progress if p.kind == "edit"]
        assert edits and edits[-1].text.count("⚙ todo_list") == 2
        assert len([p for p in progress if p.kind == "text"]) == 1
    else:  # no edits: one new message per update
        assert len(progress) == 2


def test_a_thread_is_its_own_conversation(driver: Driver, gateway: GatewayThread) -> None:
    if not driver.supports_threads:
        pytest.skip(f"{driver.name}: {driver.thread_note}")
    driver.say("alice", "in a thread", thread="77")
    post = said(driver, driver.group, "re: in a thread")[0]
    assert post.thread == "77"
    host = gateway.host
    assert host.session_id(f"{driver.name}:{driver.group}:77") != host.session_id(f"{driver.name}:{driver.group}:")


def test_group_messages_need_a_mention(driver: Driver, gateway: GatewayThread) -> None:
    driver.say("alice", "nobody asked you", mention=False)
    driver.say("alice", "now you", mention=True)
    said(driver, driver.group, "re: now you")
    asked = [m["content"] for body in gateway.model.requests for m in body["messages"]  # type: ignore[attr-defined]
             if m["role"] == "user"]
    assert "nobody asked you" not in " ".join(asked)


def test_a_stranger_pairs_with_the_owners_code(driver: Driver, gateway: GatewayThread) -> None:
    chat = driver.dm_chat("bob")
    driver.say("bob", "let me in", direct=True)
    said(driver, chat, "pairing code")
    assert len(gateway.owner_lines) == 1
    code = gateway.owner_lines[0].rsplit(" ", 1)[1]
    driver.say("bob", "WRONGCODE", direct=True)
    said(driver, chat, "not the pairing code")
    driver.say("bob", code.lower(), direct=True)
    said(driver, chat, "Paired")
    driver.say("bob", "hi now", direct=True)
    said(driver, chat, "re: hi now")
    asked = " ".join(str(m["content"]) for b in gateway.model.requests for m in b["messages"])  # type: ignore[attr-defined]
    assert "let me in" not in asked and code not in asked


def test_a_chat_that_floods_gets_a_cool_down(driver: Driver, gateway: GatewayThread) -> None:
    for n in range(10):
        driver.say("alice", f"flood {n}")
    said(driver, driver.group, "I'll be quiet")
    said(driver, driver.group, "re: flood 7")
    asked = [m["content"] for b in gateway.model.requests for m in b["messages"] if m["role"] == "user"]  # type: ignore[attr-defined]
    assert "flood 8" not in asked and "flood 9" not in asked


def test_the_adapter_reconnects_after_the_platform_drops_it(driver: Driver, gateway: GatewayThread) -> None:
    if driver.reconnect_note:
        pytest.skip(f"{driver.name}: {driver.reconnect_note}")
    driver.say("alice", "before", direct=True)
    said(driver, driver.dm_chat("alice"), "re: before")
    driver.drop()
    gateway.wait_state(driver.name, lambda s: s.reconnects >= 1 and s.state == "connected")
    driver.after_reconnect()
    driver.say("alice", "after", direct=True)
    said(driver, driver.dm_chat("alice"), "re: after")


def test_a_malformed_event_is_logged_and_survived(driver: Driver, gateway: GatewayThread,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    adapter = next(iter(gateway.gateway.adapters.values()))
    driver.malformed()
    driver.say("alice", "still there?", direct=True)
    said(driver, driver.dm_chat("alice"), "re: still there?")
    assert adapter.malformed_events >= 1
    assert "malformed event" in caplog.text
    assert gateway.gateway.status[driver.name].reconnects == 0
