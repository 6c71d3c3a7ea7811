"""Malformed arguments for the tools the agent loop answers itself (todo_list, delegate_task).

Thousands of generated payloads go through the loop's own execution path (``Agent._execute``, the same
validation and error shaping as the registry): every answer is JSON, failures are ``{"error": ...}``
naming the problem, and no exception escapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.agent.events import NullSink
from hermes.agent.loop import Agent
from hermes.agent.provider import CallOptions, Completion
from hermes.tools.discovery import discover_builtin_tools
from hermes.tools.registry import registry
from hermes.tools.toolsets import Surface


class NoModel:
    """A provider that must never be reached: delegation payloads that pass validation still need a child."""

    name = "none"
    model = "none"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        return Completion(content="child done")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
payloads = st.one_of(
    st.text(max_size=60),
    json_values.map(json.dumps),
    st.dictionaries(st.sampled_from(["todos", "merge", "goal", "tasks", "context", "toolsets", "max_iterations",
                                     "id", "x"]), json_values, max_size=5).map(json.dumps),
    st.builds(lambda items, merge: json.dumps({"todos": items, "merge": merge}),
              st.lists(st.dictionaries(st.sampled_from(["id", "content", "status"]), json_values, max_size=3),
                       max_size=4), st.booleans()),
)


def make_agent(tmp: Path) -> Agent:
    discover_builtin_tools(registry)
    return Agent(provider=NoModel(), registry=registry, sink=NullSink(), surface=Surface.ONESHOT,
                 tools=("todo_list", "delegate_task"), messages=[])


# 1,500 examples take ~40 s on a loaded 2-core machine and more under heavier load: the suite-wide
# 60 s timeout is a hang guard for single tests, too tight for this whole run
@pytest.mark.timeout(600)
@settings(max_examples=1500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["todo_list", "delegate_task"]), raw=payloads)
def test_malformed_payloads_never_escape(tmp_path_factory: Any, name: str, raw: str) -> None:
    agent = make_agent(tmp_path_factory.mktemp("fuzz"))
    text = agent.session.dispatch(name, raw).text
    result = json.loads(text)
    assert isinstance(result, dict)
    if "error" in result:
        assert isinstance(result["error"], str) and result["error"]
        assert "Traceback" not in result["error"]
        assert f"{name} failed: " not in result["error"], result  # a validation message, never a crash
