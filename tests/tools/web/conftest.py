"""Fixtures of the web tool tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakes.vendors import ServerThread
from fakes.vendors.tavily import FakeTavily


@pytest.fixture(scope="module")
def tavily() -> Iterator[tuple[FakeTavily, str]]:
    """The Tavily fake on loopback, with the user's own key: ``(fake, url)``."""
    fake = FakeTavily(api_key="tvly-user-key")
    with ServerThread(fake.app) as server:
        yield fake, server.url
