"""Fixtures of the gateway server tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.pg_redis import RedisServer
from fakes.vendors import ServerThread, pages_app


@pytest.fixture(scope="module")
def pages() -> Iterator[ServerThread]:
    """The page server fake on loopback (the pages the Firecrawl fake and the local scraper fetch)."""
    with ServerThread(pages_app()) as server:
        yield server


@pytest.fixture(scope="module")
def own_redis() -> Iterator[RedisServer]:
    """A ``redis-server`` for one module alone: the session's is shared with gateways that subscribe to the
    revocation version and raise it."""
    server = RedisServer()
    try:
        yield server
    finally:
        server.close()
