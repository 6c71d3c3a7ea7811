"""The snapshot text and the URL guard without a browser (pure functions)."""

from __future__ import annotations

import itertools

import pytest

from hermes.tools.browser.guard import url_refusal
from hermes.tools.browser.snapshot import compact, find_lines, page_ranges, parse_ref, render_page

RAW = """- generic [active] [ref=e1]:
  - heading "Hi" [level=1] [ref=e2]
  - generic [ref=e3]:
    - textbox "Name" [ref=e5]: Ada
    - link "a: b" [ref=e7] [cursor=pointer]:
      - /url: "#x"
  - iframe [ref=e8]:
    - button "inner" [ref=f1e2]"""


def test_compact_keeps_refs_on_interactive_roles_and_drops_wrappers() -> None:
    snap = compact(RAW, lambda ref: f"e{100 + len(ref)}" if ref.startswith("f") else ref)
    assert snap.lines == ['- heading "Hi" [level=1]', '- textbox "Name" [@e5]: Ada', '- link "a: b" [@e7]:',
                          '  - /url: "#x"', "- iframe:", '  - button "inner" [@e104]']
    assert snap.interactive == {"e5": 'textbox "Name"', "e7": 'link "a: b"', "e104": 'button "inner"'}
    assert {"e1", "e2", "e3", "e8"} <= snap.every_ref


def test_pages_hold_the_budget_and_cover_every_line() -> None:
    lines = [f"- button \"Act {i}\" [@e{i}]" for i in range(1000)]
    ranges = page_ranges(lines, 2_000)
    assert ranges[0][0] == 0 and ranges[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    text, pages = render_page(lines, 2_000, 1, "/saved.txt")
    assert pages == len(ranges) and "page 1 of" in text and "/saved.txt" in text
    last, _ = render_page(lines, 2_000, pages, "/saved.txt")
    assert "Act 999" in last and "last page" in last
    with pytest.raises(ValueError, match="does not exist"):
        render_page(lines, 2_000, pages + 1, "")
    hits = find_lines(lines, "act 999", 2_000)
    assert hits == [{"line": 1000, "page": pages, "text": '- button "Act 999" [@e999]'}]


@pytest.mark.parametrize("value", ["@e5", "e5", " @e12 "])
def test_refs_parse(value: str) -> None:
    assert parse_ref(value).startswith("e")


@pytest.mark.parametrize("value", ["", "5", "@x5", "button", "@e5; rm", 7])
def test_malformed_refs_are_named(value: object) -> None:
    with pytest.raises(ValueError, match="is not an element ref"):
        parse_ref(value)


@pytest.mark.parametrize(("url", "words"), [
    ("http://169.254.169.254/", "metadata"), ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://metadata.google.internal/x", "metadata"), ("http://0.0.0.0/", "never opens"),
    ("http://127.0.0.1:8080/", "private or loopback"), ("http://10.0.0.1/", "private or loopback"),
    ("ftp://example.com/", "only http and https"), ("http://a:b@example.com/", "user info"),
    ("http://example.com:99999/", "not a valid URL"),
    ("https://example.com/?k=ghp_abcdefghijklmnopqrstuvwxyz1234", "secret"),
])
def test_the_guard_refuses(url: str, words: str) -> None:
    refusal = url_refusal(url, allow_private=False)
    assert refusal is not None and words in refusal


def test_the_guard_lets_public_pages_and_inner_schemes_through() -> None:
    assert url_refusal("https://example.com/a?b=c", allow_private=False) is None
    assert url_refusal("http://127.0.0.1:8080/", allow_private=True) is None
    assert url_refusal("data:image/png;base64,AAAA", allow_private=False, navigation=False) is None
    assert url_refusal("data:text/html,hi", allow_private=False) is not None  # never for browser_navigate
    assert url_refusal("http://169.254.169.254/", allow_private=True) is not None
