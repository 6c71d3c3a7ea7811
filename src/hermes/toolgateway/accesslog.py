"""Structured access logs: one JSON line per request, without secrets.

Fields: ``ts`` (UTC, ms), ``method``, ``host``, ``path`` and ``query`` (both masked, below),
``status``, ``latency_ms``, ``user`` (the authenticated user's id, ``admin`` or null) and ``client``.
Headers and bodies are never logged, so neither are tokens, refresh tokens nor vendor keys. Written to
stderr (``access_log = "-"``), appended to a file (a path; created mode 0600), or not at all
(``"off"``).

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


class LogSink:
    """Where access lines go: ``-`` (stderr), ``off`` (nowhere) or a file path (opened on first use, each
    line appended with one ``write(2)`` on an ``O_APPEND`` descriptor, closed by :meth:`close` when the
    server stops): nothing is held back in a buffer, and processes sharing the file never interleave lines."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._fd = -1

    @property
    def enabled(self) -> bool:
        return self.target != "off"

    def write(self, line: str) -> None:
        if self.target == "-":
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            return
        if self._fd < 0:
            self._fd = os.open(self.target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                               0o600)
        data = (line + "\n").encode("utf-8")
        while data:
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


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
        user = state.get("gw_user")
        # the line json.dumps(..., separators=(",", ":")) would write, without its encoder's per-call set-up
        self.sink.write(
            f'{{"ts":"{_timestamp(time.time())}","method":{_json_text(scope.get("method"))},'
            f'"host":{_json_text(host)},"path":{_json_text(redact_path(str(scope.get("path") or "")))},'
            f'"query":{_json_text(redact_query(scope.get("query_string", b"")))},"status":{int(status)},'
            f'"latency_ms":{round(latency_ms, 3)!r},"user":{_json_text(user)},'
            f'"client":{_json_text(client[0] if client else None)}}}')


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
