"""A scripted model drives a real GTK window on hermes's private display through the agent loop
(requirement T-CU): it takes a screenshot (the image reaches the model, never the session store), lists
the accessibility tree, types into the field and presses the button it found there; the test reads the
program's state. Without a display the tool is not offered at all."""

from __future__ import annotations

import base64
import io
import json
import os
import time
from pathlib import Path
from typing import Any

from fakes.model_server import Reply, call, text
from hermes.agent.events import RecordingSink
from hermes.agent.loop import IMAGES_NOTE
from hermes.agent.session import new_agent
from hermes.config.settings import Settings
from hermes.store.sessions import SessionStore
from hermes.tools.registry import ToolRegistry
from hermes.tools.toolsets import Surface
from tools.computer_use.support import gtk_form, need_desktop, need_gtk, read_state, write_config

TYPED = "hello from hermes"


def last_tool_result(body: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads([m for m in body["messages"] if m["role"] == "tool"][-1]["content"]))


def element(listing: dict[str, Any], role: str, name: str | None = None) -> int:
    return int(next(e["element"] for e in listing["elements"]
                    if e["role"] == role and (name is None or e["name"] == name)))


def test_a_scripted_model_fills_in_a_gtk_form_found_in_the_accessibility_tree(
        hermes_home: Path, model_server: Any) -> None:
    need_desktop()
    need_gtk()
    state = hermes_home / "form.json"
    seen: dict[str, Any] = {}
    requests: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        turn = len(requests)
        requests.append(body)
        seen[f"request{turn}"] = body
        if turn == 0:
            return call("computer_use", {"action": "screenshot"})
        if turn == 1:
            return call("computer_use", {"action": "accessibility"})
        if turn == 2:
            listing = last_tool_result(body)
            seen["listing"] = listing
            field, save = element(listing, "text"), element(listing, "push button", "Save")
            return call("computer_use", {"actions": [{"action": "type", "element": field, "text": TYPED},
                                                     {"action": "left_click", "element": save}]})
        return text("Saved the form.")

    server = model_server(model)
    write_config(hermes_home, model_url=server.url, startup=[gtk_form(state)])
    settings = Settings.load()
    store = SessionStore(settings.paths.database)
    agent = new_agent(settings, Surface.ONESHOT, RecordingSink(), requested=["computer_use"], store=store,
                      reg=ToolRegistry())
    try:
        assert agent.run_turn("Type 'hello from hermes' into the form and save it.").final == "Saved the form."
        desktop = agent.state["computer_use"].desktop
        pids = [p.pid for p in desktop.processes]
        deadline = time.monotonic() + 5
        while read_state(state).get("saved") != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert read_state(state) == {"saved": 1, "text": TYPED}
    finally:
        agent.close()
    assert "computer_use" in [t["function"]["name"] for t in seen["request0"]["tools"]]
    assert seen["listing"]["source"] == "at-spi" and seen["listing"]["active_window"] == "Hermes test form"
    assert last_tool_result(seen["request3"])["steps"][0]["typed_characters"] == len(TYPED)

    # the screenshot went to the model as an image, right after the tool result
    after_shot = seen["request1"]["messages"][-1]
    assert after_shot["role"] == "user" and after_shot["content"][0]["text"] == IMAGES_NOTE
    url = after_shot["content"][1]["image_url"]["url"]
    from PIL import Image

    assert Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size == (1280, 800)
    # ... and nowhere in the stored session
    stored = json.dumps(store.messages(agent.session_id or ""))
    assert "data:image" not in stored and "[hermes: an image from a tool, not kept]" in stored

    # the session's end ended the display and everything hermes started on it
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_without_a_display_the_model_is_not_offered_the_tool(hermes_home: Path, model_server: Any,
                                                             monkeypatch: Any) -> None:
    server = model_server([text("No desktop here.")])
    write_config(hermes_home, model_url=server.url, xvfb=str(hermes_home / "no-such-Xvfb"))
    agent = new_agent(Settings.load(), Surface.ONESHOT, RecordingSink(), requested=["computer_use"],
                      reg=ToolRegistry())
    assert agent.run_turn("Take a screenshot.").final == "No desktop here."
    assert "computer_use" not in [t["function"]["name"] for t in server.requests[0].get("tools", [])]
    reg = ToolRegistry()
    from hermes.tools.discovery import discover_builtin_tools

    discover_builtin_tools(reg)
    ready, why = reg.availability("computer_use")
    assert not ready and "no-such-Xvfb not found on PATH" in str(why)
    # the person's own display, asked for while there is none
    write_config(hermes_home, display="own")
    monkeypatch.delenv("DISPLAY", raising=False)
    from hermes.tools.computer_use.config import display_ready

    assert display_ready(Settings.load()) == (False, "computer_use.display is 'own' but DISPLAY is not set")
    monkeypatch.setenv("DISPLAY", ":987")
    ready, why = display_ready(Settings.load())
    assert not ready and "no X server answers at DISPLAY=:987" in why
    assert os.environ["DISPLAY"] == ":987"
