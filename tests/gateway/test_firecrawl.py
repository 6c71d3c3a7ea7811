"""The firecrawl relay over real HTTP: Firecrawl backend, SearXNG + local backends, SSRF refusals.

Every request goes to a uvicorn-served gateway on 127.0.0.1, both ways a client can reach a relay:
``Host: firecrawl-gateway.localhost:PORT`` (host routing) and ``http://127.0.0.1:PORT/relay/firecrawl``
(a pinned ``FIRECRAWL_GATEWAY_URL``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fakes.vendors import FakeFirecrawl, ServerThread, searxng_app
from fakes.vendors.harness import GatewayHarness
from hermes.net.address_policy import FetchPolicy, ip_allowed

LIMITS = {"backoff_base": 0.01, "vendor_retries": 3, "max_request_bytes": 4096}


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeFirecrawl, ServerThread]]:
    vendor = FakeFirecrawl(api_key="fc-operator-secret")
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def vendor_gw(fake: tuple[FakeFirecrawl, ServerThread], tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_fc"), limits=LIMITS, firecrawl={
        "firecrawl_url": fake[1].url, "firecrawl_api_key": "fc-operator-secret"})
    with harness:
        harness.user("alice", "paid")
        yield harness


@pytest.fixture(scope="module")
def local_gw(pages: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with ServerThread(searxng_app()) as searx:
        harness = GatewayHarness(tmp_path_factory.mktemp("gw_local"), limits=LIMITS, firecrawl={
            "searxng_url": searx.url, "scrape": "local", "allow_loopback": True, "fetch_timeout": 1.5,
            "max_page_bytes": 1024 * 1024})
        with harness:
            harness.user("alice", "paid")
            yield harness


def call(gw: GatewayHarness, op: str, body: Any, *, host_routed: bool = False, token: str | None = None,
         **kwargs: Any) -> httpx.Response:
    headers = {"authorization": f"Bearer {token or gw.token('alice')}"}
    if host_routed:
        headers["host"] = gw.relay_host("firecrawl")
        url = f"{gw.url}/v2/{op}"
    else:
        url = f"{gw.relay_url('firecrawl')}/v2/{op}"
    return httpx.post(url, json=body, headers=headers, timeout=30, **kwargs)


UPSTREAM_SCRAPE = {"url": "https://example.org/a", "formats": ["markdown", "html"], "onlyMainContent": True,
                   "skipTlsVerification": True, "removeBase64Images": True, "fastMode": False, "blockAds": True,
                   "storeInCache": True, "maxAge": 14400000, "mobile": False, "origin": "python-sdk@4.17.0"}


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_search_and_scrape_through_firecrawl(vendor_gw: GatewayHarness, fake: tuple[FakeFirecrawl, ServerThread],
                                             host_routed: bool) -> None:
    token = vendor_gw.token("alice")
    resp = call(vendor_gw, "search", {"query": "hermes", "limit": 3, "origin": "python-sdk@4.17.0",
                                      "scrapeOptions": {"formats": ["markdown"]}}, host_routed=host_routed, token=token)
    assert resp.status_code == 200
    body = resp.json()
    assert body["success"] is True
    assert [r["url"] for r in body["data"]["web"]] == [f"https://example.com/{i}" for i in (1, 2, 3)]
    assert all({"url", "title", "description"} <= set(r) for r in body["data"]["web"])
    seen = fake[0].requests[-1]
    assert seen["path"] == "/v2/search"
    assert seen["headers"]["authorization"] == "Bearer fc-operator-secret"
    assert seen["json"] == {"query": "hermes", "limit": 3, "origin": "python-sdk@4.17.0"}  # scrapeOptions dropped
    assert token not in str(seen)

    resp = call(vendor_gw, "scrape", UPSTREAM_SCRAPE, host_routed=host_routed, token=token)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["markdown"].startswith("# Fake page") and data["html"]
    assert data["metadata"]["sourceURL"] == "https://example.org/a" and data["metadata"]["title"]
    assert fake[0].requests[-1]["json"] == UPSTREAM_SCRAPE


def test_a_200_answer_is_passed_on_only_when_it_says_success(vendor_gw: GatewayHarness,
                                                             fake: tuple[FakeFirecrawl, ServerThread]) -> None:
    vendor = fake[0]
    # "success": true as the first member (how Firecrawl writes its answers): passed on byte for byte, unparsed
    spaced = b' {\n  "success" : true , "data": {"web": []}, "note": "spaced"}'
    vendor.answer_next = [spaced]
    resp = call(vendor_gw, "search", {"query": "spaced"})
    assert resp.status_code == 200 and resp.content == spaced
    # anywhere else, the answer is read: true passes, false or missing is a vendor error
    vendor.answer_next = [b'{"data": {"web": []}, "success": true}']
    assert call(vendor_gw, "search", {"query": "later"}).status_code == 200
    for body in (b'{"success": false, "error": "x"}', b'{"data": {}}', b'{"successful": true}', b'{"success": truest}',
                 b'[{"success": true}]', b'not json'):
        vendor.answer_next = [body]
        resp = call(vendor_gw, "search", {"query": "bad"})
        assert resp.status_code == 502, body
        assert resp.json()["code"] in ("vendor_error", "vendor_bad_response"), body


def test_vendor_errors_retries_and_mapping(vendor_gw: GatewayHarness, fake: tuple[FakeFirecrawl, ServerThread]
                                           ) -> None:
    vendor = fake[0]
    before = len(vendor.requests)
    vendor.fail_next = [503, 502]
    assert call(vendor_gw, "search", {"query": "retry"}).status_code == 200
    assert len(vendor.requests) == before + 3

    vendor.fail_next = [500] * 10
    resp = call(vendor_gw, "search", {"query": "down"})
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_error"
    vendor.fail_next = []

    vendor.fail_next = [429] * 10
    resp = call(vendor_gw, "search", {"query": "busy"})
    assert resp.status_code == 429 and resp.json()["code"] == "vendor_rate_limited"
    assert int(resp.headers["retry-after"]) >= 1
    vendor.fail_next = [422]
    resp = call(vendor_gw, "scrape", {"url": "https://example.org"})
    assert resp.status_code == 422 and resp.json()["code"] == "vendor_rejected"

    vendor.api_key = "rotated-by-vendor"
    try:
        resp = call(vendor_gw, "search", {"query": "auth"})
    finally:
        vendor.api_key = "fc-operator-secret"
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_auth_failed"
    assert "fc-operator-secret" not in resp.text

    usage = httpx.get(vendor_gw.url + "/api/usage", headers={"authorization": f"Bearer {vendor_gw.token('alice')}"})
    rows = {(r["operation"], r["vendor"]): r for r in usage.json()["by_tool"]}
    search = rows[("search", "firecrawl")]
    assert search["calls"] > search["succeeded"] >= 1
    assert search["units"] == search["succeeded"]  # failed calls are recorded but cost no units


def test_bad_requests(vendor_gw: GatewayHarness) -> None:
    assert call(vendor_gw, "search", {"limit": 2}).json()["code"] == "invalid_request"
    assert call(vendor_gw, "search", {"query": "x", "limit": 0}).status_code == 400
    assert call(vendor_gw, "scrape", {"url": "https://a.b", "formats": ["json"]}).json()["code"] == "unsupported_format"
    assert call(vendor_gw, "scrape", ["not", "an", "object"]).json()["code"] == "invalid_json"
    big = call(vendor_gw, "search", {"query": "x" * 5000})
    assert big.status_code == 413 and big.json()["code"] == "request_too_large"
    token = vendor_gw.token("alice")
    auth = {"authorization": f"Bearer {token}"}
    base = vendor_gw.relay_url("firecrawl")
    assert httpx.post(base + "/v2/crawl", json={}, headers=auth).status_code == 404
    wrong = httpx.get(base + "/v2/search", headers=auth)
    assert wrong.status_code == 405 and "POST" in wrong.headers["allow"]
    assert httpx.post(vendor_gw.url + "/relay/fal-queue/fal-ai/x", headers=auth).json()["code"] == \
        "relay_not_available"
    unknown = httpx.post(vendor_gw.url + "/v2/search", headers={**auth, "host": f"nope-gateway.localhost:{1}"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_relay"


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_searxng_search_and_local_scrape(local_gw: GatewayHarness, pages: ServerThread, host_routed: bool) -> None:
    resp = call(local_gw, "search", {"query": "cats", "limit": 3}, host_routed=host_routed)
    assert resp.status_code == 200
    web = resp.json()["data"]["web"]
    assert [w["url"] for w in web] == [f"https://searx.example/{i}" for i in (1, 2, 3)]
    assert web[0]["title"] == "Searx 1: cats" and web[0]["description"] == "snippet 1"

    resp = call(local_gw, "scrape", {**UPSTREAM_SCRAPE, "url": pages.url + "/article"}, host_routed=host_routed)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    md = data["markdown"]
    assert md.startswith("# Main heading")
    assert "**bold**" in md and f"[relative link]({pages.url}/next)" in md
    assert "- one\n- two\n  - nested" in md and "1. first\n2. second" in md
    assert '```\nprint("hi")\n  indented\n```' in md and "> A quote." in md
    assert "| Name | Value |" in md and f"![A picture]({pages.url}/pic.png)" in md
    for chrome in ("Home", "Site banner", "Related links", "Copyright", "do-not-extract", "color: red", "base64"):
        assert chrome not in md
    assert "<main>" in data["html"]
    meta = data["metadata"]
    assert meta["title"] == "The Test Article" and meta["sourceURL"] == pages.url + "/article"
    assert meta["statusCode"] == 200 and meta["description"] == "A page for the gateway tests"


def test_local_scrape_follows_safe_redirects_and_reports_status(local_gw: GatewayHarness, pages: ServerThread
                                                                ) -> None:
    resp = call(local_gw, "scrape", {"url": pages.url + "/redirect?to=/article", "formats": ["markdown"]})
    assert resp.status_code == 200
    assert resp.json()["data"]["metadata"]["url"] == pages.url + "/article"
    missing = call(local_gw, "scrape", {"url": pages.url + "/missing"}).json()["data"]
    assert missing["metadata"]["statusCode"] == 404 and "No such page" in missing["markdown"]
    full = call(local_gw, "scrape", {"url": pages.url + "/article", "onlyMainContent": False, "formats": ["markdown"]})
    assert "Copyright footer" in full.json()["data"]["markdown"]


@pytest.mark.parametrize("target", [
    "/redirect?to=http://10.0.0.1/internal",
    "/redirect?to=http://169.254.169.254/latest/meta-data/",
    "/redirect?to=http://[::ffff:169.254.169.254]/",
    "/redirect?to=file:///etc/passwd",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/",
    "http://192.168.1.1/",
    "http://100.64.0.1/",
    "http://user:pw@example.com/",
    "ftp://example.com/file",
], ids=lambda t: t.split("to=")[-1][:40])
def test_ssrf_refusals(local_gw: GatewayHarness, pages: ServerThread, target: str) -> None:
    url = pages.url + target if target.startswith("/") else target
    resp = call(local_gw, "scrape", {"url": url})
    assert resp.status_code == 403, resp.text
    assert resp.json()["code"] == "url_not_allowed"


def test_local_scrape_limits(local_gw: GatewayHarness, pages: ServerThread) -> None:
    big = call(local_gw, "scrape", {"url": pages.url + "/big"})
    assert big.status_code == 413 and big.json()["code"] == "page_too_large"
    binary = call(local_gw, "scrape", {"url": pages.url + "/binary"})
    assert binary.status_code == 415
    slow = call(local_gw, "scrape", {"url": pages.url + "/slow?s=2"})
    assert slow.status_code == 504 and slow.json()["code"] == "fetch_timeout"


def test_loopback_is_refused_unless_allowed(pages: ServerThread, tmp_path_factory: pytest.TempPathFactory) -> None:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_strict"), firecrawl={"scrape": "local"})
    with harness:
        harness.user("alice", "paid")
        for url in (pages.url + "/article", f"http://localhost:{pages.port}/article", f"http://[::1]:{pages.port}/"):
            resp = call(harness, "scrape", {"url": url})
            assert resp.status_code == 403 and resp.json()["code"] == "url_not_allowed"
        off = call(harness, "search", {"query": "x"})
        assert off.status_code == 503 and off.json()["code"] == "backend_not_configured"


def test_ip_policy_table() -> None:
    strict, loose = FetchPolicy(), FetchPolicy(allow_loopback=True, allow_private=True)
    table = {
        "93.184.216.34": (True, True), "2606:4700::1111": (True, True),
        "127.0.0.1": (False, True), "::1": (False, True), "::ffff:127.0.0.1": (False, True),
        "10.1.2.3": (False, True), "172.16.0.1": (False, True), "192.168.0.1": (False, True),
        "100.64.0.1": (False, True), "fc00::1": (False, True),
        "169.254.169.254": (False, False), "fd00:ec2::254": (False, False), "100.100.100.200": (False, False),
        "169.254.1.1": (False, False), "fe80::1": (False, False), "0.0.0.0": (False, False),
        "224.0.0.1": (False, False), "64:ff9b::a9fe:a9fe": (False, False), "::ffff:10.0.0.1": (False, True),
    }
    for text, (strict_ok, loose_ok) in table.items():
        ip = ipaddress.ip_address(text)
        assert ip_allowed(ip, strict) is strict_ok, text
        assert ip_allowed(ip, loose) is loose_ok, text
