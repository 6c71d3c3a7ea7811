"""Structured access logs: one JSON line per request, without secrets.

Fields: ``ts`` (UTC, ms), ``method``, ``host``, ``path``, ``query`` (values of parameters whose name
suggests a secret — ``token``, ``key``, ``secret``, ``code``, ``login``, ``password``, ``signature``,
``auth`` — replaced by ``***``), ``status``, ``latency_ms``, ``user`` (the authenticated user's id,
``admin`` or null) and ``client``. Headers and bodies are never logged, so neither are tokens, refresh
tokens nor vendor keys. Written to stderr (``access_log = "-"``), appended to a file (a path), or not
at all (``"off"``).
"""

from __future__ import annotations

import json
import re
import sys
import time
from typing import IO
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_SECRET_PARAM = re.compile(r"token|key|secret|code|login|password|passwd|signature|auth|session", re.IGNORECASE)


def redact_query(raw: bytes) -> str:
    """The query string with secret-looking parameter values masked (and long values cut)."""
    if not raw:
        return ""
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    clean = [(k, "***" if _SECRET_PARAM.search(k) else v[:200]) for k, v in pairs[:50]]
    return urlencode(clean, safe="*")


class LogSink:
    """Where access lines go: ``-`` (stderr), ``off`` (nowhere) or a file path (opened on first use,
    appended, line-buffered, closed by :meth:`close` when the server stops)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._stream: IO[str] | None = None

    @property
    def enabled(self) -> bool:
        return self.target != "off"

    def write(self, line: str) -> None:
        if self.target == "-":
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            return
        if self._stream is None:
            self._stream = open(self.target, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed in close()
        self._stream.write(line + "\n")

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None


class AccessLogMiddleware:
    """Pure ASGI middleware (no per-request task or body buffering)."""

    def __init__(self, app: ASGIApp, sink: LogSink) -> None:
        self.app = app
        self.sink = sink

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.sink.enabled:
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        started = time.perf_counter()
        status = 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            self._write(scope, state, status, (time.perf_counter() - started) * 1000)

    def _write(self, scope: Scope, state: dict[str, object], status: int, latency_ms: float) -> None:
        host = ""
        for name, value in scope.get("headers", ()):
            if name == b"host":
                host = value.decode("latin-1")
                break
        client = scope.get("client")
        now = time.time()
        record = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z",
            "method": scope.get("method"),
            "host": host,
            "path": scope.get("path"),
            "query": redact_query(scope.get("query_string", b"")),
            "status": status,
            "latency_ms": round(latency_ms, 3),
            "user": state.get("gw_user"),
            "client": client[0] if client else None,
        }
        self.sink.write(json.dumps(record, separators=(",", ":")))
