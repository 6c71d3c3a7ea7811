"""Fixtures of the app server's tests: ``serve`` starts a real app server on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.config.settings import Settings
from hermes.surfaces.appserver.auth import Gate, read_token
from hermes.surfaces.appserver.rpc import AppApi
from hermes.surfaces.appserver.server import AppServer
from surfaces.appserver.harness import Serve


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
