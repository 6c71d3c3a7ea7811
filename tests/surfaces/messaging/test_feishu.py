"""Feishu beyond the conformance suite: webhook mode's checks, the document-comment handler and its
five tools, a voice message — all against the loopback fake of the Open Platform."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.messaging.feishu import APP_ID, APP_SECRET, VERIFICATION_TOKEN, FeishuDriver
from fakes.model_server import Reply, call
from hermes.surfaces.messaging.access import PlatformAccess
from surfaces.messaging.harness import GatewayThread, last_user, scripted


@pytest.fixture
def webhook() -> Iterator[FeishuDriver]:
    driver = FeishuDriver(mode="webhook")
    yield driver
    driver.close()


@pytest.fixture
def feishu() -> Iterator[FeishuDriver]:
    driver = FeishuDriver()
    yield driver
    driver.close()


def start(home: Path, url: str, driver: FeishuDriver, **kw: Any) -> GatewayThread:
    access = {"feishu": PlatformAccess(allow_users=frozenset(driver.allowed(["alice"])))}
    return GatewayThread(home, url, [driver.adapter()], access=access, secrets=driver.secrets, **kw)


def test_webhook_mode_checks_token_signature_and_encryption(hermes_home: Path, model_server: Any,
                                                            webhook: FeishuDriver) -> None:
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, webhook)
    try:
        challenge = webhook.webhook_post({"type": "url_verification", "challenge": "c-123"})
        assert challenge.status_code == 200 and challenge.json() == {"challenge": "c-123"}
        event = {"schema": "2.0", "header": {"event_id": "e1", "event_type": "im.message.receive_v1"},
                 "event": webhook.message("alice", "text", {"text": "forged"}, direct=True)}
        assert webhook.webhook_post(event, token="not-the-token").status_code == 401
        assert webhook.webhook_post(event, sign_with="another-key").status_code == 401
        assert webhook.webhook_post(event, encrypted=False).status_code == 401
        assert webhook.webhook_post({"type": "url_verification", "challenge": "x"}, key="wrong-key").status_code == 400
        good = {**event, "header": {**event["header"], "event_id": "e2"},
                "event": webhook.message("alice", "text", {"text": "hello over https"}, direct=True)}
        assert webhook.webhook_post(good).status_code == 200
        webhook.wait_for(lambda ps: [p for p in ps if p.text == "re: hello over https"])
        assert webhook.webhook_post(good).status_code == 200  # Feishu redelivers: answered once
        time.sleep(0.5)
        assert [p.text for p in webhook.posts].count("re: hello over https") == 1
        assert [last_user(b) for b in server.requests] == ["hello over https"]
    finally:
        gateway.stop()


def comment_event(driver: FeishuDriver, user: str, *, mentioned: bool = True, comment: str = "c1",
                  reply: str = "r1") -> dict[str, Any]:
    return {"file_token": "doxcn123", "file_type": "docx", "comment_id": comment, "reply_id": reply,
            "is_mentioned": mentioned, "create_time": "1700000000000",
            "notice_meta": {"from_user_id": {"open_id": driver.user(user)}, "to_user_id": {"open_id": "ou_bot0000"},
                            "file_token": "doxcn123", "file_type": "docx", "notice_type": "comment_add"}}


def comment_model(body: dict[str, Any]) -> Reply:
    """Reads the document with feishu_doc_read, then answers with what it found."""
    tool_results = [m for m in body["messages"] if m["role"] == "tool"]
    if not tool_results:
        return call("feishu_doc_read", {"doc_token": "doxcn123"})
    return Reply(content="The plan says: " + json.loads(tool_results[-1]["content"])["content"])


def test_a_comment_mentioning_the_bot_is_answered_in_its_thread(hermes_home: Path, model_server: Any,
                                                                feishu: FeishuDriver) -> None:
    from hermes.surfaces.messaging.feishu_comment import CommentHandler

    server = model_server(comment_model)
    feishu.documents["doxcn123"] = "ship on Friday"
    for comment in ("c1", "c2", "c3"):
        feishu.comments[("doxcn123", comment)] = [
            {"reply_id": "r1", "user_id": feishu.user("alice"),
             "content": {"elements": [{"type": "text_run", "text_run": {"text": "@hermes when do we ship?"}}]}}]
    gateway = start(hermes_home, server.url, feishu)
    adapter = gateway.gateway.adapters["feishu"]
    handler = CommentHandler(gateway.host.settings, APP_ID, APP_SECRET, feishu.url,
                             PlatformAccess(allow_users=frozenset(feishu.allowed(["alice"]))),
                             lambda: adapter.bot_open_id)
    adapter.on_comment = handler  # type: ignore[attr-defined]
    try:
        feishu.push("drive.notice.comment_add_v1", comment_event(feishu, "mallory", comment="c2"))
        feishu.push("drive.notice.comment_add_v1", comment_event(feishu, "alice", mentioned=False, comment="c3"))
        feishu.push("drive.notice.comment_add_v1", comment_event(feishu, "alice"))
        post = feishu.wait_for(lambda ps: [p for p in ps if p.kind == "comment_reply"])[0]
        assert post.chat == "c1" and post.text == "The plan says: ship on Friday"
        sub_agent = server.requests[0]
        assert sorted(t["function"]["name"] for t in sub_agent["tools"]) == sorted(
            ["feishu_doc_read", "feishu_drive_list_comments", "feishu_drive_list_comment_replies",
             "feishu_drive_reply_comment", "feishu_drive_add_comment"])
        assert "when do we ship?" in last_user(sub_agent)
        feishu.push("drive.notice.comment_add_v1", comment_event(feishu, "alice"))  # the same again
        time.sleep(1)
        assert handler.answered == 1 and len(server.requests) == 2
        assert [p.chat for p in feishu.posts if p.kind == "comment_reply"] == ["c1"]
    finally:
        gateway.stop()


def test_the_feishu_tools_need_the_comment_handlers_client(feishu: FeishuDriver) -> None:
    import asyncio
    from types import SimpleNamespace

    from hermes.tools.feishu import tool
    from hermes.tools.toolsets import Surface, resolve_toolsets
    from hermes.vendors.feishu import FeishuApi

    for surface in Surface:
        assert not {"feishu_doc", "feishu_drive"} & set(resolve_toolsets(surface, ["feishu_doc", "feishu_drive"]
                                                                         ).toolsets)
    bare = SimpleNamespace(task_id="t", surface=Surface.MESSAGING, sink=None, state={}, settings=None)
    with pytest.raises(Exception, match="Feishu client not available"):
        asyncio.run(tool.doc_read({"doc_token": "doxcn123"}, session=bare))
    feishu.comments[("doxcn9", "c7")] = []
    session = SimpleNamespace(task_id="t", surface=Surface.MESSAGING, sink=None, settings=None,
                              state={"feishu": FeishuApi(APP_ID, APP_SECRET, base_url=feishu.url)})
    added = asyncio.run(tool.add_comment({"file_token": "doxcn9", "content": "a note"}, session=session))
    replied = asyncio.run(tool.reply_comment({"file_token": "doxcn9", "comment_id": "c7", "content": "a reply"},
                                             session=session))
    listed = asyncio.run(tool.list_comments({"file_token": "doxcn9"}, session=session))
    replies = asyncio.run(tool.list_comment_replies({"file_token": "doxcn9", "comment_id": "c7"}, session=session))
    assert added["comment_id"] and replied["reply_id"]
    assert {c["comment_id"] for c in listed["items"]} == {"c7", added["comment_id"]}
    assert [r["text"] for r in replies["items"]] == ["a reply"]
    with pytest.raises(Exception, match="at most 10000"):
        asyncio.run(tool.reply_comment({"file_token": "doxcn9", "comment_id": "c7", "content": "x" * 10_001},
                                       session=session))
    with pytest.raises(Exception, match="comment not found"):
        asyncio.run(tool.list_comment_replies({"file_token": "doxcn9", "comment_id": "nope"}, session=session))


def test_the_gateway_gives_feishu_its_comment_handler(hermes_home: Path) -> None:
    from hermes.config.settings import Overrides, Settings
    from hermes.surfaces.messaging.feishu_comment import CommentHandler
    from hermes.surfaces.messaging.service import build_gateway

    (hermes_home / "config.yaml").write_text(
        "model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\ngateway:\n  platforms:\n    feishu:\n"
        f"      app_id: {APP_ID}\n      allow_users: [ou_1]\n    lark:\n      type: feishu\n      app_id: {APP_ID}\n"
        "      mode: webhook\n")
    (hermes_home / ".env").write_text(f"FEISHU_APP_SECRET={APP_SECRET}\n")
    gateway, skipped = build_gateway(Settings.load(overrides=Overrides()))
    try:
        assert isinstance(gateway.adapters["feishu"].on_comment, CommentHandler)  # type: ignore[attr-defined]
        assert [(c.name, c.problem) for c in skipped] == [
            ("lark", "FEISHU_VERIFICATION_TOKEN is not set (webhook mode checks every event's Verification Token)")]
        assert VERIFICATION_TOKEN not in str(skipped)
    finally:
        gateway.host.close()
        gateway.access.store.close()


def test_a_feishu_voice_message_is_transcribed_and_answered_aloud(hermes_home: Path, model_server: Any,
                                                                  feishu: FeishuDriver,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (.ci/run installs it)")
    from fakes.vendors.fal import FastServerThread
    from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio

    for name in ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "TOOL_GATEWAY_USER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VOICE_TOOLS_OPENAI_KEY", "sk-voice-test-key-123456")
    stt = FakeOpenAIAudio(key="sk-voice-test-key-123456", transcript="what is on today")
    with FastServerThread(stt.app) as audio_server:
        server = model_server(scripted)
        gateway = start(hermes_home, server.url, feishu, extra_config=(
            f"stt:\n  provider: openai\n  openai:\n    base_url: {audio_server.url}/v1\ntts:\n  provider: espeak\n"))
        gateway.gateway.voice_replies = True
        try:
            feishu.send_voice("alice", FAKE_AUDIO["opus"])
            feishu.wait_for(lambda ps: [p for p in ps if "re: [voice message]" in p.text])
            assert last_user(server.requests[-1]) == '[voice message] "what is on today"'
            assert stt.uploads[0]["file"][1] == FAKE_AUDIO["opus"]
            spoken = feishu.wait_for(lambda ps: [p for p in ps if p.kind == "file"])[0]
            assert spoken.text.startswith("speech") and spoken.extra[:4] in (b"OggS", b"RIFF")
            deadline = time.monotonic() + 10
            while list(hermes_home.rglob("speech-*")) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not list(hermes_home.rglob("speech-*"))  # sent, then deleted
            feishu.say("alice", "typed, not spoken", direct=True)
            feishu.wait_for(lambda ps: [p for p in ps if p.text == "re: typed, not spoken"])
            time.sleep(0.5)
            assert len([p for p in feishu.posts if p.kind == "file"]) == 1
        finally:
            gateway.stop()


def test_approvals_are_card_buttons_and_forged_presses_are_dropped(hermes_home: Path, model_server: Any,
                                                                    feishu: FeishuDriver, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "build").mkdir(parents=True)

    def script(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(content="result: " + body["messages"][-1]["content"][:200])
        return call("terminal", {"command": "rm -rf build", "workdir": str(work)})

    server = model_server(script)
    gateway = start(hermes_home, server.url, feishu, extra_config=f"terminal:\n  cwd: {work}\n")
    gateway.gateway.toolsets["feishu"] = ["terminal"]
    try:
        feishu.say("alice", "clean up", direct=True)
        card = feishu.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        assert "rm -rf build" in card.text
        assert [b["text"]["content"] for b in card.extra] == ["once", "session", "always", "deny"]
        once = next(b["value"] for b in card.extra if b["text"]["content"] == "once")
        feishu.press("alice", card, "once", chat=feishu.group)  # the card's buttons, from another chat
        feishu.press("alice", card, "once", value={**once, "card": "0" * 16})  # another card's nonce
        feishu.press("alice", card, "once", value={"hc": "7", "card": once["card"]})  # no such choice
        forged = type(card)(card.kind, card.chat, card.text, card.thread, "om_not_ours", card.extra)
        feishu.press("alice", forged, "once")  # a card this bot never sent
        feishu.press("alice", card, "deny")
        feishu.wait_for(lambda ps: [p for p in ps if p.text.startswith("result:")])
        denied = json.loads([m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])
        assert "denied" in denied["error"]
        assert (work / "build").exists(), "a forged press approved the command"
        assert gateway.gateway.adapters["feishu"].malformed_events == 0
        assert len([a for a in feishu.acks if a.get("code") == 200]) >= 6  # every callback frame acknowledged

        feishu.say("alice", "clean up now", direct=True)
        card = feishu.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"][1:])[0]
        feishu.press("alice", card, "once")
        feishu.wait_for(lambda ps: len([p for p in ps if p.text.startswith("result:")]) == 2)
        assert not (work / "build").exists()
    finally:
        gateway.stop()


def test_a_card_press_at_the_webhook_is_checked_like_any_event(hermes_home: Path, model_server: Any,
                                                               webhook: FeishuDriver) -> None:
    server = model_server(scripted)
    gateway = start(hermes_home, server.url, webhook)
    try:
        webhook.say("alice", "ask me", direct=True)
        card = webhook.wait_for(lambda ps: [p for p in ps if p.kind == "buttons"])[0]
        assert "Which colour?" in card.text
        button = next(b for b in card.extra if b["text"]["content"] == "blue")
        press = {"schema": "2.0", "header": {"event_id": "press-1", "event_type": "card.action.trigger"},
                 "event": {"operator": {"open_id": webhook.user("alice")}, "token": "c-1",
                           "action": {"tag": "button", "value": button["value"]},
                           "context": {"open_message_id": card.message_id, "open_chat_id": card.chat}}}
        assert webhook.webhook_post(press, token="not-the-token").status_code == 401
        assert webhook.webhook_post(press, sign_with="another-key").status_code == 401
        assert webhook.webhook_post(press).status_code == 200
        said = webhook.wait_for(lambda ps: [p for p in ps if p.text.startswith("clarify said:")])[0]
        assert "blue" in said.text
    finally:
        gateway.stop()
