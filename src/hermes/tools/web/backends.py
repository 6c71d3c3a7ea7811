"""Running one web search or extraction on the route the routing function chose.

=============  ==========================================  ============================================
route          web.search                                   web.extract
=============  ==========================================  ============================================
gateway        Firecrawl ``/v2/search`` at the relay        Firecrawl ``/v2/scrape`` per URL at the relay
byok           Firecrawl, Tavily, Exa, Brave or SearXNG     Firecrawl, Tavily or Exa with the user's key
local          DuckDuckGo through ``ddgs`` (key-less)       this machine fetches the page (``safe_fetch``)
=============  ==========================================  ============================================

Search results are normalised to :class:`~hermes.tools.web.results.Hit`; extracted pages to
:class:`~hermes.tools.web.results.Page` (Markdown, converted here when a backend hands back HTML) or
:class:`~hermes.tools.web.results.Failure` (one URL that could not be read, and why).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any

from hermes.errors import FetchError, HermesError, ToolError
from hermes.net.address_policy import FetchPolicy
from hermes.routing import Route
from hermes.tools.routed.context import Access, vendor_failure
from hermes.tools.web.content import clean_snippet, html_to_main_markdown, looks_like_html
from hermes.tools.web.local import check_target, fetch_and_convert
from hermes.tools.web.results import Failure, Hit, Outcome, Page
from hermes.tools.web.runtime import WebContext, WebLimits, vendor_auth
from hermes.vendors.base import VendorError


def describe(route: Route) -> str:
    """The backend as results name it: ``firecrawl via the Nous Tool Gateway``, ``tavily (TAVILY_API_KEY)``."""
    if route.kind == "gateway":
        return f"{route.vendor} via the Nous Tool Gateway"
    if route.vendor == "duckduckgo":
        return "duckduckgo (key-less, ddgs)"
    if route.vendor == "local":
        return "local fetch on this machine"
    return f"{route.vendor} ({route.credential_env})" if route.credential_env else str(route.vendor)


def _hit(url: str, title: str, snippet: str) -> Hit:
    return Hit(clean_snippet(title, 300), url, clean_snippet(snippet))


# -- search -------------------------------------------------------------------------------------------
async def search(ctx: WebContext, http: Any, route: Route, query: str, limit: int) -> list[Hit]:
    """Up to ``limit`` results for ``query`` on ``route``."""
    if route.kind == "local":
        return await _search_keyless(ctx.limits(), query, limit)
    access = ctx.access(route)
    vendor = "firecrawl" if access.gateway else route.vendor
    try:
        return await _search_remote(http, access, str(vendor), query, limit)
    except VendorError as exc:
        raise vendor_failure(exc, access, "web search") from None


async def _search_remote(http: Any, access: Access, vendor: str, query: str, limit: int) -> list[Hit]:
    from hermes.vendors import brave, exa, firecrawl, searxng, tavily

    origin, auth, allow = access.origin, vendor_auth(access), access.allow_url
    if vendor == "firecrawl":
        found = await firecrawl.FirecrawlClient(http, origin, auth, allow_url=allow).search(query, limit)
        return [_hit(h.url, h.title, h.description) for h in found]
    if vendor == "tavily":
        tav = await tavily.TavilyClient(http, origin, auth, allow_url=allow).search(query, limit)
        return [_hit(r.url, r.title, r.content) for r in tav]
    if vendor == "exa":
        ex = await exa.ExaClient(http, origin, auth, allow_url=allow).search(query, limit)
        return [_hit(r.url, r.title, r.text) for r in ex]
    if vendor == "brave":
        br = await brave.BraveClient(http, origin, auth, allow_url=allow).search(query, limit)
        return [_hit(r.url, r.title, r.description) for r in br]
    if vendor == "searxng":
        sx = await searxng.SearxngClient(http, origin, auth, allow_url=allow).search(query, limit)
        return [_hit(r.url, r.title, r.content) for r in sx]
    raise ToolError(f"web search cannot use {vendor}")


async def _search_keyless(limits: WebLimits, query: str, limit: int) -> list[Hit]:
    from hermes.vendors import duckduckgo

    if not duckduckgo.available():
        raise ToolError(duckduckgo.MISSING_MESSAGE)
    client = duckduckgo.DuckDuckGoClient(backend=limits.ddgs_backend, timeout=min(limits.fetch_timeout, 30.0))
    try:
        found = await client.search(query, limit)
    except VendorError as exc:
        raise ToolError(f"web search failed via duckduckgo (key-less): {exc}") from None
    return [_hit(r.url, r.title, r.body) for r in found]


# -- extract ------------------------------------------------------------------------------------------
async def extract(ctx: WebContext, http: Any, route: Route, urls: Sequence[str]) -> list[Outcome]:
    """One outcome per URL, in order. Raises only for failures of the whole call (route, credentials).

    Every URL passes :func:`~hermes.tools.web.local.check_target` first, whichever backend fetches it.
    """
    policy = ctx.limits().policy()
    outcomes: list[Outcome | None] = []
    accepted: list[str] = []
    for url in urls:
        try:
            accepted.append(check_target(url, policy))
            outcomes.append(None)
        except FetchError as exc:
            outcomes.append(Failure(url, f"not fetched: {exc.message}"))
    fetched = iter(await _extract_accepted(ctx, http, route, accepted, policy) if accepted else [])
    return [o if o is not None else next(fetched) for o in outcomes]


async def _extract_accepted(
    ctx: WebContext, http: Any, route: Route, urls: list[str], policy: FetchPolicy
) -> list[Outcome]:
    if route.kind == "local":
        return list(await asyncio.gather(*(_one(u, fetch_and_convert(http, u, policy)) for u in urls)))
    access = ctx.access(route)
    vendor = "firecrawl" if access.gateway else str(route.vendor)
    try:
        if vendor == "firecrawl":
            return list(await asyncio.gather(*(_one(u, _firecrawl_page(http, access, u), access) for u in urls)))
        if vendor == "tavily":
            return await _tavily_pages(http, access, urls)
        if vendor == "exa":
            return await _exa_pages(http, access, urls)
    except VendorError as exc:
        raise vendor_failure(exc, access, "web extract") from None
    raise ToolError(f"web extract cannot use {vendor}")


async def _one(url: str, work: Awaitable[Page], access: Access | None = None) -> Outcome:
    """The page ``work`` produces for one URL, its expected failures turned into a :class:`Failure`."""
    try:
        return await work
    except FetchError as exc:
        return Failure(url, f"not fetched: {exc.message}")
    except VendorError as exc:
        message = str(vendor_failure(exc, access, "web extract")) if access is not None else str(exc)
        return Failure(url, message)
    except HermesError as exc:
        return Failure(url, str(exc))


async def _from_backend(url: str, final_url: str, title: str, text: str, converter: str) -> Page:
    """A page as a backend returned it; HTML is converted here (trafilatura, or the own converter)."""
    if looks_like_html(text):
        converted = await asyncio.to_thread(html_to_main_markdown, text, final_url)
        return Page(url, final_url, title or converted.title, converted.markdown, converted.converter)
    return Page(url, final_url, title, text.strip(), converter)


async def _firecrawl_page(http: Any, access: Access, url: str) -> Page:
    from hermes.vendors.firecrawl import FirecrawlClient

    page = await FirecrawlClient(http, access.origin, vendor_auth(access), allow_url=access.allow_url).scrape(url)
    if page.status_code is not None and page.status_code >= 400:
        raise ToolError(f"the page answered HTTP {page.status_code}")
    text = page.markdown if page.markdown.strip() else page.html
    if not text.strip():
        raise ToolError("the backend returned no content for this page")
    return await _from_backend(url, page.url or url, page.title, text, "firecrawl")


async def _tavily_pages(http: Any, access: Access, urls: Sequence[str]) -> list[Outcome]:
    from hermes.vendors.tavily import TavilyClient

    client = TavilyClient(http, access.origin, vendor_auth(access), allow_url=access.allow_url)
    answer = await client.extract(list(urls))
    pages = {p.url: p for p in answer.pages}
    failed = {f.url: f.error for f in answer.failed}
    out: list[Outcome] = []
    for url in urls:
        page = pages.get(url)
        if page is not None and page.raw_content.strip():
            out.append(await _from_backend(url, url, "", page.raw_content, "tavily"))
        else:
            out.append(Failure(url, failed.get(url, "tavily returned no content for this page")))
    return out


async def _exa_pages(http: Any, access: Access, urls: Sequence[str]) -> list[Outcome]:
    from hermes.vendors.exa import ExaClient

    client = ExaClient(http, access.origin, vendor_auth(access), allow_url=access.allow_url)
    answer = await client.contents(list(urls))
    results = {r.url: r for r in answer.results}
    statuses = {s.url: s for s in answer.statuses}
    out: list[Outcome] = []
    for url in urls:
        result = results.get(url)
        status = statuses.get(url)
        if result is not None and result.text.strip() and (status is None or status.ok):
            out.append(await _from_backend(url, url, result.title, result.text, "exa"))
            continue
        reason = "exa returned no content for this page"
        if status is not None and not status.ok:
            reason = f"exa could not fetch it ({status.tag or 'error'}"
            reason += f", HTTP {status.http_status})" if status.http_status else ")"
        out.append(Failure(url, reason))
    return out
