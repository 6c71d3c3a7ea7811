"""Exa's API (``api.exa.ai``), ``x-api-key: <key>``.

* **search** ``POST {origin}/search`` ``{"query", "numResults", "type": "auto", "contents": {"text":
  {"maxCharacters": N}}}`` → ``{"results": [{"url", "title", "text", "publishedDate", "author"}]}``;
* **contents** ``POST {origin}/contents`` ``{"urls": [...], "text": true}`` → ``{"results": [{"url", "title",
  "text"}], "statuses": [{"id": url, "status": "success"|"error", "error": {"tag", "httpStatusCode"}}]}``.
  Per-URL failures are data in ``statuses``; only a failure of the whole call is an HTTP error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import Auth, JsonApiClient, RetryPolicy, VendorError

VENDOR = "exa"
EXA_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=4.0, statuses=frozenset({429, 502, 503, 504}))
MAX_RESULTS = 100


def exa_auth(key: str) -> Auth:
    """The header Exa reads its key from."""
    return Auth.api_key_header("x-api-key", key)


@dataclass(frozen=True)
class ExaResult:
    """One search result or fetched document; ``text`` is the page text (cut by ``maxCharacters`` in search)."""

    url: str
    title: str
    text: str
    published_date: str | None = None
    author: str | None = None


@dataclass(frozen=True)
class ExaStatus:
    """How fetching one URL went (``/contents``)."""

    url: str
    ok: bool
    tag: str | None = None
    http_status: int | None = None


@dataclass(frozen=True)
class ExaContents:
    """The answer of one ``/contents`` call."""

    results: tuple[ExaResult, ...]
    statuses: tuple[ExaStatus, ...]


class ExaClient(JsonApiClient):
    """Search and fetch page contents with Exa at ``origin`` with ``auth`` (:func:`exa_auth`)."""

    vendor = VENDOR
    default_retry = EXA_RETRY
    default_timeout = 60.0
    default_max_bytes = 16 * 1024 * 1024

    async def search(self, query: str, limit: int = 5, *, snippet_chars: int = 400) -> list[ExaResult]:
        """Results for ``query`` with the first ``snippet_chars`` characters of each page's text."""
        limit = max(1, min(limit, MAX_RESULTS))
        data = await self._post_json("/search", {"query": query, "numResults": limit, "type": "auto",
                                            "contents": {"text": {"maxCharacters": snippet_chars}}})
        return _results(data)[:limit]

    async def contents(self, urls: list[str]) -> ExaContents:
        """The full text of each URL (Exa fetches them), with a status per URL."""
        data = await self._post_json("/contents", {"urls": urls, "text": True})
        statuses: list[ExaStatus] = []
        raw = data.get("statuses")
        for item in raw if isinstance(raw, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                continue
            raw_error = item.get("error")
            error: dict[str, Any] = raw_error if isinstance(raw_error, dict) else {}
            code, tag = error.get("httpStatusCode"), error.get("tag")
            statuses.append(ExaStatus(item["id"], item.get("status") == "success",
                                      tag if isinstance(tag, str) else None,
                                      code if isinstance(code, int) and not isinstance(code, bool) else None))
        return ExaContents(tuple(_results(data)), tuple(statuses))


def _results(data: dict[str, Any]) -> list[ExaResult]:
    items = data.get("results")
    if not isinstance(items, list):
        raise VendorError(VENDOR, f"{VENDOR} answered without a results list", kind="bad_response")
    out: list[ExaResult] = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
            out.append(ExaResult(item["url"], _text(item.get("title")), _text(item.get("text")),
                                 _text(item.get("publishedDate")) or None, _text(item.get("author")) or None))
    return out


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
