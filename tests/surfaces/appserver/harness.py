"""What the app server's tests share: a JSON-RPC client on a real WebSocket."""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection, connect

from hermes.config.settings import Settings
from hermes.surfaces.appserver.auth import Gate, read_token
from hermes.surfaces.appserver.rpc import AppApi
from hermes.surfaces.appserver.server import RPC_PATH, AppServer

Serve = Callable[..., AppServer]


def url_of(server: AppServer) -> str:
    return f"ws://127.0.0.1:{server.port}{RPC_PATH}"


class Rpc:
    """A JSON-RPC client on one WebSocket: responses by id, notifications kept in arrival order."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        self._stack = contextlib.ExitStack()
        self.ws: ClientConnection = self._stack.enter_context(connect(url, open_timeout=10, **kwargs))
        self.notes: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def _receive(self, timeout: float) -> dict[str, Any]:
        message = json.loads(self.ws.recv(timeout=timeout))
        assert isinstance(message, dict)
        if "method" in message:
            self.notes.append(message["params"] | {"method": message["method"]})
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The whole response (``result`` or ``error``)."""
        request_id = next(self._ids)
        self.ws.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}))
        while True:
            message = self._receive(20)
            if message.get("id") == request_id:
                return message

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        response = self.request(method, params)
        assert "result" in response, response
        return response["result"]

    def wait_for(self, test: Callable[[dict[str, Any]], bool], timeout: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for note in self.notes[seen:]:
                if test(note):
                    return note
            seen = len(self.notes)
            left = deadline - time.monotonic()
            assert left > 0, f"no such notification among {self.notes}"
            self._receive(left)

    def events(self, session: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [n for n in self.notes if n["method"] == "event" and n["session"] == session
                and (kind is None or n["type"] == kind)]

    def finished(self, session: str) -> dict[str, Any]:
        return self.wait_for(lambda n: n.get("session") == session and n.get("type") == "turn_finished")

    def wait_turns(self, session: str, count: int, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while len(self.events(session, "turn_finished")) < count:
            left = deadline - time.monotonic()
            assert left > 0, f"fewer than {count} turns finished: {self.notes}"
            self._receive(left)

    def close(self) -> None:
        self._stack.close()


def last_user(body: dict[str, Any]) -> str:
    return str(next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user"))


@pytest.fixture
def serve(hermes_home: Path) -> Iterator[Serve]:
    """``serve(model_url, host=...)`` starts an app server on a free port; all stop at teardown."""
    started: list[AppServer] = []

    def start(model_url: str, host: str = "127.0.0.1", extra_config: str = "") -> AppServer:
        (hermes_home / "config.yaml").write_text(
            f"model:\n  base_url: {model_url}\n  name: m\n  max_retries: 0\n  stream: true\n{extra_config}")
        settings = Settings.load()
        server = AppServer(AppApi(settings), Gate(host, read_token(hermes_home)), host, 0)
        server.start()
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()
