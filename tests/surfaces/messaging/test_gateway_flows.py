"""Clarify and approvals in the chat over two platforms' fakes, and tokens kept out of logs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging import Driver
from fakes.messaging.telegram import TelegramDriver
from fakes.model_server import Reply, call
from hermes.redact import MASK
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, last_user, scripted


@pytest.fixture
def telegram() -> Iterator[TelegramDriver]:
    driver = TelegramDriver()
    yield driver
    driver.close()


@pytest.fixture
def irc(request: pytest.FixtureRequest) -> Iterator[Driver]:
    from fakes.messaging.irc import NGIRCD, IrcDriver, NgircdServer

    if NGIRCD is None:
        pytest.skip("ngircd is not installed (.ci/run installs it)")
    server = NgircdServer()
    driver = IrcDriver(server)
    yield driver
    driver.close()
    server.stop()


def start(home: Path, url: str, *drivers: Driver, **kw: Any) -> GatewayThread:
    access = {d.name: PlatformAccess(allow_users=frozenset(d.allowed(["alice"]))) for d in drivers}
    return GatewayThread(home, url, [d.adapter() for d in drivers], access=access,
                         secrets=tuple(s for d in drivers for s in d.secrets), **kw)


def clarify_result(server: Any) -> dict[str, Any]:
    body = server.requests[-1]
    return dict(json.loads([m for m in body["messages"] if m["role"] == "tool"][-1]["content"]))


def test_clarify_in_the_chat_on_two_platforms(hermes_home: Path, model_server: Any, telegram: TelegramDriver,
                                              irc: Driver) -> None:
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, telegram, irc)
    try:
        # telegram: a card with buttons, answered by a press
        telegram.say("alice", "ask me", direct=True)
        card = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        assert card.text == "❓ Which colour?"
        telegram.press("alice", card, "blue")
        telegram.wait_for(lambda ps: [p for p in ps if "clarify said" in p.text])
        result = clarify_result(server)
        assert result["outcome"] == "submitted" and result["responses"][0]["user_response"] == "blue"

        # the card is refused: the same question as numbered plain text, answered by number
        telegram.refuse_buttons = True
        telegram.say("alice", "ask again", direct=True)
        plain = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "text" and "1. red" in p.text])[0]
        assert "2. blue" in plain.text and "skip" in plain.text
        telegram.say("alice", "1", direct=True)
        telegram.wait_for(lambda ps: len([p for p in ps if "clarify said" in p.text]) == 2)
        assert clarify_result(server)["responses"][0]["user_response"] == "red"

        # IRC has no buttons: plain text from the start; `skip` skips
        irc.say("alice", "ask here", direct=True)
        irc.wait_for(lambda ps: [p for p in ps if "1. red" in p.text])
        irc.say("alice", "skip", direct=True)
        irc.wait_for(lambda ps: [p for p in ps if "clarify said" in p.text])
        assert clarify_result(server)["responses"][0]["status"] == "skipped"
    finally:
        gateway.stop()


def test_clarify_times_out_with_the_notice(hermes_home: Path, model_server: Any, telegram: TelegramDriver) -> None:
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, telegram, clarify_timeout=0.3)
    try:
        telegram.say("alice", "ask and wait", direct=True)
        telegram.wait_for(lambda ps: [p for p in ps if "clarify said" in p.text])
        result = clarify_result(server)
        assert result["outcome"] == "timed_out" and result["responses"][0]["status"] == "unanswered"
        assert result["notice"] == "[user did not respond within 1m]"
    finally:
        gateway.stop()


def test_a_dangerous_command_is_approved_in_the_chat(hermes_home: Path, model_server: Any,
                                                     telegram: TelegramDriver, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)

    def script(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="result: " + body["messages"][-1]["content"][:200])
        return call("terminal", {"command": "rm -rf build", "workdir": str(work)})

    server = model_server(script)
    gateway = start(hermes_home, server.url, telegram, extra_config=f"terminal:\n  cwd: {work}\n")
    gateway.gateway.toolsets["telegram"] = ["terminal"]
    try:
        telegram.say("alice", "clean up", direct=True)
        ask = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        assert "rm -rf build" in ask.text
        telegram.press("alice", ask, "deny")
        telegram.wait_for(lambda ps: [p for p in ps if p.text.startswith("result:")])
        denied = json.loads([m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])
        assert "denied" in denied["error"]

        telegram.say("alice", "clean up now", direct=True)
        ask = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"][1:])[0]
        telegram.press("alice", ask, "once")
        telegram.wait_for(lambda ps: len([p for p in ps if p.text.startswith("result:")]) == 2)
        ran = json.loads([m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])
        assert "error" not in ran and ran.get("exit_code") == 0, ran
        assert not (work / "build").exists()
        assert last_user(server.requests[-1]) == "clean up now"
        assert "approved" in telegram.texts() and "denied" in telegram.texts()
    finally:
        gateway.stop()


@pytest.mark.parametrize("platform", ["telegram", "discord", "yuanbao"])
def test_the_bot_token_never_appears_in_logs(hermes_home: Path, model_server: Any, platform: str) -> None:
    if platform == "telegram":
        driver: Driver = TelegramDriver()
    elif platform == "yuanbao":  # the app secret, and the connection token sign-token hands out
        from fakes.messaging.yuanbao import YuanbaoDriver

        driver = YuanbaoDriver()
    else:
        from fakes.messaging.discord import DiscordDriver

        driver = DiscordDriver()
    captured = io.StringIO()
    handler = logging.StreamHandler(captured)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    saved = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # httpx logs every URL (Telegram's carry the token), websockets every frame
    try:
        server = model_server(scripted)
        gateway = start(hermes_home, server.url, driver)
        try:
            driver.drop()
            gateway.wait_state(platform, lambda s: s.reconnects >= 1 and s.state == "connected")
            driver.say("alice", "after the drop", direct=True)
            driver.wait_for(lambda ps: [p for p in ps if "re: after the drop" in p.text])
            status = json.loads((hermes_home / "gateway" / "status.json").read_text())
        finally:
            gateway.stop()
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)
        driver.close()
    text = captured.getvalue()
    assert "reconnecting" in text
    if platform == "telegram":
        assert MASK in text  # the token was in log records (Bot API URLs), and was masked there
    for token in driver.secrets:
        assert token not in text and token[-12:] not in text
        assert token not in json.dumps(status)


def test_clarify_with_discord_buttons(hermes_home: Path, model_server: Any) -> None:
    from fakes.messaging.discord import DiscordDriver

    driver = DiscordDriver()
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, driver)
    try:
        driver.say("alice", "ask me")
        card = driver.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        labels = [b["label"] for row in card.extra for b in row["components"]]
        assert card.text == "❓ Which colour?" and labels == ["red", "blue", "skip"]
        driver.press("alice", card, "red")
        driver.wait_for(lambda ps: [p for p in ps if "clarify said" in p.text])
        assert clarify_result(server)["responses"][0]["user_response"] == "red"
    finally:
        gateway.stop()
        driver.close()


def test_a_streamed_answer_is_edited_into_place(hermes_home: Path, model_server: Any,
                                                telegram: TelegramDriver) -> None:
    answer = " ".join(f"word{i}" for i in range(150))
    server = model_server(lambda body: Reply(content=answer))
    gateway = start(hermes_home, server.url, telegram, stream=True)
    try:
        telegram.say("alice", "stream it", direct=True)
        chat = telegram.dm_chat("alice")
        final = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "edit" and p.text == answer])[0]
        first = next(p for p in telegram.posts if p.kind == "text" and p.chat == chat)
        assert first.message_id == final.message_id and first.text.endswith("▌")
        assert answer.startswith(first.text.removesuffix(" ▌"))
        assert not [p for p in telegram.posts if p.kind == "text" and p.text == answer]  # not sent twice
    finally:
        gateway.stop()


def test_a_voice_message_is_transcribed_into_the_turn(hermes_home: Path, model_server: Any, telegram: TelegramDriver,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.vendors.fal import FastServerThread
    from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio

    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "sk-voice-test-key-123456")
    stt = FakeOpenAIAudio(key="sk-voice-test-key-123456", transcript="turn on the lights")
    with FastServerThread(stt.app) as audio_server:
        server = model_server(scripted)
        telegram.voice_dir = hermes_home / "cache" / "voice"
        gateway = start(hermes_home, server.url, telegram,
                        extra_config=f"stt:\n  provider: openai\n  openai:\n    base_url: {audio_server.url}/v1\n")
        try:
            telegram.say_voice("alice", FAKE_AUDIO["opus"])
            telegram.wait_for(lambda ps: [p for p in ps if "re: [voice message]" in p.text])
            assert last_user(server.requests[-1]) == '[voice message] "turn on the lights"'
            assert stt.uploads[0]["file"][1] == FAKE_AUDIO["opus"]
            assert telegram.voice_dir.is_dir() and not list(telegram.voice_dir.iterdir())  # deleted once heard
            stt.transcript = ""
            telegram.say_voice("alice", FAKE_AUDIO["opus"])
            telegram.wait_for(lambda ps: [p for p in ps if p.text == "[voice message could not be transcribed]"])
        finally:
            gateway.stop()


def test_a_strangers_voice_notes_are_never_downloaded(hermes_home: Path, model_server: Any,
                                                      telegram: TelegramDriver) -> None:
    server = model_server(scripted)
    telegram.voice_dir = hermes_home / "cache" / "voice"
    gateway = start(hermes_home, server.url, telegram)
    try:
        for _ in range(5):
            telegram.say_voice("mallory", b"\x00" * 100_000)  # not allowed, never paired
        telegram.say("alice", "after them", direct=True)  # handled after the stranger's notes
        telegram.wait_for(lambda ps: [p for p in ps if p.text == "re: after them"])
        assert telegram.downloads == []
        assert not telegram.voice_dir.exists() or not list(telegram.voice_dir.iterdir())
        assert all("voice" not in last_user(r) for r in server.requests)
    finally:
        gateway.stop()


def test_an_answer_cannot_send_hermes_keys_as_attachments(hermes_home: Path, model_server: Any,
                                                          telegram: TelegramDriver,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.surfaces.appserver.auth import ensure_token
    from hermes.tools.browser.vault import Vault

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # the key goes to a file
    Vault(hermes_home).add("https://bank.example", "alice", "S3cret-Bank-Pass!")
    token = ensure_token(hermes_home)
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, telegram)
    try:
        for path in (hermes_home / "browser" / "vault.bin", hermes_home / "browser" / "vault.key", token):
            telegram.say("alice", f"file {path}", direct=True)  # the answer carries a MEDIA: line naming it
            telegram.wait_for(lambda ps, name=path.name: [p for p in ps if p.text.startswith(f"[file {name} not sent")])
        assert not [p for p in telegram.posts if p.kind == "file"]
    finally:
        gateway.stop()


def test_a_stale_approval_button_answers_nothing(hermes_home: Path, model_server: Any, telegram: TelegramDriver,
                                                 tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)

    def script(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="result: " + body["messages"][-1]["content"][:200])
        return call("terminal", {"command": "rm -rf build", "workdir": str(work)})

    server = model_server(script)
    gateway = start(hermes_home, server.url, telegram, extra_config=f"terminal:\n  cwd: {work}\n")
    gateway.gateway.toolsets["telegram"] = ["terminal"]
    stale_text = "[that button belongs to a question that is no longer open]"
    try:
        telegram.say("alice", "clean up", direct=True)
        first = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        telegram.say("alice", "deny", direct=True)  # answered by text: the card's buttons stay on screen
        telegram.wait_for(lambda ps: [p for p in ps if p.text.startswith("result:")])
        turns = len(server.requests)
        telegram.press("alice", first, "once")  # no question is open: it starts nothing
        telegram.wait_for(lambda ps: [p for p in ps if p.text == stale_text])
        assert len(server.requests) == turns

        telegram.say("alice", "clean up now", direct=True)
        second = telegram.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"][1:])[0]
        telegram.press("alice", first, "always")  # the old card, while the new one waits
        telegram.wait_for(lambda ps: len([p for p in ps if p.text == stale_text]) == 2)
        assert (work / "build").exists()
        telegram.press("alice", second, "deny")
        telegram.press("alice", second, "once")  # the same card twice: only the first press counts
        telegram.wait_for(lambda ps: len([p for p in ps if p.text.startswith("result:")]) == 2)
        telegram.wait_for(lambda ps: len([p for p in ps if p.text == stale_text]) == 3)
        denied = json.loads([m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])
        assert "denied" in denied["error"]
        assert (work / "build").exists()
    finally:
        gateway.stop()


def test_a_strangers_discord_voice_message_is_never_downloaded(hermes_home: Path, model_server: Any) -> None:
    from fakes.messaging.discord import DiscordDriver

    discord = DiscordDriver()
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, discord)
    try:
        for _ in range(3):
            discord.say_voice("mallory", b"\x00" * 50_000)  # not allowed, never paired
        discord.say("alice", "after them", direct=True)
        discord.wait_for(lambda ps: [p for p in ps if p.text == "re: after them"])
        assert discord.attachment_auth == [], "a stranger's attachment was fetched"
        voice_dir = hermes_home / "cache" / "voice"
        assert not voice_dir.exists() or not list(voice_dir.iterdir())
    finally:
        gateway.stop()
        discord.close()


def test_a_discord_voice_message_is_transcribed(hermes_home: Path, model_server: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.messaging.discord import TOKEN, DiscordDriver
    from fakes.vendors.fal import FastServerThread
    from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio

    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "sk-voice-test-key-123456")
    stt = FakeOpenAIAudio(key="sk-voice-test-key-123456", transcript="play some jazz")
    discord = DiscordDriver()
    with FastServerThread(stt.app) as audio_server:
        server = model_server(scripted)
        gateway = start(hermes_home, server.url, discord,
                        extra_config=f"stt:\n  provider: openai\n  openai:\n    base_url: {audio_server.url}/v1\n")
        try:
            discord.say_voice("alice", FAKE_AUDIO["opus"])
            discord.wait_for(lambda ps: [p for p in ps if "re: [voice message]" in p.text])
            assert last_user(server.requests[-1]) == '[voice message] "play some jazz"'
            assert stt.uploads[0]["file"][1] == FAKE_AUDIO["opus"]
            assert discord.attachment_auth == [None]  # the bot token never goes to the CDN
            assert TOKEN not in str(discord.attachment_auth)
        finally:
            gateway.stop()
            discord.close()


def test_slack_voice_clips_are_transcribed_and_never_fetched_for_strangers(
        hermes_home: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.messaging.slack import BOT_TOKEN, SlackDriver
    from fakes.vendors.fal import FastServerThread
    from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio

    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "sk-voice-test-key-123456")
    stt = FakeOpenAIAudio(key="sk-voice-test-key-123456", transcript="book the meeting room")
    slack = SlackDriver()
    slack.voice_dir = hermes_home / "cache" / "voice"
    with FastServerThread(stt.app) as audio_server:
        server = model_server(scripted)
        gateway = start(hermes_home, server.url, slack,
                        extra_config=f"stt:\n  provider: openai\n  openai:\n    base_url: {audio_server.url}/v1\n")
        try:
            for _ in range(2):
                slack.say_voice("mallory", b"\x00" * 50_000)  # not allowed, never paired
            slack.say("alice", "after them", direct=True)
            slack.wait_for(lambda ps: [p for p in ps if p.text == "re: after them"])
            assert slack.file_auth == [], "a stranger's voice clip was fetched"
            assert stt.uploads == [] and not slack.voice_dir.exists()

            slack.say_voice("alice", FAKE_AUDIO["opus"])
            slack.wait_for(lambda ps: [p for p in ps if "re: [voice message]" in p.text])
            assert last_user(server.requests[-1]) == '[voice message] "book the meeting room"'
            assert stt.uploads[0]["file"][1] == FAKE_AUDIO["opus"]
            assert slack.file_auth == [f"Bearer {BOT_TOKEN}"]  # Slack's private files want the bot token
            assert slack.voice_dir.is_dir() and not list(slack.voice_dir.iterdir())  # deleted once heard
        finally:
            gateway.stop()
            slack.close()
