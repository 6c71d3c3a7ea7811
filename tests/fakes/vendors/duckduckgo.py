"""A DuckDuckGo HTML-endpoint fake: ``POST /html/`` answering a results page in html.duckduckgo.com's markup.

``ddgs`` (the library behind the key-less search) scrapes that page; the tests point its DuckDuckGo
engine at this fake (``Duckduckgo.search_url``), so the real parsing code runs against it. The markup
follows the live page: one ``div.result__body`` per result with the title link inside ``h2`` and the
snippet as a direct ``a.result__snippet`` child. An ad result (``duckduckgo.com/y.js``) is included, as
the live page has one; ``ddgs`` drops it.
"""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

RESULT = """
<div class="result results_links results_links_deep web-result">
  <div class="links_main links_deep result__body">
    <h2 class="result__title"><a rel="nofollow" class="result__a" href="{url}">{title}</a></h2>
    <div class="result__extras"><div class="result__extras__url">
      <a class="result__url" href="{url}">{shown}</a></div></div>
    <a class="result__snippet" href="{url}">{snippet}</a>
    <div class="clear"></div>
  </div>
</div>"""

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{query} at DuckDuckGo</title></head>
<body class="body--html">
<div class="header">DuckDuckGo</div>
<div id="links" class="results">{results}</div>
</body></html>"""


class FakeDuckDuckGo:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/html/", self._html, methods=["POST", "GET"])])

    async def _html(self, request: Request) -> HTMLResponse:
        if request.method == "POST":  # form-encoded, parsed by hand (no python-multipart in the test deps)
            form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8")).items()}
        else:
            form = dict(request.query_params)
        self.requests.append({"path": request.url.path, "form": form})
        query = form.get("q", "")
        items = [RESULT.format(url="https://duckduckgo.com/y.js?ad_domain=ads.example", title="Sponsored result",
                               shown="ads.example", snippet="An advertisement")]
        for i in range(1, 9):
            url = f"https://ddg.example/{i}"
            items.append(RESULT.format(url=url, title=html.escape(f"DDG {i}: {query}"), shown=f"ddg.example/{i}",
                                       snippet=html.escape(f"Snippet {i} mentioning {query}")))
        return HTMLResponse(PAGE.format(query=html.escape(query), results="".join(items)))
