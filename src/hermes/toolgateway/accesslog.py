"""Structured access logs: one JSON line per request, without secrets.

Fields: ``ts`` (UTC, ms), ``method``, ``host``, ``path`` and ``query`` (both masked, below),
``status``, ``latency_ms``, ``user`` (the authenticated user's id, ``admin`` or null) and ``client``.
Headers and bodies are never logged, so neither are tokens, refresh tokens nor vendor keys. Written to
stderr (``access_log = "-"``), appended to a file (a path; created mode 0600), or not at all
(``"off"``), in batches at most 0.2 s apart (:class:`LogSink`).

Masking (``***``), so that a credential sent in a URL never reaches the log:

* **query values** of parameters whose name suggests a secret (:data:`_SECRET_PARAM`: ``token``,
  ``access_token``, ``key``, ``api_key``, ``secret``, ``code``, ``login``, ``password``, ``sig``/
  ``signature`` — ``X-Amz-Signature``, ``X-Amz-Credential``, Azure's ``sig`` —, ``auth``, ``session``,
  ``jwt``, ``credential``, ``policy``…), and any value that looks like a credential whatever its name;
* **path segments** that look like a credential (:func:`secret_segment`): the gateway's own token
  shapes (``rt_``/``ll_``/``gwadm_`` prefixes, JSON web tokens), the key shapes of
  :func:`hermes.redact.redact` (``sk-…``, ``ghp_…``, AWS key ids…), long random strings (32+ URL-safe
  characters with letters and digits — not the gateway's ``up_<hex>`` style ids nor UUIDs), and the
  segment after one named like a secret (``/token/<x>``, ``/login/<x>``, ``/key/<x>``).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from json.encoder import encode_basestring_ascii as _encode_ascii
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hermes.redact import redact

_SECRET_PARAM = re.compile(
    r"token|key|secret|code|state|ticket|login|pass|pwd|sig|auth|session|jwt|credential|bearer|otp|policy",
    re.IGNORECASE)
#: tokens this gateway issues (refresh tokens, login links, the admin token) and JSON web tokens
_OWN_TOKEN = re.compile(r"^(?:rt_|ll_|gwadm_)[A-Za-z0-9_-]{8,}$|^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.")
#: long random strings: 32+ URL-safe characters (base64url, hex)
_RANDOM = re.compile(r"^[A-Za-z0-9_~+/=.-]{32,}$")
#: identifiers that are not credentials: ``up_<hex>``, ``sb-<hex>``, UUIDs
_PLAIN_ID = re.compile(
    r"^[a-z]{2,6}[_-][0-9a-f]{8,40}(?:\.[a-z0-9]{2,5})?$|^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    re.IGNORECASE)
#: path segments after which the next one is a credential (``/login/<link>``, ``/token/<x>``)
_SECRET_SEGMENT_NAME = re.compile(
    r"(?:api[_-]?|access[_-]?)?(?:token|key|secret|login|password|passwd|sig|signature|jwt|credential)s?",
    re.IGNORECASE)
_MASK = "***"


def secret_segment(text: str) -> bool:
    """Whether ``text`` (a path segment or a query value) looks like a credential."""
    if len(text) < 8 or _PLAIN_ID.match(text):
        return False
    if _OWN_TOKEN.match(text) or redact(text) != text:
        return True
    return bool(_RANDOM.match(text)) and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


#: paths seen with nothing to mask (relay and API routes repeat): answered without the scan, which costs
#: tens of microseconds a request; a path that held something to mask is never remembered
_CLEAN_PATHS: dict[str, None] = {}
_CLEAN_PATHS_MAX = 4096
_CLEAN_PATH_LENGTH = 512


def redact_path(path: str) -> str:
    """``path`` with the segments that look like credentials, or follow one named like a secret, masked."""
    if path in _CLEAN_PATHS:
        return path
    segments = path.split("/")
    masked = False
    for i, segment in enumerate(segments):
        after_name = i > 0 and _SECRET_SEGMENT_NAME.fullmatch(segments[i - 1]) is not None
        if segment and (secret_segment(segment) or (after_name and segments[i - 1] != _MASK)):
            segments[i] = _MASK
            masked = True
    if masked:
        return "/".join(segments)
    if len(path) <= _CLEAN_PATH_LENGTH:
        if len(_CLEAN_PATHS) >= _CLEAN_PATHS_MAX:
            _CLEAN_PATHS.clear()
        _CLEAN_PATHS[path] = None
    return path


def redact_query(raw: bytes) -> str:
    """The query string with secret-looking parameter values masked (and long values cut)."""
    if not raw:
        return ""
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    clean = [(k, _MASK if _SECRET_PARAM.search(k) or secret_segment(v) else v[:200]) for k, v in pairs[:50]]
    return urlencode(clean, safe="*")


#: seconds an access line may wait in memory before it is written (Envoy's access logs flush every second;
#: shorter here so that a batch's formatting, on the event loop, stays well under a millisecond)
FLUSH_INTERVAL = 0.2
#: lines held at most: a buffer this full is written at once
MAX_PENDING = 256

#: what a line is made of, taken when the request ends: time, scope, user, status, latency (ms)
_Entry = tuple[float, Scope, object, int, float]


class LogSink:
    """Where access lines go: ``-`` (stderr), ``off`` (nowhere) or a file path (opened on first use, created
    0600, appended to on an ``O_APPEND`` descriptor, closed by :meth:`close` when the server stops).

    Lines are written in batches: a request leaves its fields behind (:meth:`add`) and the lines are formatted
    and written together, with one ``write(2)``, at most :data:`FLUSH_INTERVAL` seconds later (at once when
    :data:`MAX_PENDING` wait, or outside an event loop): a few writes a second instead of one after every
    answer, and the formatting done in one go rather than spread over requests. A process killed with
    ``kill -9`` loses the lines of its last 0.2 s (what was metered is in the usage journal, not here);
    a stopped one writes them all. Processes sharing the file (``O_APPEND``) or stderr's pipe (batches
    written in pieces of whole lines, at most 4 KiB each) never interleave within a line."""

    def __init__(self, target: str, *, interval: float = FLUSH_INTERVAL) -> None:
        self.target = target
        self.interval = interval
        self._fd = -1
        self._entries: list[_Entry] = []
        self._timer: asyncio.TimerHandle | None = None

    @property
    def enabled(self) -> bool:
        return self.target != "off"

    def add(self, scope: Scope, user: object, status: int, latency_ms: float) -> None:
        """Log one request: written with the next batch."""
        self._entries.append((time.time(), scope, user, status, latency_ms))
        if len(self._entries) >= MAX_PENDING:
            self.flush()
        elif self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(self.interval, self.flush)

    async def timed(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send, logged: Scope) -> None:
        """Run ``app`` — one that puts the status it sends in ``scope["state"]["gw_status"]`` (a relay) — and log
        the request as ``logged`` (the scope the client sent: its path before the router's rewriting)."""
        state = scope.setdefault("state", {})
        started = time.perf_counter()
        try:
            await app(scope, receive, send)
        finally:
            self.add(logged, state.get("gw_user"), state.get("gw_status", 500), (time.perf_counter() - started) * 1000)

    def flush(self) -> None:
        """Write every line still waiting."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        entries, self._entries = self._entries, []
        if entries:
            self._write("".join([_line(*entry) for entry in entries]))

    def _write(self, text: str) -> None:
        if self.target == "-":  # a pipe keeps writes of at most PIPE_BUF (4 KiB) whole: whole lines per write
            for chunk in _chunks(text, _PIPE_BUF):
                sys.stderr.write(chunk)
                sys.stderr.flush()
            return
        if self._fd < 0:
            self._fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                               0o600)
        data = text.encode("utf-8")
        while data:
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        self.flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


_PIPE_BUF = 4096


def _chunks(text: str, size: int) -> list[str]:
    """``text`` (whole lines) cut at line ends into pieces of at most ``size`` characters where lines allow."""
    if len(text) <= size:
        return [text]
    out: list[str] = []
    start = 0
    while start < len(text):
        end = text.rfind("\n", start, start + size) + 1
        if end <= start:  # one line longer than size: it goes alone
            end = text.find("\n", start) + 1 or len(text)
        out.append(text[start:end])
        start = end
    return out


class AccessLogMiddleware:
    """Pure ASGI middleware (no per-request task or body buffering): the status is read from the messages the
    app sends. Relays that record their status themselves are logged by the router instead, without it
    (:meth:`LogSink.timed`)."""

    def __init__(self, app: ASGIApp, sink: LogSink) -> None:
        self.app = app
        self.sink = sink

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.sink.enabled:
            await self.app(scope, receive, send)
            return
        await self.logged(scope, receive, send, scope)

    async def logged(self, scope: Scope, receive: Receive, send: Send, sent: Scope) -> None:
        """Run the app on ``scope`` and log the request as ``sent`` (the scope before the router rewrote it)."""
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
            self.sink.add(sent, state.get("gw_user"), status, (time.perf_counter() - started) * 1000)


def _line(now: float, scope: Scope, user: object, status: int, latency_ms: float) -> str:
    """One access line: what ``json.dumps(record, separators=(",", ":"))`` writes, and a newline."""
    host = ""
    for name, value in scope.get("headers", ()):
        if name == b"host":
            host = value.decode("latin-1")
            break
    client = scope.get("client")
    return (f'{{"ts":"{_timestamp(now)}","method":{_json_text(scope.get("method"))},'
            f'"host":{_json_text(host)},"path":{_json_text(redact_path(str(scope.get("path") or "")))},'
            f'"query":{_json_text(redact_query(scope.get("query_string", b"")))},"status":{int(status)},'
            f'"latency_ms":{round(latency_ms, 3)!r},"user":{_json_text(user)},'
            f'"client":{_json_text(client[0] if client else None)}}}\n')


def _json_text(value: object) -> str:
    """``value`` as JSON: a string (ASCII-escaped, as ``json.dumps`` writes it) or null."""
    return "null" if value is None else _encode_ascii(str(value))


_second = -1
_second_text = ""


def _timestamp(now: float) -> str:
    """``now`` as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC); the seconds' text is formatted once a second."""
    global _second, _second_text
    whole = int(now)
    if whole != _second:
        _second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
        _second = whole
    return f"{_second_text}.{int(now % 1 * 1000):03d}Z"
