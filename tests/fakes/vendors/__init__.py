"""Vendor fakes for the gateway tests: small ASGI apps speaking the vendors' HTTP APIs.

* :mod:`.server` — :class:`ServerThread`, any ASGI app served by uvicorn on ``127.0.0.1`` (an
  ephemeral port) from a background thread;
* :mod:`.firecrawl` — Firecrawl v2 ``/v2/search`` and ``/v2/scrape`` (the shapes the upstream client
  reads), with scripted failures and a request log;
* :mod:`.searxng` — SearXNG's ``/search?format=json``;
* :mod:`.pages` — plain HTML pages, redirects, oversized and binary bodies for the local scraper.
"""

from fakes.vendors.firecrawl import FakeFirecrawl
from fakes.vendors.pages import pages_app
from fakes.vendors.searxng import searxng_app
from fakes.vendors.server import ServerThread

__all__ = ["FakeFirecrawl", "ServerThread", "pages_app", "searxng_app"]
