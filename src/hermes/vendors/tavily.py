"""Tavily's search API (``api.tavily.com``), ``Authorization: Bearer <key>``.

* **search** ``POST {origin}/search`` ``{"query", "max_results", "search_depth": "basic", "include_answer":
  false}`` → ``{"query", "results": [{"title", "url", "content", "score"}], "response_time"}``;
* **extract** ``POST {origin}/extract`` ``{"urls": [...], "extract_depth": "basic", "format": "markdown"}`` →
  ``{"results": [{"url", "raw_content"}], "failed_results": [{"url", "error"}]}`` — one URL may fail while
  the others succeed, so failures come back as data, not as an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "tavily"
TAVILY_RETRY = RetryPolicy(attempts=3, base_delay=0.5, max_delay=4.0, statuses=frozenset({429, 502, 503, 504}))
#: Tavily's own ceiling for ``max_results``
MAX_RESULTS = 20


@dataclass(frozen=True)
class TavilyResult:
    """One search result; ``content`` is Tavily's query-relevant excerpt of the page."""

    url: str
    title: str
    content: str
    score: float | None = None


@dataclass(frozen=True)
class TavilyPage:
    """One extracted page; ``raw_content`` is markdown (or text, per the requested format)."""

    url: str
    raw_content: str


@dataclass(frozen=True)
class TavilyFailure:
    """A URL Tavily could not extract, with its reason."""

    url: str
    error: str


@dataclass(frozen=True)
class TavilyExtraction:
    """The answer of one extract call."""

    pages: tuple[TavilyPage, ...]
    failed: tuple[TavilyFailure, ...]


class TavilyClient(JsonApiClient):
    """Search and extract with Tavily at ``origin`` with ``auth`` (``Auth.bearer(key)``)."""

    vendor = VENDOR
    default_retry = TAVILY_RETRY
    default_timeout = 60.0
    default_max_bytes = 16 * 1024 * 1024

    async def search(
        self, query: str, limit: int = 5, *, search_depth: Literal["basic", "advanced"] = "basic",
    ) -> list[TavilyResult]:
        """Results for ``query`` (at most ``limit``, capped at Tavily's 20)."""
        limit = max(1, min(limit, MAX_RESULTS))
        data = await self._post_json("/search", {"query": query, "max_results": limit, "search_depth": search_depth,
                                            "include_answer": False, "include_raw_content": False})
        items = data.get("results")
        if not isinstance(items, list):
            raise VendorError(VENDOR, f"{VENDOR} answered without a results list", kind="bad_response")
        out: list[TavilyResult] = []
        for item in items:
            if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"]:
                score = item.get("score")
                out.append(TavilyResult(item["url"], _text(item.get("title")), _text(item.get("content")),
                                        float(score) if isinstance(score, int | float) else None))
        return out[:limit]

    async def extract(
        self, urls: list[str], *, extract_depth: Literal["basic", "advanced"] = "basic",
        output_format: Literal["markdown", "text"] = "markdown",
    ) -> TavilyExtraction:
        """The content of each URL (Tavily fetches them), with the URLs it could not extract."""
        data = await self._post_json("/extract", {"urls": urls, "extract_depth": extract_depth, "format": output_format,
                                             "include_images": False})
        results = data.get("results")
        if not isinstance(results, list):
            raise VendorError(VENDOR, f"{VENDOR} answered without a results list", kind="bad_response")
        pages = tuple(TavilyPage(item["url"], _text(item.get("raw_content")))
                      for item in results if isinstance(item, dict) and isinstance(item.get("url"), str))
        failed_raw = data.get("failed_results")
        failed = tuple(
            TavilyFailure(item["url"], _text(item.get("error")) or "extraction failed")
            for item in (failed_raw if isinstance(failed_raw, list) else [])
            if isinstance(item, dict) and isinstance(item.get("url"), str)
        )
        return TavilyExtraction(pages, failed)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
