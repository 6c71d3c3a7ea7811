"""Yuanbao beyond the conformance suite: its five tools in a real chat turn over the fake's socket,
a refused sign-in, and the tools outside a connected gateway."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging.yuanbao import APP_KEY, APP_SECRET, BOT_ID, GROUP, YuanbaoDriver
from fakes.model_server import Reply, call
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, last_user

STEPS = [("yb_search_sticker", {"query": "thumbs up"}),
         ("yb_send_sticker", {"sticker": "点赞", "chat_id": f"group:{GROUP}"}),
         ("yb_query_group_members", {"group_code": GROUP, "action": "list_bots"}),
         ("yb_send_dm", {"group_code": GROUP, "name": "Bob", "message": "hello bob"}),
         ("yb_query_group_info", {"group_code": GROUP}),
         ("yb_query_group_info", {"group_code": "nope"}),
         ("yb_query_group_members", {"group_code": "other-group"}),
         ("yb_send_dm", {"user_id": "u-stranger", "message": "hi"}),
         ("yb_send_sticker", {"sticker": "159", "chat_id": "group:other-group"})]


def tool_turn(body: dict[str, Any]) -> Reply:
    turn = body["messages"][max(i for i, m in enumerate(body["messages"]) if m["role"] == "user"):]
    done = [m for m in turn if m["role"] == "tool"]
    if last_user(body) != "use your tools" or len(done) >= len(STEPS):
        return Reply(content="done: " + " | ".join(m["content"] for m in done))
    name, args = STEPS[len(done)]
    return call(name, args)


def test_the_five_tools_in_a_chat_turn(hermes_home: Path, model_server: Any) -> None:
    driver = YuanbaoDriver()
    driver.allowed(["alice", "bob"])  # bob is a member of the group too
    server = model_server(tool_turn)
    gateway = GatewayThread(hermes_home, server.url, [driver.adapter()], secrets=driver.secrets,
                            access={"yuanbao": PlatformAccess(allow_users=frozenset(driver.allowed(["alice"])))},
                            toolsets={"yuanbao": ["yuanbao"]})
    try:
        driver.say("alice", "use your tools")
        answer = driver.wait_for(lambda ps: [p for p in ps if p.text.startswith("done:")])[0]
        assert answer.chat == driver.group
        results = [json.loads(m["content"]) for m in server.requests[-1]["messages"] if m["role"] == "tool"]
        found, sticker, bots, dm, info, missing, other_group, stranger, elsewhere = results
        assert found["stickers"][0]["name"] == "点赞" and found["stickers"][0]["sticker_id"] == "159"
        posted = next(p for p in driver.posts if p.kind == "sticker")
        assert posted.chat == driver.group and sticker["sent"] is True
        assert posted.extra == {"sticker_id": "159", "package_id": "1003", "width": 128, "height": 128,
                                "formats": "png", "name": "点赞"}
        assert {m["user_id"] for m in bots["members"]} == {BOT_ID, "yb-ai"}
        assert dm["chat_id"] == "direct:u-bob"
        assert [p.text for p in driver.posts if p.chat == "direct:u-bob"] == ["hello bob"]
        assert info == {"group_code": GROUP, "group_name": "Hermes testers", "member_count": 4,
                        "owner": {"user_id": "u-alice", "nickname": "alice"}}
        # scoped to this chat: another group is not looked at, strangers get no direct message
        assert "only the group this chat is in" in missing["error"]
        assert "only the group this chat is in" in other_group["error"]
        assert "not a member of this group" in stranger["error"]
        assert "stickers go only to this chat" in elsewhere["error"]
        assert not [p for p in driver.posts if p.chat in ("direct:u-stranger", "group:other-group")]
        assert driver.acked, "pushes were not acknowledged"
        assert GROUP in driver.typing  # the reply heartbeat while the answer was written
        assert all(b["auth_info"]["token"] and b["device_info"]["instance_id"] == "17" for b in driver.bound)
    finally:
        gateway.stop()
        driver.close()


def test_a_wrong_app_secret_is_refused_at_sign_in_and_never_shown() -> None:
    from hermes.surfaces.messaging.adapter import PlatformError
    from hermes.surfaces.messaging.platforms.yuanbao import YuanbaoAdapter

    driver = YuanbaoDriver()
    wrong = "yb-secret-not-the-right-one-123"
    adapter = YuanbaoAdapter(APP_KEY, wrong, api=driver.api, ws_url=driver.ws.url)

    async def attempt() -> str:
        try:
            await adapter.connect()
        except PlatformError as exc:
            return str(exc)
        finally:
            await adapter.close()
        return "connected"

    try:
        said = asyncio.run(attempt())
        assert "sign-token refused" in said and "invalid signature" in said
        assert wrong not in said and APP_SECRET not in said
        assert driver.bound == []  # the socket was never opened
    finally:
        driver.close()


def test_the_tools_say_plainly_when_yuanbao_is_not_connected() -> None:
    from hermes.errors import ToolError
    from hermes.tools.registry import registry
    from hermes.tools.yuanbao import tool

    entry = registry.get("yb_send_dm")
    assert entry is not None and entry.toolset == "yuanbao"
    assert tool._available() != True  # noqa: E712 — (False, reason) here
    with pytest.raises(ToolError, match="not connected"):
        asyncio.run(tool.query_group_info({"group_code": GROUP}))
    with pytest.raises(ToolError, match="media_files"):
        asyncio.run(tool.send_dm({"user_id": "u-x", "message": "hi", "media_files": [{"path": "/etc/passwd"}]}))
    with pytest.raises(ToolError, match="chat_id"):
        asyncio.run(tool.send_sticker({"sticker": "ok", "chat_id": "u-x"}))


def test_a_yuanbao_table_is_read_and_checked(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.surfaces.messaging import config as gwconfig
    from hermes.surfaces.messaging.platforms.yuanbao import YuanbaoAdapter
    from surfaces.messaging.harness import settings_for

    monkeypatch.delenv("YUANBAO_APP_SECRET", raising=False)
    tables = ("gateway:\n  platforms:\n    yuanbao:\n      app_id: k1\n      api_url: http://127.0.0.1:9/x\n"
              "    yb2:\n      type: yuanbao\n")
    configs = {c.name: c for c in gwconfig.platforms(settings_for(hermes_home, "http://127.0.0.1:9", tables))}
    assert configs["yuanbao"].problem == "YUANBAO_APP_SECRET is not set"
    monkeypatch.setenv("YUANBAO_APP_SECRET", APP_SECRET)
    configs = {c.name: c for c in gwconfig.platforms(settings_for(hermes_home, "http://127.0.0.1:9", tables))}
    assert configs["yuanbao"].problem == "" and "app_id is not set" in configs["yb2"].problem
    adapter = gwconfig.build_adapter(configs["yuanbao"])
    assert isinstance(adapter, YuanbaoAdapter) and adapter.api == "http://127.0.0.1:9/x"
    assert APP_SECRET in configs["yuanbao"].secrets  # so the gateway masks it in logs


def test_a_voice_message_is_transcribed_and_a_strangers_never_fetched(hermes_home: Path, model_server: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes.messaging.yuanbao import TOKEN
    from fakes.vendors.fal import FastServerThread
    from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio
    from surfaces.messaging.harness import scripted

    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "sk-voice-test-key-123456")
    stt = FakeOpenAIAudio(key="sk-voice-test-key-123456", transcript="what is the weather")
    driver = YuanbaoDriver()
    driver.voice_dir = hermes_home / "cache" / "voice"
    access = {"yuanbao": PlatformAccess(allow_users=frozenset(driver.allowed(["alice"])))}
    with FastServerThread(stt.app) as audio_server:
        server = model_server(scripted)
        stt_config = f"stt:\n  provider: openai\n  openai:\n    base_url: {audio_server.url}/v1\n"
        gateway = GatewayThread(hermes_home, server.url, [driver.adapter()], secrets=driver.secrets, access=access,
                                extra_config=stt_config)
        try:
            driver.say_voice("mallory", b"\x00" * 40_000)  # not allowed, never paired
            driver.say("alice", "after them", direct=True)
            driver.wait_for(lambda ps: [p for p in ps if p.text == "re: after them"])
            assert driver.resource_asks == [] and driver.file_fetches == [] and not driver.voice_dir.exists()

            driver.say_voice("alice", FAKE_AUDIO["opus"])
            driver.wait_for(lambda ps: [p for p in ps if "re: [voice message]" in p.text])
            assert last_user(server.requests[-1]) == '[voice message] "what is the weather"'
            assert stt.uploads[0]["file"][1] == FAKE_AUDIO["opus"]
            assert driver.resource_asks == [{"X-ID": BOT_ID, "X-Token": TOKEN, "X-Source": "bot"}]
            assert driver.file_fetches == [{"X-ID": "", "X-Token": "", "X-Source": ""}]  # no token to the storage
            assert driver.voice_dir.is_dir() and not list(driver.voice_dir.iterdir())  # deleted once heard

            driver.resource_url = "http://169.254.169.254/latest/meta-data.m4a"  # not a Tencent host
            driver.say_voice("alice", FAKE_AUDIO["opus"])
            driver.wait_for(lambda ps: [p for p in ps if p.text == "[voice message could not be downloaded]"])
            assert len(driver.file_fetches) == 1
        finally:
            gateway.stop()
            driver.close()


def test_pings_keep_the_connection_and_two_unanswered_end_it() -> None:
    from hermes.surfaces.messaging.platforms.yuanbao import YuanbaoAdapter

    driver = YuanbaoDriver()
    driver.ping_reply_id = ""  # answered, but without echoing the ping's msg_id
    adapter = YuanbaoAdapter(APP_KEY, APP_SECRET, api=driver.api, ws_url=driver.ws.url, ping_seconds=0.2)

    async def pings() -> int:
        return len([c for c, _ in driver.requests if c == "ping"])

    async def run() -> None:
        async def ignore(_: Any) -> None:
            return None

        await adapter.connect()
        listening = asyncio.create_task(adapter.listen(ignore))
        try:
            for _ in range(200):
                if await pings() >= 4:
                    break
                await asyncio.sleep(0.05)
            assert await pings() >= 4 and not listening.done()  # answered pings keep it open
            driver.answer_pings = False
            await asyncio.wait_for(listening, 20)  # two unanswered: the adapter closes, listen ends
        finally:
            await adapter.close()

    try:
        asyncio.run(run())
    finally:
        driver.close()
