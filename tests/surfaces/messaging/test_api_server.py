"""The OpenAI-compatible API server platform, driven by the real ``openai`` client."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hermes.surfaces.messaging.adapter import PlatformError
from hermes.surfaces.messaging.platforms.api_server import ApiServerAdapter
from surfaces.messaging.harness import GatewayThread, scripted

KEY = "hk-test-0123456789abcdef"


@pytest.fixture
def api(hermes_home: Path, model_server: Any) -> Iterator[tuple[ApiServerAdapter, Any]]:
    server = model_server(scripted)
    adapter = ApiServerAdapter(port=0, keys=[KEY])
    running = GatewayThread(hermes_home, server.url, [adapter], secrets=(KEY,))
    yield adapter, server
    running.stop()


def client(adapter: ApiServerAdapter, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=adapter.url, api_key=key, max_retries=0)


def test_streaming_answers_keep_one_session_per_conversation(api: tuple[ApiServerAdapter, Any]) -> None:
    adapter, model = api
    oa = client(adapter)
    headers = {"X-Hermes-Conversation": "conv-1"}
    stream = oa.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hello"}],
                                        stream=True, extra_headers=headers)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "re: hello"
    assert chunks[-1].choices[0].finish_reason == "stop"
    again = oa.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "again"}],
                                       stream=True, extra_headers=headers)
    assert "".join(c.choices[0].delta.content or "" for c in again if c.choices) == "re: again"
    contents = [m.get("content") for m in model.requests[-1]["messages"]]
    assert "hello" in contents and "re: hello" in contents  # the session kept the history
    other = oa.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "alone"}],
                                       extra_headers={"X-Hermes-Conversation": "conv-2"})
    assert other.choices[0].message.content == "re: alone"
    assert "hello" not in [m.get("content") for m in model.requests[-1]["messages"]]


def test_tool_activity_arrives_as_events(api: tuple[ApiServerAdapter, Any]) -> None:
    adapter, _ = api
    oa = client(adapter)
    chunks = list(oa.chat.completions.create(model="hermes-agent", stream=True,
                                             messages=[{"role": "user", "content": "tools please"}]))
    events = [c.model_extra["hermes_event"] for c in chunks if not c.choices and c.model_extra
              and "hermes_event" in c.model_extra]
    assert [e["type"] for e in events] == ["tool_started", "tool_finished"] * 2
    assert {e["name"] for e in events} == {"todo_list"}
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "tools done"
    whole = oa.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "tools again"}])
    assert whole.choices[0].message.content == "tools done"
    assert len((whole.model_extra or {})["hermes_events"]) == 4


def test_models_and_keys(api: tuple[ApiServerAdapter, Any]) -> None:
    adapter, model = api
    assert [m.id for m in client(adapter).models.list()] == ["hermes-agent"]
    with pytest.raises(openai.AuthenticationError):
        client(adapter, "wrong-key").chat.completions.create(
            model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
    no_auth = httpx.get(f"{adapter.url}/models")
    assert no_auth.status_code == 401 and "API key" in no_auth.json()["error"]["message"]
    bad = httpx.post(f"{adapter.url}/chat/completions", headers={"Authorization": f"Bearer {KEY}"},
                     json={"messages": [{"role": "system", "content": "x"}]})
    assert bad.status_code == 400 and "no user message" in bad.json()["error"]["message"]
    assert all(m.get("content") != "hi" for r in model.requests for m in r["messages"])


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_no_keys_means_no_server(host: str) -> None:
    # loopback is no boundary: every local program, the agent's own network-allowed commands
    # included, reaches 127.0.0.1, so a keyless server would let a command drive the agent
    keyless = ApiServerAdapter(host=host, port=0, keys=[], keys_env="MY_API_KEYS")
    with pytest.raises(PlatformError, match="without API keys: set MY_API_KEYS"):
        asyncio.run(keyless.connect())


def test_the_keys_never_reach_a_command() -> None:
    from hermes.tools.sandbox import scrub_env

    assert "HERMES_API_KEYS" not in scrub_env({"HERMES_API_KEYS": "plain-words-key", "PATH": "/bin"})


def test_server_refuses_what_a_web_page_can_send(api: tuple[ApiServerAdapter, Any]) -> None:
    adapter, model = api
    body = '{"messages": [{"role": "user", "content": "hi"}]}'
    auth = {"Authorization": f"Bearer {KEY}"}
    # a page's fetch(url, {method: "POST", mode: "no-cors", body}): text/plain, no preflight
    page = httpx.post(f"{adapter.url}/chat/completions", content=body,
                      headers={**auth, "Content-Type": "text/plain;charset=UTF-8", "Origin": "https://evil.example"})
    assert page.status_code == 403 and "other sites" in page.json()["error"]["message"]
    as_json = httpx.post(f"{adapter.url}/chat/completions", content=body,
                         headers={**auth, "Content-Type": "application/json", "Origin": "https://evil.example"})
    assert as_json.status_code == 403
    plain = httpx.post(f"{adapter.url}/chat/completions", content=body, headers={**auth, "Content-Type": "text/plain"})
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]["message"]
    assert model.requests == []  # no turn ran
    # a loopback page with the key still works
    local = httpx.post(f"{adapter.url}/chat/completions", content=body,
                       headers={**auth, "Content-Type": "application/json",
                                "Origin": f"http://localhost:{adapter.port}"}, timeout=30)
    assert local.status_code == 200 and local.json()["choices"][0]["message"]["content"] == "re: hi"
