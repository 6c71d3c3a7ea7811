"""The scripted model server against the real ``openai`` client (and raw HTTP for the wire format)."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from fakes import Reply, ScriptedModelServer, call, error, text

MESSAGES: list[Any] = [{"role": "user", "content": "What is the weather in London?"}]


def client_for(server: ScriptedModelServer, **kwargs: Any) -> OpenAI:
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 10)
    return OpenAI(base_url=server.url, api_key="sk-test", **kwargs)


def raw_post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers.items()), resp.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers.items()), exc.read()


def sse_payloads(raw: bytes) -> list[str]:
    events = raw.decode().split("\n\n")
    assert events[-1] == "", "the stream must end with a blank line"
    out = []
    for event in events[:-1]:
        assert event.startswith("data: "), event
        out.append(event[len("data: ") :])
    return out


# -- helpers ----------------------------------------------------------------------------------------
def test_helpers_build_replies() -> None:
    assert text("hi") == Reply(content="hi")
    one = call("weather", {"location": "London"})
    assert one.tool_calls == [("weather", {"location": "London"})]
    assert one.content is None
    flat = call("a", {"x": 1}, "b", '{"y": 2}', content="thinking")
    paired = call("a", {"x": 1}, ("b", '{"y": 2}'), content="thinking")
    assert flat == paired
    assert flat.tool_calls == [("a", {"x": 1}), ("b", '{"y": 2}')]
    assert flat.content == "thinking"
    err = error(429, "slow down", retry_after="0", x_custom="1")
    assert (err.status, err.error_message) == (429, "slow down")
    assert err.headers == {"retry-after": "0", "x-custom": "1"}
    with pytest.raises(ValueError):
        call("a", {}, "b")


# -- non-streaming ------------------------------------------------------------------------------------
def test_non_streaming_text(model_server: Any) -> None:
    server = model_server([text("It is sunny in London.")], model="fake-1")
    with client_for(server) as client:
        resp = client.chat.completions.create(model="fake-1", messages=MESSAGES, temperature=0)
    choice = resp.choices[0]
    assert choice.message.content == "It is sunny in London."
    assert choice.message.role == "assistant"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert resp.object == "chat.completion"
    assert resp.model == "fake-1"
    assert resp.usage is not None
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens > 0
    assert server.requests == [{"model": "fake-1", "messages": MESSAGES, "temperature": 0}]
    assert server.request_headers[0].get("authorization") == "Bearer sk-test"


def test_non_streaming_tool_calls_with_unique_ids(model_server: Any) -> None:
    server = model_server(
        [
            call("weather", {"location": "London"}, ("web_search", '{"query": "rain"}')),
            call("weather", {"location": "Paris", "units": "metric"}),
            text("done"),
        ]
    )
    with client_for(server) as client:
        first = client.chat.completions.create(model="m", messages=MESSAGES)
        second = client.chat.completions.create(model="m", messages=MESSAGES)
        third = client.chat.completions.create(model="m", messages=MESSAGES)
    calls = first.choices[0].message.tool_calls
    assert calls is not None
    assert [(c.id, c.type, c.function.name) for c in calls] == [
        ("call_1", "function", "weather"),
        ("call_2", "function", "web_search"),
    ]
    assert json.loads(calls[0].function.arguments) == {"location": "London"}
    assert calls[1].function.arguments == '{"query": "rain"}'  # strings are sent verbatim
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.choices[0].message.content is None
    later = second.choices[0].message.tool_calls
    assert later is not None and [c.id for c in later] == ["call_3"]
    assert third.choices[0].message.content == "done"
    assert len(server.requests) == 3
    assert server.remaining == 0


def test_explicit_finish_reason_and_usage(model_server: Any) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    server = model_server([Reply(content="cut", finish_reason="length", usage=usage)])
    with client_for(server) as client:
        resp = client.chat.completions.create(model="m", messages=MESSAGES)
    assert resp.choices[0].finish_reason == "length"
    assert resp.usage is not None and resp.usage.model_dump(exclude_none=True) == usage


def test_model_list(model_server: Any) -> None:
    server = model_server([], model="my-model")
    with client_for(server) as client:
        models = client.models.list()
        one = client.models.retrieve("my-model")
    assert [m.id for m in models.data] == ["my-model"]
    assert one.id == "my-model"
    assert server.requests == []  # only chat completions are recorded


# -- streaming --------------------------------------------------------------------------------------
def test_streaming_text_chunks(model_server: Any) -> None:
    content = "It is sunny in London today, 22 degrees."
    server = model_server([text(content)])
    with client_for(server) as client:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 3
    assert "".join(pieces) == content
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert all(c.usage is None for c in chunks)  # no usage chunk unless asked for
    assert server.requests[0]["stream"] is True


def test_streaming_usage_chunk_when_requested(model_server: Any) -> None:
    server = model_server([text("Hello world")])
    with client_for(server) as client:
        stream = client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None and last.usage.total_tokens > 0
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks[:-1])


def test_streaming_tool_calls_reassemble(model_server: Any) -> None:
    args_a = {"location": "London", "units": "metric"}
    server = model_server([call("weather", args_a, "todo_list", "{}", content="Let me check.")])
    with client_for(server) as client:
        chunks = list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    # reassemble the way an agent loop does: by index
    calls: dict[int, dict[str, Any]] = {}
    arg_chunks: dict[int, int] = {}
    content = ""
    for chunk in chunks:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            slot = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
            if tc.id:
                assert slot["id"] is None, "id is sent once, in the first delta of a call"
                slot["id"] = tc.id
                assert tc.type == "function"
            if tc.function and tc.function.name:
                slot["name"] = tc.function.name
            if tc.function and tc.function.arguments:
                slot["arguments"] += tc.function.arguments
                arg_chunks[tc.index] = arg_chunks.get(tc.index, 0) + 1
    assert content == "Let me check."
    assert calls == {
        0: {"id": "call_1", "name": "weather", "arguments": json.dumps(args_a)},
        1: {"id": "call_2", "name": "todo_list", "arguments": "{}"},
    }
    assert arg_chunks[0] >= 2 and arg_chunks[1] >= 2
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_streaming_with_the_clients_own_accumulator(model_server: Any) -> None:
    server = model_server([call("weather", {"location": "Tokyo"}), text("Rainy.")])
    with client_for(server) as client:
        with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            for _ in stream:
                pass
            first = stream.get_final_completion()
        with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
            for _ in stream:
                pass
            second = stream.get_final_completion()
    msg = first.choices[0].message
    assert msg.content is None
    assert msg.tool_calls is not None and len(msg.tool_calls) == 1
    assert msg.tool_calls[0].id == "call_1"
    assert msg.tool_calls[0].function.name == "weather"
    assert json.loads(msg.tool_calls[0].function.arguments) == {"location": "Tokyo"}
    assert first.choices[0].finish_reason == "tool_calls"
    assert second.choices[0].message.content == "Rainy."


def test_async_client_streaming(model_server: Any) -> None:
    server = model_server([text("from the async client")])

    async def main() -> str:
        async with AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0, timeout=10) as client:
            stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            out = ""
            async for chunk in stream:
                if chunk.choices:
                    out += chunk.choices[0].delta.content or ""
            return out

    assert asyncio.run(main()) == "from the async client"


def test_stream_wire_format(model_server: Any) -> None:
    server = model_server([call("weather", {"location": "Oslo"})])
    status, headers, raw = raw_post(
        f"{server.url}/chat/completions",
        {"model": "m", "messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}},
    )
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    payloads = sse_payloads(raw)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    first = chunks[0]["choices"][0]["delta"]
    assert first["role"] == "assistant"
    assert first["content"] is None  # an answer made only of tool calls
    opening = chunks[1]["choices"][0]["delta"]["tool_calls"][0]
    assert opening == {
        "index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""},
    }
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"


# -- errors -----------------------------------------------------------------------------------------
def test_rate_limit_surfaces_as_rate_limit_error(model_server: Any) -> None:
    server = model_server([error(429, "Rate limit reached", retry_after="0")])
    with client_for(server, max_retries=0) as client, pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES)
    exc = info.value
    assert exc.status_code == 429
    assert "Rate limit reached" in str(exc)
    assert exc.response.headers["retry-after"] == "0"
    assert isinstance(exc.body, dict) and exc.body["type"] == "rate_limit_error"
    assert len(server.requests) == 1


def test_rate_limit_while_streaming(model_server: Any) -> None:
    server = model_server([error(429, "busy")])
    with client_for(server) as client, pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert server.requests[0]["stream"] is True


def test_client_retries_follow_the_script(model_server: Any) -> None:
    server = model_server([error(429, "busy", retry_after_ms="1"), error(503, "down", retry_after_ms="1"), text("ok")])
    with client_for(server, max_retries=2) as client:
        resp = client.chat.completions.create(model="m", messages=MESSAGES)
    assert resp.choices[0].message.content == "ok"
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    ("status", "exc_type"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (404, openai.NotFoundError),
        (500, openai.InternalServerError),
    ],
)
def test_error_statuses_map_to_client_errors(model_server: Any, status: int, exc_type: type[Exception]) -> None:
    server = model_server([error(status, f"scripted {status}")])
    with client_for(server) as client, pytest.raises(exc_type, match=f"scripted {status}"):
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_exhausted_script_answers_500(model_server: Any) -> None:
    server = model_server([text("only one")])
    with client_for(server) as client:
        assert client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(server.requests) == 2


def test_callable_script_sees_each_body(model_server: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return text(f"tool said {last['content']}")
        return call("echo", {"said": last["content"]})

    server = model_server(script)
    with client_for(server) as client:
        first = client.chat.completions.create(model="m", messages=MESSAGES)
        tool_call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        follow = [
            *MESSAGES,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": tool_call.id, "content": "42"},
        ]
        second = client.chat.completions.create(model="m", messages=follow)
    assert json.loads(tool_call.function.arguments) == {"said": MESSAGES[0]["content"]}
    assert second.choices[0].message.content == "tool said 42"
    assert server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "42"}


def test_callable_script_that_raises_answers_500(model_server: Any) -> None:
    def script(body: dict[str, Any]) -> Reply:
        raise KeyError("boom")

    server = model_server(script)
    with client_for(server) as client, pytest.raises(openai.InternalServerError, match="script raised KeyError"):
        client.chat.completions.create(model="m", messages=MESSAGES)


def test_bad_requests_and_unknown_routes(model_server: Any) -> None:
    server = model_server([text("unused")])
    status, _, raw = raw_post(server.url + "/embeddings", {"input": "x"})
    assert status == 404 and "no route" in json.loads(raw)["error"]["message"]
    req = urllib.request.Request(server.url + "/chat/completions", data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    with info.value as resp:
        assert resp.code == 400
        assert "not JSON" in json.loads(resp.read())["error"]["message"]
    assert server.remaining == 1 and server.requests == []


# -- timing, concurrency, lifecycle -------------------------------------------------------------------
def test_delay_lets_a_client_time_out(model_server: Any) -> None:
    server = model_server([Reply(content="late", delay=5), text("on time")])
    with client_for(server, timeout=0.3) as client:
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert time.monotonic() - started < 3
        assert client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content == "on time"


def test_chunk_delay_spreads_a_stream_over_time(model_server: Any) -> None:
    server = model_server([Reply(content="one two three four", chunk_delay=0.05)])
    with client_for(server) as client:
        stamps = [time.monotonic() for _ in client.chat.completions.create(model="m", messages=MESSAGES, stream=True)]
    assert stamps[-1] - stamps[0] >= 0.15


def test_stop_does_not_wait_for_a_delayed_reply() -> None:
    server = ScriptedModelServer([Reply(content="never", delay=30)]).start()
    errors: list[BaseException] = []

    def request() -> None:
        try:
            with client_for(server, timeout=20) as client:
                client.chat.completions.create(model="m", messages=MESSAGES)
        except openai.APIError as exc:
            errors.append(exc)

    worker = threading.Thread(target=request)
    worker.start()
    deadline = time.monotonic() + 5
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    worker.join(10)
    assert time.monotonic() - started < 5
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], openai.APIConnectionError)


def test_concurrent_requests_are_all_recorded(model_server: Any) -> None:
    server = model_server(lambda body: text(body["messages"][0]["content"].upper()))
    results: dict[int, str] = {}

    def ask(i: int) -> None:
        with client_for(server) as client:
            resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"q{i}"}])
            results[i] = resp.choices[0].message.content or ""

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {i: f"Q{i}" for i in range(8)}
    assert sorted(r["messages"][0]["content"] for r in server.requests) == [f"q{i}" for i in range(8)]


def test_context_manager_and_restart() -> None:
    server = ScriptedModelServer([text("a")])
    with server:
        url = server.url
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with client_for(server) as client:
            assert client.models.list().data
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/models", timeout=2)
    server.add(text("b"))
    assert server.remaining == 2


def test_model_server_fixture_stops_servers(model_server: Any) -> None:
    a = model_server([text("a")])
    b = model_server([text("b")], model="other")
    assert a.url != b.url
    with client_for(b) as client:
        assert [m.id for m in client.models.list().data] == ["other"]


def test_hermes_home_fixture(hermes_home: Path) -> None:
    assert hermes_home.is_dir() and not any(hermes_home.iterdir())
    assert os.environ["HERMES_HOME"] == str(hermes_home)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL"):
        assert name not in os.environ
