"""Malformed argument payloads for web_search and web_extract: nothing escapes dispatch.

For every payload, dispatch returns a JSON object; a failure is a deliberate ``{"error": ...}`` (never
the registry's catch-all ``"<tool> failed: <Exception>: ..."`` that marks an unexpected crash). Both
tools are routed to local fakes (SearXNG for search, Firecrawl for extraction), so well-formed payloads
that slip through really run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.vendors import FakeFirecrawl, ServerThread, searxng_app
from hermes.tools.registry import registry
from tools.web.support import configure

CRASH = re.compile(r"^web_(search|extract) failed: \w+(Error|Exception)\b")

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=12)
url_like = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["https://example.org/a", "http://a", "http://", "https://[::1", "http://x:99999/",
                     "javascript:alert(1)", "http://user:pw@example.org/", "http://example.org/\x00", " ",
                     "http://0x7f000001/", "https://example.org/" + "a" * 3000, "file:///etc/passwd",
                     "http://[fe80::1%25eth0]/", "https://例え.テスト/ページ", "http://example.org:0/"]),
)
search_args = st.one_of(
    json_value,
    st.fixed_dictionaries({}, optional={"query": st.one_of(st.text(max_size=30), json_value),
                                        "limit": st.one_of(st.integers(-5, 50), json_value),
                                        "extra": json_value}),
)
extract_args = st.one_of(
    json_value,
    st.fixed_dictionaries({}, optional={"urls": st.one_of(st.lists(url_like, max_size=7), json_value),
                                        "url": url_like, "extra": json_value}),
)
#: schema-valid shapes with hostile contents: these reach the handlers and the backends
near_search = st.fixed_dictionaries({"query": st.text(min_size=1, max_size=200)},
                                    optional={"limit": st.integers(1, 20)})
near_url = st.one_of(url_like, st.text(max_size=30).map(lambda path: f"https://example.org/{path}"),
                     st.text(max_size=30).map(lambda host: f"http://{host}/"))
near_extract = st.fixed_dictionaries({"urls": st.lists(near_url.filter(lambda u: 1 <= len(u) <= 2048),
                                                       min_size=1, max_size=5)})
raw_text = st.one_of(st.text(max_size=80), st.binary(max_size=40))


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[str, str]]:
    firecrawl = FakeFirecrawl(api_key="fc-fuzz")
    with ServerThread(firecrawl.app) as fc, ServerThread(searxng_app()) as searx:
        yield fc.url, searx.url


@pytest.fixture
def routed(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, fakes: tuple[str, str]) -> None:
    configure(hermes_home, monkeypatch, {"web": {"search_backend": "searxng", "extract_backend": "firecrawl"}},
              {"SEARXNG_URL": fakes[1], "FIRECRAWL_API_KEY": "fc-fuzz", "FIRECRAWL_API_URL": fakes[0]})


def _check(tool: str, payload: Any) -> None:
    text = registry.dispatch(tool, payload, task_id="fuzz")
    result = json.loads(text)
    assert isinstance(result, dict)
    if "error" in result:
        assert isinstance(result["error"], str) and result["error"]
        assert not CRASH.match(result["error"]), result["error"]
    else:
        assert isinstance(result.get("results"), list)


FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_an_explicit_null_limit_means_the_default(routed: None) -> None:
    """A case the fuzzer found: ``limit: null`` passes validation (null = not given) and crashed int()."""
    _check("web_search", {"query": "hermes", "limit": None})


@FUZZ
@given(payload=st.one_of(search_args, raw_text, search_args.map(json.dumps)))
def test_web_search_malformed_payloads(routed: None, payload: Any) -> None:
    _check("web_search", payload)


@FUZZ
@given(payload=near_search)
def test_web_search_hostile_but_well_formed(routed: None, payload: Any) -> None:
    _check("web_search", payload)


@FUZZ
@given(payload=st.one_of(extract_args, raw_text, extract_args.map(json.dumps)))
def test_web_extract_malformed_payloads(routed: None, payload: Any) -> None:
    _check("web_extract", payload)


@FUZZ
@given(payload=near_extract)
def test_web_extract_hostile_but_well_formed(routed: None, payload: Any) -> None:
    _check("web_extract", payload)
