"""Plain pages for the local scrape backend: an article, redirects (good and private), big and binary bodies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

ARTICLE = """<!doctype html>
<html lang="en"><head><title>The Test Article</title>
<meta name="description" content="A page for the gateway tests">
<style>body { color: red }</style><script>var secret = "do-not-extract";</script></head>
<body>
<nav><a href="/home">Home</a> | <a href="/about">About</a></nav>
<header><p>Site banner</p></header>
<main>
<h1>Main heading</h1>
<p>First paragraph with <strong>bold</strong>, <em>italic</em> and a <a href="/next">relative link</a>.</p>
<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
<ol><li>first</li><li>second</li></ol>
<pre><code>print("hi")
  indented</code></pre>
<blockquote><p>A quote.</p></blockquote>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<img src="/pic.png" alt="A picture"><img src="data:image/png;base64,AAAA" alt="inline">
</main>
<aside>Related links</aside>
<footer>Copyright footer</footer>
</body></html>"""


async def _article(request: Request) -> Response:
    return HTMLResponse(ARTICLE)


async def _redirect(request: Request) -> Response:
    return RedirectResponse(request.query_params.get("to", "/article"), status_code=302)


async def _big(request: Request) -> Response:
    async def chunks() -> AsyncIterator[bytes]:
        block = b"<p>" + b"x" * 65536 + b"</p>"
        for _ in range(200):  # ~13 MB if nobody stops reading
            yield block

    return StreamingResponse(chunks(), media_type="text/html")


async def _binary(request: Request) -> Response:
    return Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, media_type="image/png")


async def _slow(request: Request) -> Response:
    await asyncio.sleep(float(request.query_params.get("s", "5")))
    return HTMLResponse("<p>late</p>")


async def _missing(request: Request) -> Response:
    return HTMLResponse("<html><head><title>Not here</title></head><body><p>No such page</p></body></html>", 404)


def pages_app() -> Starlette:
    return Starlette(routes=[
        Route("/article", _article), Route("/redirect", _redirect), Route("/big", _big),
        Route("/binary", _binary), Route("/slow", _slow), Route("/missing", _missing),
    ])
