"""The usage dashboard's test setup: a gateway with real usage, and a reader for its pages.

:func:`usage_gateway` serves the gateway (uvicorn on 127.0.0.1) with the firecrawl relay (the SearXNG
fake and the local scraper against a loopback page) and the openai-audio relay (the OpenAI fake). alice,
bob and a third user produce usage through the relays:

* alice (paid): 2 searches, 1 scrape, 1 scrape refused (a metadata address: 0 units), 1 speech of
  ``SPEECH`` (24 characters = 24 units); plus 5 search units three days ago, recorded through
  ``Meter.record`` — the relays' own recording path — because a test cannot wait for days to pass;
* bob (free, 100 firecrawl units a month): 3 searches;
* the third user: 1 search, then renamed to ``HOSTILE`` in the database — a name no version accepts,
  as a hand-edited or imported database could hold;
* dora (paid): nothing.

:class:`Page` pulls table cells, SVG marks and hidden form fields out of a page or a browser's DOM dump.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx

from fakes.vendors import ServerThread, pages_app, searxng_app
from fakes.vendors.harness import GatewayHarness
from fakes.vendors.openai_audio import FakeOpenAIAudio

OPERATOR_KEY = "sk-operator-secret"
SPEECH = "Hello from the dashboard"  # 24 characters = 24 units
COSTS = {"firecrawl.search": 0.002, "firecrawl.scrape": 0.001, "openai-audio.speech": 0.0001}
HOSTILE = '<img src=x onerror=alert(1)>"&'
DAY = 86400


class Page(HTMLParser):
    """The parts of a dashboard page the tests look at: table cells by table id, SVG marks, forms."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.marks: list[dict[str, str]] = []
        self.hidden: dict[str, str] = {}
        self.texts: list[str] = []
        self._table: str | None = None
        self._section = ""
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag in ("thead", "tbody", "tfoot"):
            self._section = tag
        elif tag == "tr" and self._table is not None and self._section == "tbody":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in ("rect", "circle") and a.get("class") in ("bar", "point"):
            self.marks.append({"kind": a["class"], **a})
        elif tag == "input" and a.get("type") == "hidden":
            self.hidden[a.get("name", "")] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self._cell is not None:
            self._cell.append(data)


@contextmanager
def usage_gateway(home: Path) -> Iterator[GatewayHarness]:
    """A gateway whose users alice (paid), bob (free), a user with a hostile name (paid) and dora (paid,
    no usage) have used the firecrawl and openai-audio relays; see the module docstring."""
    audio = FakeOpenAIAudio(key=OPERATOR_KEY)
    with ServerThread(pages_app()) as pages, ServerThread(searxng_app()) as searx, \
            ServerThread(audio.app) as openai:
        harness = GatewayHarness(
            home, limits={"backoff_base": 0.01, "vendor_retries": 1},
            firecrawl={"searxng_url": searx.url, "scrape": "local", "allow_loopback": True, "fetch_timeout": 5},
            plans={"free": {"coverage": ["firecrawl"], "monthly": {"firecrawl": 100}}}, costs=COSTS,
            **{"openai-audio.url": openai.url, "openai-audio.api_key": OPERATOR_KEY})
        with harness:
            for name, plan in (("alice", "paid"), ("bob", "free"), ("mallory", "paid"), ("dora", "paid")):
                harness.user(name, plan)
            alice, bob, mallory = harness.token("alice"), harness.token("bob"), harness.token("mallory")
            relay = harness.relay_url("firecrawl")
            for query in ("cats", "dogs"):
                assert _post(f"{relay}/v2/search", alice, {"query": query, "limit": 3}).status_code == 200
            assert _post(f"{relay}/v2/scrape", alice, {"url": pages.url + "/article"}).status_code == 200
            refused = _post(f"{relay}/v2/scrape", alice, {"url": "http://169.254.169.254/latest/meta-data"})
            assert refused.status_code == 403
            spoken = _post(f"{harness.relay_url('openai-audio')}/v1/audio/speech", alice,
                           {"model": "tts-1", "voice": "alloy", "input": SPEECH})
            assert spoken.status_code == 200
            for _ in range(3):
                assert _post(f"{relay}/v2/search", bob, {"query": "bob-only"}).status_code == 200
            assert _post(f"{relay}/v2/search", mallory, {"query": "m"}).status_code == 200
            side = harness.side
            side.meter.record(user_id=side.accounts.get_user("alice").id, jti=None, category="firecrawl",
                              vendor="searxng", operation="search", units=5, cost=0.01, status=200,
                              latency_ms=12.0, now=time.time() - 3 * DAY)
            side.conn.execute("UPDATE users SET name = ? WHERE name = 'mallory'", (HOSTILE,))
            yield harness


def _post(url: str, token: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url, json=body, headers={"authorization": f"Bearer {token}"}, timeout=30)


def login_link(gw: GatewayHarness, name: str) -> str:
    return gw.side.oauth.create_login_link(gw.side.accounts.get_user(name))


