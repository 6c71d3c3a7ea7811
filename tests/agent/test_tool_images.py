"""Images a tool returns (computer_use screenshots) reach the model and only the model: one user-role
message after the tool results, a placeholder in the stored session, the latest three kept in the live
history; such messages are not counted as the person's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.providers import Scripted
from hermes.agent.events import RecordingSink
from hermes.agent.loop import IMAGE_LEFT_OUT, IMAGES_NOTE, Agent, from_the_person
from hermes.agent.provider import Completion, ToolCall
from hermes.store.sessions import SessionStore
from hermes.tools.registry import ToolRegistry
from hermes.tools.results import ToolResult
from hermes.tools.toolsets import Surface


def url(n: int) -> str:
    return f"data:image/png;base64,SU1BR0U{n}"


def test_images_go_to_the_model_after_the_results_and_never_to_the_store(tmp_path: Path) -> None:
    reg = ToolRegistry()
    shots = iter(range(1, 10))

    def snap(args: dict[str, Any], **kw: Any) -> ToolResult:
        return ToolResult(json.dumps({"image": "attached"}), metadata={"images": [url(next(shots))]})

    reg.register(name="snap", toolset="t", handler=snap,
                 schema={"name": "snap", "parameters": {"type": "object", "properties": {}}})
    replies = [Completion(None, [ToolCall(f"c{i}", "snap", "{}")]) for i in range(4)] + [Completion("Seen.")]
    provider = Scripted(replies)
    store = SessionStore(tmp_path / "state.db")
    sid = store.create_session(surface="cli", model="m", toolsets=["t"], tools=["snap"])
    agent = Agent(provider=provider, registry=reg, sink=RecordingSink(), surface=Surface.CLI, tools=("snap",),
                  messages=[], store=store, session_id=sid)
    assert agent.run_turn("look four times").final == "Seen."

    second = provider.requests[1]
    assert second[-2]["role"] == "tool" and second[-1]["role"] == "user"
    assert second[-1]["content"] == [{"type": "text", "text": IMAGES_NOTE},
                                     {"type": "image_url", "image_url": {"url": url(1)}}]
    assert not from_the_person(second[-1]) and from_the_person(second[0])

    last = provider.requests[-1]
    shown = [p["image_url"]["url"] for m in last if isinstance(m.get("content"), list)
             for p in m["content"] if p.get("type") == "image_url"]
    assert shown == [url(2), url(3), url(4)]  # the oldest one was dropped from the live history
    assert json.dumps(last).count(IMAGE_LEFT_OUT) == 1

    stored = json.dumps(store.messages(sid))
    assert "data:image" not in stored and stored.count(IMAGE_LEFT_OUT) == 4
