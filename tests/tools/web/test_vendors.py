"""The BYOK path of web_search and web_extract against each vendor's fake, through the registry.

One fake per vendor API (Firecrawl, Tavily, Exa, Brave, SearXNG) served on 127.0.0.1; the routes come
from config.yaml and the keys from the environment, exactly as a user sets them. The key-less search
runs the real ``ddgs`` library against a DuckDuckGo-shaped fake (its engine's URL pointed at it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vendors import FakeFirecrawl, ServerThread, searxng_app
from fakes.vendors.brave import FakeBrave
from fakes.vendors.duckduckgo import FakeDuckDuckGo
from fakes.vendors.exa import FakeExa
from fakes.vendors.tavily import FakeTavily
from hermes.tools.web.content import clean_snippet
from hermes.vendors import duckduckgo
from tools.web.support import call, configure, error_of


@pytest.fixture(scope="module")
def firecrawl() -> Iterator[tuple[FakeFirecrawl, str]]:
    fake = FakeFirecrawl(api_key="fc-user-key")
    with ServerThread(fake.app) as server:
        yield fake, server.url


@pytest.fixture(scope="module")
def exa() -> Iterator[tuple[FakeExa, str]]:
    fake = FakeExa(api_key="exa-user-key")
    with ServerThread(fake.app) as server:
        yield fake, server.url


@pytest.fixture(scope="module")
def brave() -> Iterator[tuple[FakeBrave, str]]:
    fake = FakeBrave(api_key="brave-user-key")
    with ServerThread(fake.app) as server:
        yield fake, server.url


@pytest.fixture(scope="module")
def searx() -> Iterator[str]:
    with ServerThread(searxng_app()) as server:
        yield server.url


def _byok(home: Path, monkeypatch: pytest.MonkeyPatch, vendor: str, origin: str, env: dict[str, str]) -> None:
    """Select ``vendor`` for both web functions, with its API at the fake (``web.<vendor>.base_url``)."""
    configure(home, monkeypatch, {"web": {"backend": vendor, vendor: {"base_url": origin}}}, env)


def _assert_search(result: dict[str, object], backend: str, count: int) -> list[dict[str, str]]:
    assert "error" not in result, result
    assert result["backend"] == backend
    assert "untrusted" in str(result["notice"])
    hits = result["results"]
    assert isinstance(hits, list) and len(hits) == count
    assert all(set(h) == {"title", "url", "snippet"} and h["url"].startswith("https://") for h in hits)
    return hits


# -- Firecrawl ----------------------------------------------------------------------------------------
def test_firecrawl_byok_search_and_extract(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                           firecrawl: tuple[FakeFirecrawl, str]) -> None:
    fake, url = firecrawl
    configure(hermes_home, monkeypatch, {"web": {"backend": "firecrawl"}},
              {"FIRECRAWL_API_KEY": "fc-user-key", "FIRECRAWL_API_URL": url})
    hits = _assert_search(call("web_search", {"query": "tide tables", "limit": 3}),
                          "firecrawl (FIRECRAWL_API_KEY)", 3)
    assert hits[0] == {"title": "Result 1 for tide tables", "url": "https://example.com/1",
                       "snippet": "About tide tables (1)"}
    seen = fake.requests[-1]
    assert seen["path"] == "/v2/search" and seen["headers"]["authorization"] == "Bearer fc-user-key"
    assert seen["json"]["query"] == "tide tables" and seen["json"]["limit"] == 3

    result = call("web_extract", {"urls": ["https://example.org/a"]})
    page = result["results"][0]
    assert page["url"] == "https://example.org/a" and page["title"] == "Fake page"
    assert "Scraped https://example.org/a" in page["content"]
    body = fake.requests[-1]["json"]
    assert body["url"] == "https://example.org/a" and body["onlyMainContent"] is True
    assert body["formats"] == ["markdown", "html"]


def test_firecrawl_self_hosted_without_key_sends_no_credential(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch, firecrawl: tuple[FakeFirecrawl, str]) -> None:
    fake, url = firecrawl
    configure(hermes_home, monkeypatch, {"web": {"backend": "firecrawl"}}, {"FIRECRAWL_API_URL": url})
    error = error_of("web_search", {"query": "x"})
    assert "authorization" not in fake.requests[-1]["headers"]
    assert error.startswith("web search failed via firecrawl (FIRECRAWL_API_URL): firecrawl answered HTTP 401")


def test_wrong_key_names_the_variable_and_never_the_key(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch, tavily: tuple[FakeTavily, str]) -> None:
    _byok(hermes_home, monkeypatch, "tavily", tavily[1], {"TAVILY_API_KEY": "tvly-wrong-key"})
    error = error_of("web_search", {"query": "x"})
    assert "HTTP 401" in error and "Check TAVILY_API_KEY in ~/.hermes/.env" in error
    assert "tvly-wrong-key" not in error


# -- Tavily -------------------------------------------------------------------------------------------
def test_tavily_search_and_extract(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                   tavily: tuple[FakeTavily, str]) -> None:
    fake, url = tavily
    _byok(hermes_home, monkeypatch, "tavily", url, {"TAVILY_API_KEY": "tvly-user-key"})
    hits = _assert_search(call("web_search", {"query": "lighthouses", "limit": 4}), "tavily (TAVILY_API_KEY)", 4)
    assert hits[1]["snippet"] == "Relevant excerpt 2 about lighthouses."
    assert fake.requests[-1]["json"]["max_results"] == 4
    assert fake.requests[-1]["headers"]["authorization"] == "Bearer tvly-user-key"

    urls = ["https://site.example/ok", "https://site.example/fail", "https://site.example/as-html"]
    result = call("web_extract", {"urls": urls})
    assert fake.requests[-1]["json"]["urls"] == urls
    assert [r["url"] for r in result["results"]] == [urls[0], urls[2]]
    assert "Extracted text of https://site.example/ok." in result["results"][0]["content"]
    converted = result["results"][1]["content"]  # the backend sent HTML: converted here, chrome dropped
    assert "The backend sent HTML for" in converted and "<p>" not in converted
    assert "Menu Home About" not in converted and "Footer links" not in converted
    assert result["failed"] == [{"url": urls[1], "error": "Failed to fetch url"}]


# -- Exa ----------------------------------------------------------------------------------------------
def test_exa_search_and_contents(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, exa: tuple[FakeExa, str]) -> None:
    fake, url = exa
    _byok(hermes_home, monkeypatch, "exa", url, {"EXA_API_KEY": "exa-user-key"})
    hits = _assert_search(call("web_search", {"query": "coral reefs"}), "exa (EXA_API_KEY)", 5)
    assert hits[0]["title"] == "Exa 1: coral reefs" and hits[0]["snippet"].startswith("Exa page text about coral")
    assert len(hits[0]["snippet"]) <= 500
    assert fake.requests[-1]["headers"]["x-api-key"] == "exa-user-key"
    assert "authorization" not in fake.requests[-1]["headers"]

    result = call("web_extract", {"urls": ["https://docs.example/guide", "https://docs.example/missing"]})
    assert "Full text of https://docs.example/guide from Exa." in result["results"][0]["content"]
    assert result["failed"][0]["url"] == "https://docs.example/missing"
    assert "CRAWL_NOT_FOUND" in result["failed"][0]["error"] and "404" in result["failed"][0]["error"]


# -- Brave --------------------------------------------------------------------------------------------
def test_brave_search_strips_highlight_markup(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                              brave: tuple[FakeBrave, str]) -> None:
    fake, url = brave
    _byok(hermes_home, monkeypatch, "brave", url, {"BRAVE_API_KEY": "brave-user-key"})
    hits = _assert_search(call("web_search", {"query": "kelp", "limit": 2}), "brave (BRAVE_API_KEY)", 2)
    assert hits[0]["snippet"] == "A page about kelp & more (1)."
    assert fake.requests[-1]["headers"]["x-subscription-token"] == "brave-user-key"
    assert fake.requests[-1]["params"] == {"q": "kelp", "count": "2"}
    assert call("web_search", {"query": "nothing"})["results"] == []


def test_brave_extract_falls_to_the_local_fetcher(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                  brave: tuple[FakeBrave, str]) -> None:
    """Brave cannot extract: with web.backend brave, extraction runs on this machine (SSRF rules apply)."""
    _byok(hermes_home, monkeypatch, "brave", brave[1], {"BRAVE_API_KEY": "brave-user-key"})
    error = error_of("web_extract", {"urls": ["http://127.0.0.1:9/"]})
    assert error.startswith("could not extract http://127.0.0.1:9/: not fetched:")


# -- SearXNG ------------------------------------------------------------------------------------------
def test_searxng_from_the_environment_alone(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, searx: str) -> None:
    """GW-7 env-only backend: SEARXNG_URL with no selection saved is the search route."""
    configure(hermes_home, monkeypatch, {}, {"SEARXNG_URL": searx})
    hits = _assert_search(call("web_search", {"query": "otters", "limit": 3}), "searxng (SEARXNG_URL)", 3)
    assert hits[0] == {"title": "Searx 1: otters", "url": "https://searx.example/1", "snippet": "snippet 1"}


# -- DuckDuckGo (key-less, ddgs) -----------------------------------------------------------------------
@pytest.fixture
def ddg(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDuckDuckGo]:
    engines = pytest.importorskip("ddgs.engines.duckduckgo")
    Duckduckgo = engines.Duckduckgo

    fake = FakeDuckDuckGo()
    with ServerThread(fake.app) as server:
        monkeypatch.setattr(Duckduckgo, "search_url", f"{server.url}/html/")
        yield fake


def test_keyless_search_runs_ddgs_against_a_duckduckgo_page(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                            ddg: FakeDuckDuckGo) -> None:
    configure(hermes_home, monkeypatch, {})  # nothing configured: the key-less default
    hits = _assert_search(call("web_search", {"query": "sea glass", "limit": 4}), "duckduckgo (key-less, ddgs)", 4)
    assert hits[0] == {"title": "DDG 1: sea glass", "url": "https://ddg.example/1",
                       "snippet": "Snippet 1 mentioning sea glass"}
    assert all("y.js" not in h["url"] for h in hits)  # the ad result is dropped
    assert ddg.requests[-1]["form"]["q"] == "sea glass"


def test_keyless_search_without_ddgs_names_the_package(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(hermes_home, monkeypatch, {"web": {"search_backend": "duckduckgo"}})
    monkeypatch.setitem(sys.modules, "ddgs", None)  # as if not installed
    assert error_of("web_search", {"query": "x"}) == duckduckgo.MISSING_MESSAGE
    assert "'ddgs'" in duckduckgo.MISSING_MESSAGE and "pip install ddgs" in duckduckgo.MISSING_MESSAGE


def test_ddgs_result_mapping() -> None:
    """The adapter's mapping of a recorded ``DDGS().text()`` answer: odd entries dropped, duplicates merged."""
    recorded = [
        {"title": "Python (programming language)", "href": "https://en.wikipedia.org/wiki/Python",
         "body": "Python is a high-level, general-purpose programming language."},
        {"title": "dup", "href": "https://en.wikipedia.org/wiki/Python", "body": "again"},
        {"title": "no scheme", "href": "javascript:alert(1)", "body": ""},
        "not a dict",
        {"title": None, "href": "https://www.python.org/", "body": 42},
        {"title": "Third", "href": "https://docs.python.org/3/", "body": "Docs"},
    ]
    mapped = duckduckgo.parse_results(recorded, limit=5)
    assert [(r.url, r.title, r.body) for r in mapped] == [
        ("https://en.wikipedia.org/wiki/Python", "Python (programming language)",
         "Python is a high-level, general-purpose programming language."),
        ("https://www.python.org/", "", ""),
        ("https://docs.python.org/3/", "Third", "Docs"),
    ]
    assert len(duckduckgo.parse_results(recorded, limit=1)) == 1
    assert clean_snippet("<b>A</b> &amp;\n  B") == "A & B"


def test_registration_and_instant_offline_checks(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both tools are async, in the web toolset, and their checks answer without any network I/O."""
    import socket

    from hermes.tools.registry import registry

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("an availability check touched the network")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    configure(hermes_home, monkeypatch, {"web": {"backend": "nous"}})  # selected but logged out
    for name in ("web_search", "web_extract"):
        entry = registry.get(name)
        assert entry is not None and entry.is_async and entry.toolset == "web"
        assert entry.check_fn is not None
        answer = entry.check_fn()
        assert isinstance(answer, tuple)
        ok, reason = answer
        assert not ok and reason and "not logged in to Nous Portal" in reason  # never ✓ for a gateway logged out of
