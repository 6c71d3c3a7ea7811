"""Runs a real :class:`~hermes.surfaces.messaging.gateway.Gateway` on its own thread for the tests."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from fakes.model_server import Reply
from hermes.config.settings import Overrides, Settings
from hermes.store.conversations import ConversationStore
from hermes.surfaces.host import SessionHost
from hermes.surfaces.messaging.access import AccessGate, PlatformAccess
from hermes.surfaces.messaging.gateway import Gateway


def last_user(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user"))


def settings_for(home: Path, url: str, extra_config: str = "", stream: bool = False) -> Settings:
    (home / "config.yaml").write_text(
        f"model:\n  base_url: {url}\n  name: m\n  max_retries: 0\n  stream: {str(stream).lower()}\n{extra_config}")
    return Settings.load(overrides=Overrides())


class GatewayThread:
    """A gateway over ``adapters`` answering from the model at ``url``; ``owner_lines`` are what the
    owner was shown (pairing codes)."""

    def __init__(self, home: Path, url: str, adapters: list[Any], *, access: dict[str, PlatformAccess] | None = None,
                 secrets: tuple[str, ...] = (), clarify_timeout: float | None = None, extra_config: str = "",
                 stream: bool = False, toolsets: dict[str, list[str]] | None = None, **gate: Any) -> None:
        settings = settings_for(home, url, extra_config, stream)
        self.owner_lines: list[str] = []
        self.host = SessionHost(settings)
        self.access = AccessGate(ConversationStore(settings.paths.database), access or {},
                                 show_owner=self.owner_lines.append, **gate)
        self.gateway = Gateway(self.host, adapters, self.access, secrets=secrets, backoff_initial=0.05,
                               backoff_max=0.2, status_path=home / "gateway" / "status.json",
                               clarify_timeout=clarify_timeout,
                               toolsets=toolsets or {a.name: ["todo", "clarify"] for a in adapters})
        self.thread = threading.Thread(target=lambda: asyncio.run(self.gateway.run()), daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not all(s.state == "connected" for s in self.gateway.status.values()):
            if time.monotonic() > deadline:
                raise AssertionError(f"platforms did not connect: {self.gateway.snapshot()}")
            time.sleep(0.02)

    def wait_state(self, name: str, check: Any, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while not check(self.gateway.status[name]):
            if time.monotonic() > deadline:
                raise AssertionError(f"{name}: {self.gateway.status[name]}")
            time.sleep(0.02)

    def stop(self) -> None:
        self.gateway.stop()
        self.thread.join(30)
        self.access.store.close()


def scripted(body: dict[str, Any]) -> Reply:
    """The fake model of the conformance suite: what it answers depends on the last user message."""
    from fakes.model_server import call

    text = last_user(body)
    if text.startswith("long"):  # "long N": N paragraphs of about 310 characters
        count = int(text.split()[1]) if len(text.split()) > 1 and text.split()[1].isdigit() else 20
        return Reply(content="\n\n".join(f"Paragraph {i}. " + "word " * 60 for i in range(1, count + 1)))
    if text.startswith("file "):
        return Reply(content=f"Here it is.\nMEDIA: {text[5:]}")
    if text.startswith("tools"):
        # one tool call per model reply, two in all (this turn's results are those after its user message)
        turn = body["messages"][max(i for i, m in enumerate(body["messages"]) if m["role"] == "user"):]
        done = [m for m in turn if m["role"] == "tool"]
        return call("todo_list", {}) if len(done) < 2 else Reply(content="tools done")
    if text.startswith("ask"):
        turn = body["messages"][max(i for i, m in enumerate(body["messages"]) if m["role"] == "user"):]
        tool_results = [m for m in turn if m["role"] == "tool"]
        if not tool_results:
            return call("clarify", {"questions": [{"question": "Which colour?", "choices": ["red", "blue"]}]})
        return Reply(content=f"clarify said: {tool_results[-1]['content']}")
    return Reply(content=f"re: {text}")
