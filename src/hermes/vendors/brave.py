"""Brave Search's web search API (``api.search.brave.com``), ``X-Subscription-Token: <key>``.

``GET {origin}/res/v1/web/search?q=…&count=N`` (``count`` at most 20) →
``{"type": "search", "web": {"results": [{"title", "url", "description", "age"}]}}``. Titles and
descriptions may carry ``<strong>`` highlight tags; they are returned as Brave sends them.
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.vendors.base import Auth, JsonApiClient, RetryPolicy, VendorError

VENDOR = "brave"
BRAVE_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=4.0, statuses=frozenset({429, 502, 503, 504}))
MAX_COUNT = 20


def brave_auth(key: str) -> Auth:
    """The header Brave reads its subscription token from."""
    return Auth.api_key_header("x-subscription-token", key)


@dataclass(frozen=True)
class BraveResult:
    """One web result (``description`` may contain highlight markup)."""

    url: str
    title: str
    description: str
    age: str | None = None


class BraveClient(JsonApiClient):
    """Web search with Brave at ``origin`` with ``auth`` (:func:`brave_auth`)."""

    vendor = VENDOR
    default_retry = BRAVE_RETRY
    default_timeout = 30.0
    default_max_bytes = 8 * 1024 * 1024

    async def search(self, query: str, limit: int = 5) -> list[BraveResult]:
        """Web results for ``query`` (at most ``limit``, capped at Brave's 20)."""
        count = max(1, min(limit, MAX_COUNT))
        data = await self._json("GET", self._url("/res/v1/web/search"), params={"q": query, "count": str(count)})
        web = data.get("web")
        if web is None:  # Brave leaves the section out when nothing matched
            return []
        items = web.get("results") if isinstance(web, dict) else None
        if not isinstance(items, list):
            raise VendorError(VENDOR, f"{VENDOR} answered without a list of web results", kind="bad_response")
        out: list[BraveResult] = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
                age = item.get("age")
                out.append(BraveResult(item["url"], _text(item.get("title")), _text(item.get("description")),
                                       age if isinstance(age, str) else None))
        return out[:count]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
