"""Fixtures of the video tool tests: one FAL and one xAI video fake per module, a fresh fake per test.

A module about one backend alone names it in ``FAKE = (fake class, provider, key variable, base URL path)``
and asks for ``fake``: a fresh fake behind the module's one server, its key set and config.yaml choosing it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.video.tool  # noqa: F401  (registers the video tools)
from fakes.vendors.fal import SwapApp
from fakes.vendors.server import ServerThread
from fakes.vendors.video import FakeFalVideo, FakeXaiVideo
from hermes.tools.registry import registry

ENV = ("FAL_KEY", "XAI_API_KEY", "OPENROUTER_API_KEY", "DEEPINFRA_API_KEY", "TOOL_GATEWAY_USER_TOKEN",
       "TOOL_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL",
       "HERMES_ALLOW_PRIVATE_URLS", "ACME_VIDEO_KEY")


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, tuple[SwapApp, ServerThread]]]:
    started = {name: (swap := SwapApp(make().app), ServerThread(swap, lifespan="off").start())
               for name, make in (("fal", FakeFalVideo), ("xai", FakeXaiVideo))}
    yield started
    for _swap, thread in started.values():
        thread.stop()


@pytest.fixture
def fakes(running: dict[str, tuple[SwapApp, ServerThread]]) -> dict[str, Any]:
    out: dict[str, Any] = {"fal": FakeFalVideo(), "xai": FakeXaiVideo()}
    for name in ("fal", "xai"):
        running[name][0].app = out[name].app
        out[f"{name}_url"] = running[name][1].url
    return out


@pytest.fixture(scope="module")
def one_server(request: pytest.FixtureRequest) -> Iterator[tuple[SwapApp, ServerThread]]:
    swap = SwapApp(request.module.FAKE[0]().app)
    with ServerThread(swap, lifespan="off") as thread:
        yield swap, thread


@pytest.fixture
def fake(request: pytest.FixtureRequest, one_server: tuple[SwapApp, ServerThread], home: Path,
         monkeypatch: pytest.MonkeyPatch) -> Any:
    make, provider, variable, path = request.module.FAKE
    made = make()
    one_server[0].app = made.app
    monkeypatch.setenv(variable, made.key)
    (home / "config.yaml").write_text(f"video_gen:\n  provider: {provider}\n  poll_seconds: 0.001\n"
                                      f"  {provider}:\n    base_url: {one_server[1].url}{path}\n", encoding="utf-8")
    registry.invalidate_checks()
    return made


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    registry.invalidate_checks()
    return hermes_home
