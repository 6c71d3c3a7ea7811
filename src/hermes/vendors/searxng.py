"""A SearXNG instance's JSON search API (``SEARXNG_URL``; self-hosted, usually no key).

``GET {origin}/search?q=…&format=json&pageno=1`` → ``{"query", "results": [{"url", "title", "content",
"engine"}]}``. An instance whose ``settings.yml`` does not list ``json`` under ``search.formats``
answers 403; the error says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "searxng"
SEARXNG_RETRY = RetryPolicy(attempts=2, base_delay=0.5, max_delay=2.0, statuses=frozenset({429, 502, 503, 504}))


@dataclass(frozen=True)
class SearxResult:
    """One result; ``engine`` names the search engine SearXNG got it from."""

    url: str
    title: str
    content: str
    engine: str | None = None


class SearxngClient(JsonApiClient):
    """Search through the SearXNG instance at ``origin`` (``auth`` only for instances behind a proxy login)."""

    vendor = VENDOR
    default_retry = SEARXNG_RETRY
    default_timeout = 30.0
    default_max_bytes = 8 * 1024 * 1024

    async def search(self, query: str, limit: int = 5, *, page: int = 1) -> list[SearxResult]:
        """Results for ``query`` (the first ``limit`` of page ``page``)."""
        response = await self._send("GET", self._url("/search"),
                                    params={"q": query, "format": "json", "pageno": str(page)})
        if response.status == 403:
            raise VendorError(VENDOR, f"{VENDOR} refused the JSON format (HTTP 403): add 'json' to search.formats "
                                      "in the instance's settings.yml", kind="http", status=403)
        data = response.raise_for_status().json_object()
        items = data.get("results")
        if not isinstance(items, list):
            raise VendorError(VENDOR, f"{VENDOR} answered without a results list", kind="bad_response")
        out: list[SearxResult] = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
                engine = item.get("engine")
                out.append(SearxResult(item["url"], _text(item.get("title")), _text(item.get("content")),
                                       engine if isinstance(engine, str) else None))
            if len(out) >= limit:
                break
        return out


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
