"""Key-less web search through the maintained ``ddgs`` library (DuckDuckGo and other public engines).

DuckDuckGo has no official search API; ``ddgs`` scrapes its HTML results page (and, with ``backend="auto"``,
other engines) and keeps up with their markup changes, so hermes does not. ``ddgs`` is an optional
dependency imported on first use: without it :meth:`DuckDuckGoClient.search` raises a
:class:`~hermes.vendors.base.VendorError` naming the package — there is no silent fallback.

``ddgs`` is synchronous; the search runs in a worker thread. Its ``text()`` answer is a list of
``{"title", "href", "body"}`` dicts, turned into :class:`DdgResult` by :func:`parse_results`. ``ddgs``
raises when nothing was found; that is an empty list here. Rate limiting is a ``VendorError`` with status
429, a time-out one of kind ``timeout``.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hermes.vendors.base import VendorError

VENDOR = "duckduckgo"
PACKAGE = "ddgs"
MISSING_MESSAGE = (
    "the key-less web search needs the Python package 'ddgs', which is not installed. Install it with "
    "'pip install ddgs', or run 'hermes tools' to choose another search backend."
)
_NOTHING_FOUND = "no results found"


@dataclass(frozen=True)
class DdgResult:
    """One result: ``body`` is the snippet the engine showed."""

    url: str
    title: str
    body: str


def available() -> bool:
    """Whether ``ddgs`` is installed (a lookup on disk, nothing is imported)."""
    return importlib.util.find_spec(PACKAGE) is not None


def parse_results(raw: Iterable[Any], limit: int) -> list[DdgResult]:
    """``ddgs``' ``text()`` answer → results with an http(s) URL, at most ``limit``, duplicates dropped."""
    out: list[DdgResult] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, dict):
            continue
        url = item.get("href") or item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or url in seen:
            continue
        seen.add(url)
        title, body = item.get("title"), item.get("body")
        out.append(DdgResult(url, title if isinstance(title, str) else "", body if isinstance(body, str) else ""))
        if len(out) >= limit:
            break
    return out


class DuckDuckGoClient:
    """Search with ``ddgs``; ``backend`` is ddgs' engine list (``duckduckgo``, or ``auto`` for all engines)."""

    def __init__(self, *, backend: str = "duckduckgo", region: str = "us-en", safesearch: str = "moderate",
                 timeout: float = 10.0) -> None:
        self.backend = backend
        self.region = region
        self.safesearch = safesearch
        self.timeout = timeout

    async def search(self, query: str, limit: int = 5) -> list[DdgResult]:
        """Results for ``query`` (at most ``limit``); see the module docstring for errors."""
        try:
            module = importlib.import_module(PACKAGE)
        except ImportError:
            raise VendorError(VENDOR, MISSING_MESSAGE, kind="failed") from None
        raw = await asyncio.to_thread(self._search_sync, module, query, limit)
        return parse_results(raw, limit)

    def _search_sync(self, module: Any, query: str, limit: int) -> list[Any]:
        exceptions = importlib.import_module(f"{PACKAGE}.exceptions")
        try:
            engine = module.DDGS(timeout=max(1, round(self.timeout)))
            result = engine.text(query, max_results=limit, backend=self.backend, region=self.region,
                                 safesearch=self.safesearch)
        except exceptions.RatelimitException:
            raise VendorError(VENDOR, f"{VENDOR} is rate-limiting searches from this machine; wait a little, or run "
                                      "'hermes tools' to choose a search backend with a key", kind="http",
                              status=429) from None
        except exceptions.TimeoutException:
            raise VendorError(VENDOR, f"{VENDOR} did not answer within {self.timeout:g} s", kind="timeout") from None
        except exceptions.DDGSException as exc:
            if _NOTHING_FOUND in str(exc).lower():
                return []
            raise VendorError(VENDOR, f"{VENDOR} search failed: {str(exc)[:300]}", kind="failed") from None
        return list(result) if isinstance(result, list) else []
