"""A scripted OpenAI-compatible chat-completions server for tests (standard library only).

The server speaks real HTTP on ``127.0.0.1`` (an ephemeral port) from a background thread, so the code
under test uses its ordinary HTTP client, retries, timeouts and stream parsing::

    with ScriptedModelServer([call("weather", {"location": "London"}), text("It is sunny.")]) as srv:
        client = OpenAI(base_url=srv.url, api_key="test")
        ...
    assert srv.requests[1]["messages"][-1]["role"] == "tool"

Each ``POST /v1/chat/completions`` takes the next :class:`Reply` of the script (or asks the callable
script for one, passing the request body). A request after the script ran out is answered with a 500
whose message is ``"script exhausted"``, so a test that makes more calls than it scripted notices.

When the body says ``"stream": true`` the answer is a server-sent-event stream of
``chat.completion.chunk`` objects shaped like the real API's: a first chunk with ``role``, the content
in several pieces, every tool call as deltas carrying its ``index`` (the first with ``id``, ``type`` and
the function name, the arguments spread over at least two later chunks), a final chunk with
``finish_reason``, a usage chunk with empty ``choices`` when ``stream_options.include_usage`` is set,
and ``data: [DONE]``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "ScriptedModelServer", "call", "error", "text"]

ToolCallSpec = tuple[str, "str | dict[str, Any]"]


@dataclass
class Reply:
    """One scripted answer of the fake model."""

    content: str | None = None
    #: ``(name, arguments)``; arguments given as a dict are sent as ``json.dumps(arguments)``
    tool_calls: list[tuple[str, str | dict[str, Any]]] = field(default_factory=list)
    #: a status other than 200 answers ``{"error": {"message": error_message, "type": ...}}``
    status: int = 200
    error_message: str = "scripted error"
    #: extra response headers, e.g. ``{"retry-after": "0"}``
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds to wait before answering (for timeout and interrupt tests)
    delay: float = 0.0
    #: seconds to wait between stream chunks (streaming answers only)
    chunk_delay: float = 0.0
    #: default: ``"tool_calls"`` when there are tool calls, else ``"stop"``
    finish_reason: str | None = None
    #: the ``usage`` object to report; default: rough counts derived from the request and the reply
    usage: dict[str, int] | None = None


def text(content: str) -> Reply:
    """A plain assistant message."""
    return Reply(content=content)


def call(name: str, args: str | dict[str, Any], *more: Any, content: str | None = None) -> Reply:
    """An assistant message with tool calls.

    ``call("a", {"x": 1})`` is one call; further calls follow either as pairs
    ``call("a", {...}, ("b", {...}))`` or flat ``call("a", {...}, "b", {...})``.
    """
    calls: list[tuple[str, str | dict[str, Any]]] = [(name, args)]
    rest = list(more)
    while rest:
        item = rest.pop(0)
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(f"a tool call is (name, arguments), got {item!r}")
            calls.append((item[0], item[1]))
        elif isinstance(item, str):
            if not rest:
                raise ValueError(f"tool call {item!r} has no arguments")
            calls.append((item, rest.pop(0)))
        else:
            raise TypeError(f"expected a tool name or a (name, arguments) tuple, got {item!r}")
    return Reply(content=content, tool_calls=calls)


def error(status: int, message: str = "scripted error", **headers: str) -> Reply:
    """An HTTP error answer; header keywords use ``_`` for ``-`` (``retry_after="0"``)."""
    return Reply(
        status=status,
        error_message=message,
        headers={k.replace("_", "-"): str(v) for k, v in headers.items()},
    )


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _pieces(value: str, minimum: int = 2) -> list[str]:
    """Split ``value`` into at least ``minimum`` non-empty pieces (when it is long enough)."""
    if not value:
        return []
    words = re.findall(r"\s*\S+\s*|\s+", value)
    if len(words) >= minimum:
        return words
    parts = max(1, min(len(value), max(minimum, 3)))
    size = -(-len(value) // parts)
    return [value[i : i + size] for i in range(0, len(value), size)]


def _estimate_tokens(value: Any) -> int:
    raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return max(1, len(raw) // 4)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: ScriptedModelServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedModelServer/1.0"
    #: an idle keep-alive connection is dropped after this many seconds
    timeout = 30

    # -- plumbing ---------------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-request-id", f"req_{self.server.owner._next_id()}")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # -- routes -----------------------------------------------------------------------------------
    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/v1/models":
            owner.listings += 1
            self._send_json(200, {"object": "list", "data": [owner._model_object(m) for m in owner.models]})
        elif path == f"/v1/models/{owner.model}":
            self._send_json(200, owner._model_object())
        else:
            self._send_json(404, _error_body(404, f"no route GET {self.path}"))

    def do_POST(self) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self._read_body()
        if path != "/v1/chat/completions":
            self._send_json(404, _error_body(404, f"no route POST {self.path}"))
            return
        try:
            body = json.loads(raw or b"null")
        except json.JSONDecodeError as exc:
            self._send_json(400, _error_body(400, f"request body is not JSON: {exc}"))
            return
        if not isinstance(body, dict):
            self._send_json(400, _error_body(400, "request body must be a JSON object"))
            return
        owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        reply = owner._next_reply(body)
        if reply.delay > 0 and owner._stopping.wait(reply.delay):
            return  # the server is stopping; drop the request
        if reply.status != 200:
            self._send_json(reply.status, _error_body(reply.status, reply.error_message), reply.headers)
            return
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._send_json(200, owner._completion(body, reply), reply.headers)

    def _stream(self, body: dict[str, Any], reply: Reply) -> None:
        owner = self.server.owner
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", f"req_{owner._next_id()}")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        for event in owner._chunks(body, reply, include_usage=include_usage):
            if reply.chunk_delay > 0 and owner._stopping.wait(reply.chunk_delay):
                return
            self._write_chunk(f"data: {event}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
        self.wfile.flush()


class ScriptedModelServer:
    """A fake OpenAI-compatible endpoint answering from a script (see the module docstring)."""

    def __init__(
        self, script: list[Reply] | Callable[[dict[str, Any]], Reply], *, model: str = "test-model",
        models: list[str] | None = None,
    ) -> None:
        self.model = model
        #: the ids ``GET /v1/models`` lists (default: just ``model``)
        self.models = list(models) if models is not None else [model]
        #: how many times ``GET /v1/models`` was asked
        self.listings = 0
        self._script: Callable[[dict[str, Any]], Reply] | None = script if callable(script) else None
        self._queue: list[Reply] = [] if callable(script) else list(script)
        #: JSON bodies received on /v1/chat/completions, in arrival order
        self.requests: list[dict[str, Any]] = []
        #: the request headers of those bodies (same order; names in lower case)
        self.request_headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> ScriptedModelServer:
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.owner = self
        self._server = server
        host, port = server.server_address[:2]
        self.url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-model-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            open_connections = list(self._connections)
        for conn in open_connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with self._lock:
                if not self._connections:
                    break
            time.sleep(0.01)
        self._server = None
        self._thread = None

    def __enter__(self) -> ScriptedModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- script -----------------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        """How many scripted replies are left (0 for a callable script)."""
        with self._lock:
            return len(self._queue)

    def add(self, *replies: Reply) -> None:
        """Append replies to a list script."""
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if self._script is not None:
            try:
                reply = self._script(body)
            except Exception as exc:  # a broken script must show up in the test, not hang it
                return Reply(status=500, error_message=f"script raised {type(exc).__name__}: {exc}")
            if isinstance(reply, str):
                return Reply(content=reply)
            return reply
        with self._lock:
            if not self._queue:
                return Reply(status=500, error_message="script exhausted")
            return self._queue.pop(0)

    # -- internals used by the handler ------------------------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(headers)

    def _next_id(self) -> int:
        with self._lock:
            return next(self._ids)

    def _model_object(self, model: str | None = None) -> dict[str, Any]:
        return {"id": model or self.model, "object": "model", "created": 1700000000, "owned_by": "hermes-tests"}

    def _tool_calls(self, reply: Reply) -> list[dict[str, Any]]:
        out = []
        for name, args in reply.tool_calls:
            arguments = args if isinstance(args, str) else json.dumps(args)
            with self._lock:
                call_id = f"call_{next(self._call_ids)}"
            out.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        return out

    def _usage(self, body: dict[str, Any], reply: Reply, tool_calls: list[dict[str, Any]]) -> dict[str, int]:
        if reply.usage is not None:
            return dict(reply.usage)
        prompt = _estimate_tokens(body.get("messages") or [])
        completion = _estimate_tokens(reply.content or "") if reply.content else 0
        completion += sum(_estimate_tokens(c["function"]["arguments"]) + 1 for c in tool_calls)
        completion = max(completion, 1)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _finish_reason(self, reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        tool_calls = self._tool_calls(reply)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return {
            "id": f"chatcmpl-{self._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": self._finish_reason(reply)}
            ],
            "usage": self._usage(body, reply, tool_calls),
        }

    def _chunks(self, body: dict[str, Any], reply: Reply, *, include_usage: bool) -> Iterator[str]:
        tool_calls = self._tool_calls(reply)
        base = {
            "id": f"chatcmpl-{self._next_id()}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
            payload: dict[str, Any] = {
                **base,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
            }
            if include_usage:
                payload["usage"] = None
            return json.dumps(payload)

        # like the real API: "" opens a text answer, null opens an answer made only of tool calls
        yield chunk({"role": "assistant", "content": "" if reply.content is not None else None, "refusal": None})
        for piece in _pieces(reply.content or ""):
            yield chunk({"content": piece})
        for index, tc in enumerate(tool_calls):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": tc["id"],
                            "type": "function",
                            "function": {"name": tc["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            for piece in _pieces(tc["function"]["arguments"]):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
        yield chunk({}, self._finish_reason(reply))
        if include_usage:
            yield json.dumps({**base, "choices": [], "usage": self._usage(body, reply, tool_calls)})
