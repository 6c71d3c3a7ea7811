"""x_search against an xAI Responses fake (requirement T-X): schema gating, request shape, filters, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.x.tool  # noqa: F401  (registers x_search)
from fakes.vendors.fal import FastServerThread as ServerThread
from fakes.vendors.fal import SwapApp
from fakes.vendors.xai import POST_URL, FakeXAI
from hermes.errors import ToolError
from hermes.tools.registry import registry
from hermes.tools.x.search import check_dates


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[SwapApp, ServerThread]]:
    swap = SwapApp(FakeXAI().app)
    with ServerThread(swap) as running:
        yield swap, running


@pytest.fixture
def xai(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, server: tuple[SwapApp, ServerThread]) -> FakeXAI:
    fake = FakeXAI()
    swap, running = server
    swap.app = fake.app
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    monkeypatch.setenv("XAI_BASE_URL", running.url + "/v1")
    registry.invalidate_checks()
    return fake


def search(args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(registry.dispatch("x_search", args))
    assert isinstance(result, dict)
    return result


def test_left_out_of_the_schema_without_a_key(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XAI_API_KEY", raising=False)
    registry.invalidate_checks()
    assert registry.availability("x_search") == (False, "missing XAI_API_KEY")
    assert registry.definitions(["x_search"]) == []
    assert "not available: missing XAI_API_KEY" in search({"query": "x"})["error"]
    (hermes_home / ".env").write_text("XAI_API_KEY=from-dotenv\n")
    registry.invalidate_checks()
    assert registry.availability("x_search")[0] is True


def test_search_with_citations(xai: FakeXAI, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("x_search:\n  model: grok-test\n")
    result = search({"query": "the launch", "allowed_x_handles": ["@hermes", "nous_research"],
                     "from_date": "2025-01-01", "to_date": "2025-01-31", "enable_image_understanding": True})
    assert result["success"] and result["answer"] == "People on X say the launch is going well.", result
    assert result["citations"] == [{"url": POST_URL, "title": "1"}] and result["degraded"] is False
    assert result["model"] == "grok-test"
    request = xai.requests[0]
    assert request["path"] == "/v1/responses" and request["headers"]["authorization"] == "Bearer xai-test"
    assert request["json"] == {
        "model": "grok-test", "input": [{"role": "user", "content": "the launch"}], "store": False,
        "tools": [{"type": "x_search", "allowed_x_handles": ["hermes", "nous_research"], "from_date": "2025-01-01",
                   "to_date": "2025-01-31", "enable_image_understanding": True}],
    }


def test_filters_without_citations_are_flagged(xai: FakeXAI) -> None:
    xai.cite = False
    result = search({"query": "q", "excluded_x_handles": ["spam"]})
    assert result["degraded"] is True and "no post was cited" in result["degraded_reason"]
    assert search({"query": "q"})["degraded"] is False


@pytest.mark.parametrize("args, message", [
    ({"from_date": "2025-13-01"}, "is not a real date"),
    ({"from_date": "01/02/2025"}, "must be a date written YYYY-MM-DD"),
    ({"from_date": "2025-02-01", "to_date": "2025-01-01"}, "'from_date' is after 'to_date'"),
    ({"allowed_x_handles": ["a"], "excluded_x_handles": ["b"]}, "not both"),
    ({"allowed_x_handles": ["not a handle!"]}, "is not an X handle"),
])
def test_bad_filters_are_refused_before_any_call(xai: FakeXAI, args: dict[str, Any], message: str) -> None:
    assert message in search({"query": "q", **args})["error"]
    assert not xai.requests


def test_future_start_is_refused() -> None:
    today = datetime.now(UTC).date()
    with pytest.raises(ToolError, match="is in the future"):
        check_dates(today + timedelta(days=2), None, today)
    check_dates(today - timedelta(days=1), today + timedelta(days=1), today)  # a future end is fine
    check_dates(date(2020, 1, 1), None, today)


def test_refused_key(xai: FakeXAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XAI_API_KEY", "wrong")
    error = search({"query": "q"})["error"]
    assert "HTTP 401: Incorrect API key provided" in error and "Check XAI_API_KEY" in error


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
HANDLES = st.lists(st.one_of(st.sampled_from(["@a", "b_c", "", "@", "x" * 16, "\ud800", "a b"]), st.text(max_size=8)),
                   max_size=12)
DATES = st.one_of(st.sampled_from(["2025-01-01", "2025-02-30", "2999-01-01", "0000-00-00", "2025-1-1", ""]),
                  st.dates().map(lambda d: d.isoformat()), st.text(max_size=12))
SHAPED = st.fixed_dictionaries(
    {"query": st.text(min_size=1, max_size=50)},
    optional={"allowed_x_handles": HANDLES, "excluded_x_handles": HANDLES, "from_date": DATES, "to_date": DATES,
              "enable_image_understanding": st.booleans(), "enable_video_understanding": st.booleans()},
)
LOOSE = st.fixed_dictionaries({}, optional={"query": st.one_of(st.text(max_size=20), JSON),
                                            "allowed_x_handles": st.one_of(HANDLES, JSON), "from_date": JSON})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.one_of(SHAPED, SHAPED, LOOSE, st.dictionaries(st.text(max_size=8), JSON, max_size=3),
                         st.text(max_size=30)))
def test_no_exception_escapes_dispatch(xai: FakeXAI, payload: Any) -> None:
    result = json.loads(registry.dispatch("x_search", payload))
    assert isinstance(result, dict)
    assert ("error" in result) != ("success" in result), result
    if "error" in result:
        assert isinstance(result["error"], str) and not result["error"].startswith("x_search failed:"), result
