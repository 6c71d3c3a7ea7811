"""Firecrawl's v2 API (``api.firecrawl.dev``, a self-hosted Firecrawl, or the ``firecrawl`` gateway relay).

Wire format (reference: upstream-gateway-protocol.md, "firecrawl"), ``Authorization: Bearer <token>``:

* **search** ``POST {origin}/v2/search`` ``{"query", "limit", "origin"}`` →
  ``{"success": true, "data": {"web": [{"url", "title", "description"}, ...]}}``;
* **scrape** ``POST {origin}/v2/scrape`` ``{"url", "formats": ["markdown", "html"], "onlyMainContent": true,
  ...}`` → ``{"success": true, "data": {"markdown", "html", "metadata": {"title", "sourceURL", ...}}}``.

The same client serves the user's own key (BYOK) and the Tool Gateway (the portal token at the relay's
origin): only ``origin`` and ``auth`` differ. A self-hosted Firecrawl may run without a key (``auth=None``).
Like the upstream SDK it retries 502 and transport errors (and 429/503/504, which a relay may answer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "firecrawl"
#: the ``origin`` field Firecrawl uses for analytics (the upstream SDK sends ``python-sdk@<version>``)
CLIENT_TAG = "hermes-agent"
FIRECRAWL_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=4.0,
                              statuses=frozenset({429, 502, 503, 504}))
#: the scrape options the upstream client sends besides ``url``/``formats``/``onlyMainContent``
SCRAPE_DEFAULTS: dict[str, Any] = {
    "skipTlsVerification": True, "removeBase64Images": True, "fastMode": False, "blockAds": True,
    "storeInCache": True, "maxAge": 14_400_000, "mobile": False,
}


@dataclass(frozen=True)
class FirecrawlHit:
    """One web search result."""

    url: str
    title: str
    description: str


@dataclass(frozen=True)
class FirecrawlPage:
    """A scraped page; ``markdown``/``html`` are empty when not requested or not returned."""

    url: str
    markdown: str
    html: str
    title: str
    source_url: str
    status_code: int | None = None


class FirecrawlClient(JsonApiClient):
    """Search and scrape through Firecrawl's v2 API at ``origin`` (``Auth.bearer(key_or_token)`` or None)."""

    vendor = VENDOR
    default_retry = FIRECRAWL_RETRY
    default_timeout = 60.0
    default_max_bytes = 16 * 1024 * 1024

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = await self._send("POST", self._url(path), json_body=body)
        data = response.raise_for_status().json_object()
        if data.get("success") is not True:
            detail = data.get("error") or data.get("message")
            suffix = f": {str(detail)[:300]}" if detail else ""
            raise VendorError(VENDOR, f"{VENDOR} answered without success{suffix}", kind="bad_response",
                              status=response.status)
        return data

    async def search(self, query: str, limit: int = 5) -> list[FirecrawlHit]:
        """Web results for ``query`` (at most ``limit``)."""
        data = await self._post("/v2/search", {"query": query, "limit": limit, "origin": CLIENT_TAG})
        payload = data.get("data")
        # v2 answers {"data": {"web": [...]}}; v1-compatible deployments answer {"data": [...]}
        items = payload.get("web") if isinstance(payload, dict) else payload
        if not isinstance(items, list):
            raise VendorError(VENDOR, f"{VENDOR} answered without a list of web results", kind="bad_response")
        hits: list[FirecrawlHit] = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
                hits.append(FirecrawlHit(item["url"], _text(item.get("title")), _text(item.get("description"))))
        return hits[:limit]

    async def scrape(
        self, url: str, *, formats: tuple[str, ...] = ("markdown", "html"), only_main_content: bool = True,
    ) -> FirecrawlPage:
        """The page at ``url`` in the requested formats (Firecrawl fetches it, not this machine)."""
        body: dict[str, Any] = {"url": url, "formats": list(formats), "onlyMainContent": only_main_content,
                                **SCRAPE_DEFAULTS, "origin": CLIENT_TAG}
        data = await self._post("/v2/scrape", body)
        page = data.get("data")
        if not isinstance(page, dict):
            raise VendorError(VENDOR, f"{VENDOR} answered without page data", kind="bad_response")
        raw_meta = page.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        status = meta.get("statusCode")
        return FirecrawlPage(
            url=_text(meta.get("url")) or url,
            markdown=_text(page.get("markdown")),
            html=_text(page.get("html")) or _text(page.get("rawHtml")),
            title=_text(meta.get("title")),
            source_url=_text(meta.get("sourceURL")) or url,
            status_code=status if isinstance(status, int) and not isinstance(status, bool) else None,
        )


def _text(value: object) -> str:
    """A string field, or ``""`` for anything else (vendors send null and numbers in odd places)."""
    return value if isinstance(value, str) else ""
