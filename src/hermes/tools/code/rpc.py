"""The parent side of the script ↔ agent channel: a local socket server that runs tool calls.

Transport: a Unix domain socket ``rpc.sock`` inside the run's private temp dir (the dir is 0700, the
socket 0600), or — where Unix sockets are missing or the path would be too long — loopback TCP on a
random port. Either way every request must carry the run's random one-time token, compared in
constant time; a request without it is refused and never reaches a tool.

Wire format: each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. The
child opens one connection per call and sends ``{"token", "tool", "args"}``; the server answers
``{"ok": true, "result": <value>}`` (the tool's JSON result parsed; tool failures are values such as
``{"error": ...}``) or ``{"ok": false, "error": "..."}`` for protocol problems (bad token, malformed
or oversized message, a tool the script may not call). Calls are handled one at a time in one thread.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: runs one tool call: ``(tool name, arguments) -> JSON result text``; must not raise
Dispatcher = Callable[[str, dict[str, Any]], str]

_HEADER = struct.Struct(">I")
#: longest Unix socket path we rely on (sun_path is 104–108 bytes depending on the platform)
_MAX_UNIX_PATH = 100
_READ_TIMEOUT = 10.0
_WRITE_TIMEOUT = 30.0
_ACCEPT_POLL = 0.1
#: use loopback TCP even where Unix sockets work (tests exercise both transports with it)
PREFER_TCP = False


class ProtocolError(Exception):
    """A message that does not follow the wire format."""


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = conn.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-message")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(conn: socket.socket, max_bytes: int) -> bytes:
    """Read one length-prefixed message; :class:`ProtocolError` when it is too large or cut short."""
    (size,) = _HEADER.unpack(_recv_exact(conn, _HEADER.size))
    if size > max_bytes:
        raise ProtocolError(f"message of {size} bytes exceeds the limit of {max_bytes} bytes")
    return _recv_exact(conn, size)


def write_frame(conn: socket.socket, payload: bytes) -> None:
    conn.sendall(_HEADER.pack(len(payload)) + payload)


def tool_value(text: str) -> dict[str, Any]:
    """What a script receives for a tool result: the parsed JSON object, else ``{"result": value}``."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}


class RpcServer:
    """Serves one run's tool calls; :meth:`start` it, hand :attr:`address` and :attr:`token` to the child."""

    def __init__(
        self,
        run_dir: Path,
        dispatcher: Dispatcher,
        allowed: Iterable[str],
        *,
        max_calls: int,
        max_message_bytes: int,
        use_tcp: bool = False,
    ) -> None:
        self.dispatcher = dispatcher
        self.allowed = frozenset(allowed)
        self.max_calls = max_calls
        self.max_message_bytes = max_message_bytes
        self.token = secrets.token_hex(32)
        #: tool calls that reached the dispatcher
        self.calls_made = 0
        #: whether a call was refused because ``max_calls`` was reached
        self.limit_hit = False
        #: requests refused for a missing or wrong token
        self.rejected = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._socket_path: Path | None = None
        self._listener = self._listen(run_dir, use_tcp)

    # -- set-up -----------------------------------------------------------------------------------
    def _listen(self, run_dir: Path, use_tcp: bool) -> socket.socket:
        path = run_dir / "rpc.sock"
        family = getattr(socket, "AF_UNIX", None)
        if not (use_tcp or PREFER_TCP) and family is not None and len(os.fsencode(path)) <= _MAX_UNIX_PATH:
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.bind(str(path))
                os.chmod(path, 0o600)
            except OSError:
                sock.close()
                raise
            self._socket_path = path
        else:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind(("127.0.0.1", 0))
            except OSError:
                sock.close()
                raise
        sock.listen(16)
        sock.settimeout(_ACCEPT_POLL)
        return sock

    @property
    def transport(self) -> str:
        """``"unix"`` or ``"tcp"``."""
        return "unix" if self._socket_path is not None else "tcp"

    @property
    def address(self) -> str | tuple[str, int]:
        """The socket path (Unix) or ``(host, port)`` (TCP) the child connects to."""
        if self._socket_path is not None:
            return str(self._socket_path)
        host, port = self._listener.getsockname()[:2]
        return (str(host), int(port))

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="execute_code-rpc", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop accepting calls and close the socket (a tool call still running finishes in the background)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._listener.close()
        if self._socket_path is not None:
            with contextlib.suppress(OSError):
                self._socket_path.unlink()

    def __enter__(self) -> RpcServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving ----------------------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # the listener was closed
                break
            with conn:
                if self._stop.is_set():
                    break
                try:
                    self._handle(conn)
                except Exception:  # one broken connection must not end the server
                    logger.debug("execute_code rpc connection failed", exc_info=True)

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(_READ_TIMEOUT)
        try:
            raw = read_frame(conn, self.max_message_bytes)
        except ProtocolError as exc:
            reply: dict[str, Any] = {"ok": False, "error": str(exc)}
        except OSError:
            return
        else:
            reply = self._answer(raw)
        payload = self._encode(reply)
        conn.settimeout(_WRITE_TIMEOUT)
        with contextlib.suppress(OSError):
            write_frame(conn, payload)

    def reply(self, raw: bytes) -> bytes:
        """The encoded answer to one request message (also for transports other than the socket:
        :mod:`hermes.tools.code.mailbox` carries the same messages through files)."""
        return self._encode(self._answer(raw))

    def _encode(self, reply: dict[str, Any]) -> bytes:
        payload = json.dumps(reply, default=str).encode("ascii")  # ASCII: lone surrogates cannot break it
        if len(payload) > self.max_message_bytes:
            payload = json.dumps({"ok": True, "result": {
                "error": f"the tool result of {len(payload)} bytes exceeds the limit of "
                         f"{self.max_message_bytes} bytes"}}).encode("utf-8")
        return payload

    def _answer(self, raw: bytes) -> dict[str, Any]:
        try:
            request = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return {"ok": False, "error": "malformed request: not UTF-8 JSON"}
        if not isinstance(request, dict):
            return {"ok": False, "error": "malformed request: expected a JSON object"}
        token = request.get("token")
        if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
            self.rejected += 1
            return {"ok": False, "error": "authentication failed"}
        tool = request.get("tool")
        args = request.get("args", {})
        if not isinstance(tool, str) or tool not in self.allowed:
            available = ", ".join(sorted(self.allowed)) or "none"
            return {"ok": False, "error": f"tool {tool!r} is not available to scripts (available: {available})"}
        if args is None:
            args = {}
        if not isinstance(args, dict):
            return {"ok": False, "error": "malformed request: 'args' must be a JSON object"}
        if self.calls_made >= self.max_calls:
            self.limit_hit = True
            return {"ok": True, "result": {
                "error": f"tool call limit reached: an execute_code run may make at most {self.max_calls} "
                         "tool calls (code_execution.max_tool_calls); this call was not made"}}
        self.calls_made += 1
        try:
            text = self.dispatcher(tool, args)
        except Exception as exc:  # the registry never raises; a custom dispatcher might
            return {"ok": True, "result": {"error": f"{tool} failed: {type(exc).__name__}: {exc}"}}
        return {"ok": True, "result": tool_value(text)}
