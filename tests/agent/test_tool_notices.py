"""Notes a tool result carries for the person reach the surface as notices, beside what the model gets."""

from __future__ import annotations

import json
from typing import Any

from fakes.providers import Scripted
from hermes.agent.events import Notice, RecordingSink, ToolFinished
from hermes.agent.loop import Agent
from hermes.agent.provider import Completion, ToolCall
from hermes.tools.registry import ToolRegistry
from hermes.tools.results import ToolResult
from hermes.tools.toolsets import Surface

SENTENCE = "Hermes named this Gmail account work. Rename it anytime."


def test_a_result_notice_is_shown_to_the_person() -> None:
    reg = ToolRegistry()

    def name_it(args: dict[str, Any], **kw: Any) -> ToolResult:
        return ToolResult(json.dumps({"named": "work", "announcement": SENTENCE}), metadata={"notices": [SENTENCE]})

    reg.register(name="name_it", toolset="t", handler=name_it,
                 schema={"name": "name_it", "parameters": {"type": "object", "properties": {}}})
    sink = RecordingSink()
    provider = Scripted([Completion(None, [ToolCall("c1", "name_it", "{}")]), Completion("Done.")])
    agent = Agent(provider=provider, registry=reg, sink=sink, surface=Surface.CLI, tools=("name_it",), messages=[])
    assert agent.run_turn("name my account").final == "Done."
    finished = next(i for i, e in enumerate(sink.events) if isinstance(e, ToolFinished))
    assert sink.events[finished + 1] == Notice("info", SENTENCE)
    tool_message = next(m for m in agent.messages if m["role"] == "tool")
    assert json.loads(tool_message["content"])["announcement"] == SENTENCE
