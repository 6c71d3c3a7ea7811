"""The ``firecrawl`` relay: Firecrawl v2 ``/v2/search`` and ``/v2/scrape`` for web search and extract.

The upstream client (firecrawl-py 4.x, ``Authorization: Bearer <gateway token>``) sends::

    POST /v2/search {"query", "limit": 5, "origin": "python-sdk@…"}
         → 200 {"success": true, "data": {"web": [{"url", "title", "description"}, …]}}
    POST /v2/scrape {"url", "formats": ["markdown", "html"], "onlyMainContent": true, …}
         → 200 {"success": true, "data": {"markdown", "html", "metadata": {"title", "sourceURL", …}}}

Backends, chosen per operation in ``[relays.firecrawl]``:

* ``firecrawl`` — the real Firecrawl API (or a self-hosted Firecrawl) at ``firecrawl_url`` with the
  operator's key. Only documented fields are forwarded (an allow-list: no ``actions``, no LLM
  ``json`` formats, no ``scrapeOptions`` on search — they multiply the operator's cost);
* ``searxng`` (search) — a SearXNG instance's JSON API (``/search?q=…&format=json``), its results
  turned into Firecrawl's shape;
* ``local`` (scrape) — the gateway fetches the page itself (:mod:`hermes.toolgateway.safefetch`,
  SSRF-safe) and converts it with :mod:`hermes.toolgateway.html2md`;
* ``off`` — 503 ``backend_not_configured``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from hermes.errors import FetchError
from hermes.net.address_policy import FetchPolicy
from hermes.net.html2md import html_to_markdown
from hermes.net.safefetch import safe_fetch
from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import raise_for_vendor, vendor_request

SEARCH_FIELDS = frozenset({"query", "limit", "sources", "categories", "tbs", "location", "country", "timeout",
                           "ignoreInvalidURLs", "origin"})
SCRAPE_FIELDS = frozenset({"url", "formats", "onlyMainContent", "includeTags", "excludeTags", "maxAge", "headers",
                           "waitFor", "mobile", "skipTlsVerification", "timeout", "parsers", "location",
                           "removeBase64Images", "blockAds", "proxy", "storeInCache", "fastMode", "origin"})
FORMATS = frozenset({"markdown", "html", "rawHtml", "links"})
#: an answer whose first member is ``"success": true`` (how Firecrawl writes every answer): passed on as it is
_SUCCESS_FIRST = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"success"[ \t\r\n]*:[ \t\r\n]*true[ \t\r\n]*[,}]')
MAX_QUERY = 1000
MAX_URL = 4096
MAX_LIMIT = 50


def _search_args(body: dict[str, Any]) -> tuple[str, int]:
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise GatewayHTTPError(400, "invalid_request", "'query' must be a non-empty string")
    if len(query) > MAX_QUERY:
        raise GatewayHTTPError(400, "invalid_request", f"'query' is longer than {MAX_QUERY} characters")
    limit = body.get("limit", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise GatewayHTTPError(400, "invalid_request", f"'limit' must be an integer from 1 to {MAX_LIMIT}")
    return query.strip(), limit


def _formats(body: dict[str, Any]) -> list[str]:
    raw = body.get("formats", ["markdown"])
    if not isinstance(raw, list) or not raw:
        raise GatewayHTTPError(400, "invalid_request", "'formats' must be a non-empty list")
    names: list[str] = []
    for item in raw:
        name = item.get("type") if isinstance(item, dict) else item
        if not isinstance(name, str) or name not in FORMATS:
            raise GatewayHTTPError(400, "unsupported_format",
                                   f"format {name!r} is not offered by this gateway (use {', '.join(sorted(FORMATS))})")
        names.append(name)
    return names


def _scrape_url(body: dict[str, Any]) -> str:
    url = body.get("url")
    if not isinstance(url, str) or not url.strip() or len(url) > MAX_URL:
        raise GatewayHTTPError(400, "invalid_request", "'url' must be an http(s) URL")
    return url.strip()


class FirecrawlRelay(Relay):
    """Web search and page extraction in Firecrawl's v2 API shape."""

    label = "firecrawl"
    category = "firecrawl"

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", "/v2/search", "search", self.search),
                Operation("POST", "/v2/scrape", "scrape", self.scrape))

    def backend(self, operation: str) -> str:
        cfg = self.gateway.config.firecrawl
        return cfg.search if operation == "search" else cfg.scrape

    # -- search --------------------------------------------------------------------------------------
    async def search(self, call: RelayCall) -> RelayResult:
        body = call.json()
        query, limit = _search_args(body)
        backend = self.backend("search")
        if backend == "firecrawl":
            forwarded = {k: v for k, v in body.items() if k in SEARCH_FIELDS}
            return await self._firecrawl(call, "/v2/search", forwarded)
        if backend == "searxng":
            return await self._searxng(call, query, limit)
        raise GatewayHTTPError(503, "backend_not_configured",
                               "this gateway has no web search backend (set relays.firecrawl.searxng_url or "
                               "firecrawl_url)")

    async def _searxng(self, call: RelayCall, query: str, limit: int) -> RelayResult:
        cfg = self.gateway.config.firecrawl
        resp = await vendor_request(
            self.gateway.vendor_client, "GET", f"{cfg.searxng_url}/search", vendor="searxng",
            limits=self.gateway.config.limits,
            deadline=call.deadline, params={"q": query, "format": "json", "pageno": "1"},
            headers={"accept": "application/json"},
        )
        raise_for_vendor(resp, "searxng")
        data = resp.json("searxng")
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise GatewayHTTPError(502, "vendor_bad_response", "searxng answered without a results list")
        web: list[dict[str, Any]] = []
        for item in results:
            if not isinstance(item, dict) or not isinstance(item.get("url"), str):
                continue
            web.append({"url": item["url"], "title": str(item.get("title") or ""),
                        "description": str(item.get("content") or ""), "position": len(web) + 1})
            if len(web) >= limit:
                break
        return RelayResult.of_json({"success": True, "data": {"web": web}})

    # -- scrape --------------------------------------------------------------------------------------
    async def scrape(self, call: RelayCall) -> RelayResult:
        body = call.json()
        url = _scrape_url(body)
        formats = _formats(body)
        backend = self.backend("scrape")
        if backend == "firecrawl":
            forwarded = {k: v for k, v in body.items() if k in SCRAPE_FIELDS}
            return await self._firecrawl(call, "/v2/scrape", forwarded)
        if backend == "local":
            only_main = body.get("onlyMainContent", True) is not False
            return await self._local_scrape(call, url, formats, only_main)
        raise GatewayHTTPError(503, "backend_not_configured", "this gateway has no page extraction backend")

    async def _local_scrape(self, call: RelayCall, url: str, formats: list[str], only_main: bool) -> RelayResult:
        cfg = self.gateway.config.firecrawl
        policy = FetchPolicy(allow_loopback=cfg.allow_loopback, allow_private=cfg.allow_private,
                             timeout=cfg.fetch_timeout, max_bytes=cfg.max_page_bytes, max_redirects=cfg.max_redirects,
                             user_agent="hermes-toolgateway/1 (+page extraction)")
        try:
            page = await safe_fetch(self.gateway.http, url, policy)
        except FetchError as exc:
            raise GatewayHTTPError(exc.status, exc.code, exc.message) from None
        if page.content_type in ("text/plain",):
            extracted = html_to_markdown(f"<pre>{_escape(page.text)}</pre>", page.url, only_main=False)
        else:
            extracted = html_to_markdown(page.text, page.url, only_main=only_main)
        data: dict[str, Any] = {}
        if "markdown" in formats:
            data["markdown"] = extracted.markdown
        if "html" in formats:
            data["html"] = page.text
        if "rawHtml" in formats:
            data["rawHtml"] = page.text
        if "links" in formats:
            data["links"] = extracted.links
        data["metadata"] = {"title": extracted.title or "", "description": extracted.description or "",
                            "language": extracted.language, "sourceURL": url, "url": page.url,
                            "statusCode": page.status, "contentType": page.content_type}
        return RelayResult.of_json({"success": True, "data": data})

    # -- the real Firecrawl ---------------------------------------------------------------------------
    async def _firecrawl(self, call: RelayCall, path: str, body: dict[str, Any]) -> RelayResult:
        cfg = self.gateway.config.firecrawl
        headers = {"accept": "application/json"}
        if cfg.firecrawl_api_key:
            headers["authorization"] = f"Bearer {cfg.firecrawl_api_key}"
        resp = await vendor_request(self.gateway.vendor_client, "POST", cfg.firecrawl_url + path, vendor="firecrawl",
                                    limits=self.gateway.config.limits, deadline=call.deadline, json_body=body,
                                    headers=headers)
        raise_for_vendor(resp, "firecrawl", (cfg.firecrawl_api_key,))
        # Firecrawl's own answers open with it: no parse of a large page — but only for a body whose length was
        # declared (a body that ends where the connection closed may be cut short: it is parsed)
        framed = "content-length" in resp.headers or "chunked" in resp.headers.get("transfer-encoding", "").lower()
        if not (framed and _SUCCESS_FIRST.match(resp.body)):
            data = resp.json("firecrawl")
            if not isinstance(data, dict) or data.get("success") is not True:
                raise GatewayHTTPError(502, "vendor_error", "firecrawl answered without success")
        return RelayResult(200, resp.body)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
