"""Extraction on this machine: fetch the page with :func:`~hermes.net.safefetch.safe_fetch`, then convert it.

Used when ``web.extract`` routes to ``local`` (nothing configured, or ``web.backend`` names a search-only
vendor). ``safe_fetch`` is the only way out: every hop (the first URL and each redirect) must resolve to
public addresses only — private, loopback, link-local, cloud-metadata, IPv4-mapped and NAT64 forms of
them are refused — the connection goes to the vetted IP and its peer address is checked again; time and
size are capped. ``web.allow_loopback`` / ``web.allow_private`` in config.yaml open loopback / private
ranges (metadata and link-local stay refused).

HTML is converted with :func:`~hermes.tools.web.content.html_to_main_markdown`, PDF with
:func:`~hermes.tools.web.content.pdf_to_text`, plain text is kept. The conversions run in a worker thread.

:func:`check_target` is the cheap, offline pre-check applied before a URL is handed to any backend,
remote ones included: only plain http(s) URLs, and no literal address (decimal, octal and hex IPv4
forms included) or ``localhost`` name that the same policy would refuse.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from hermes.errors import FetchError
from hermes.net.address_policy import FetchPolicy, ip_allowed
from hermes.net.safefetch import safe_fetch
from hermes.tools.web.content import html_to_main_markdown, pdf_to_text, plain_to_markdown
from hermes.tools.web.results import Page

MAX_URL = 2048
_IPV4_FORMS = re.compile(r"^(?:0x[0-9a-f]+|[0-9]+)(?:\.(?:0x[0-9a-f]+|[0-9]+)){0,3}$")
_BAD_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


def _literal_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host names without DNS: an IP literal, or a decimal/octal/hex IPv4 form."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _IPV4_FORMS.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def check_target(url: str, policy: FetchPolicy) -> str:
    """``url`` stripped, or a FetchError saying why it is not fetched (offline; no DNS lookup)."""
    url = url.strip()
    if len(url) > MAX_URL:
        raise FetchError(400, "invalid_url", f"the URL is longer than {MAX_URL} characters")
    if _BAD_CHARS.search(url):
        raise FetchError(400, "invalid_url", "the URL contains spaces, control characters or backslashes")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        raise FetchError(400, "invalid_url", "the URL is not valid") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise FetchError(400, "invalid_url", "only http and https URLs can be extracted")
    if "@" in parts.netloc:
        raise FetchError(403, "url_not_allowed", "URLs with user info are not fetched")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise FetchError(400, "invalid_url", "the URL has no host")
    if host == "localhost" or host.endswith(".localhost"):
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address("127.0.0.1")
    else:
        address = _literal_address(host)
    if address is not None and not ip_allowed(address, policy):
        raise FetchError(403, "url_not_allowed",
                         f"{host} is a private, loopback, link-local or metadata address, which is not fetched")
    return url


async def fetch_and_convert(http: Any, url: str, policy: FetchPolicy) -> Page:
    """Fetch ``url`` under ``policy`` and convert it; FetchError when refused or failed, ToolError for PDFs."""
    target = check_target(url, policy)
    page = await safe_fetch(http, target, policy)
    if page.status >= 400:
        raise FetchError(page.status, "http_error", f"the page answered HTTP {page.status}")
    if page.content_type == "application/pdf":
        converted = await asyncio.to_thread(pdf_to_text, page.body)
        return Page(url, page.url, converted.title, converted.markdown, converted.converter)
    if page.content_type == "text/plain":
        return Page(url, page.url, "", plain_to_markdown(page.text), "text")
    converted = await asyncio.to_thread(html_to_main_markdown, page.text, page.url)
    return Page(url, page.url, converted.title, converted.markdown, converted.converter)
