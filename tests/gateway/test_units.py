"""Pure parts of the gateway: JWT, config files, host routing, log redaction, secrets, HTML → Markdown."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import ConfigError
from hermes.net.html2md import html_to_markdown
from hermes.toolgateway.accesslog import redact_query
from hermes.toolgateway.app import relay_label_for_host
from hermes.toolgateway.config import load_config
from hermes.toolgateway.portal import jwt, keys

SECRET = b"0123456789abcdef0123456789abcdef"


def test_jwt_round_trip_and_refusals() -> None:
    token = jwt.sign({"sub": "u", "exp": 2000}, SECRET)
    assert jwt.verify(token, SECRET, now=1000) == {"sub": "u", "exp": 2000}
    head, payload, sig = token.split(".")
    assert jwt.b64url_decode(head) == b'{"alg":"HS256","typ":"JWT"}'
    cases = {
        "expired": (token, 2000.0),
        "bad_signature": (jwt.sign({"exp": 2000}, b"x" * 32), 1000.0),
        "malformed": ("a.b", 1000.0),
    }
    for reason, (tok, now) in cases.items():
        with pytest.raises(jwt.InvalidToken) as info:
            jwt.verify(tok, SECRET, now=now)
        assert info.value.reason == reason
    with pytest.raises(jwt.InvalidToken) as info:
        jwt.verify(jwt.sign({"sub": "no-exp"}, SECRET), SECRET, now=0)
    assert info.value.reason == "malformed"
    with pytest.raises(jwt.InvalidToken):
        jwt.verify(jwt.sign({"exp": 5000, "nbf": 3000}, SECRET), SECRET, now=1000)
    hs512 = jwt.b64url_encode(b'{"alg":"HS512","typ":"JWT"}')
    with pytest.raises(jwt.InvalidToken):
        jwt.verify(f"{hs512}.{payload}.{sig}", SECRET, now=1000)
    assert jwt.unverified_claims(token) == {"sub": "u", "exp": 2000}
    assert jwt.unverified_claims("garbage") is None


def test_config_files_toml_and_yaml(tmp_path: Path) -> None:
    toml = tmp_path / "gw.toml"
    toml.write_text(
        'port = 9000\ndomain = "Gateway.Example.COM."\npublic_url = "https://gw.example.com/"\n'
        '[plans.free]\ncoverage = ["firecrawl"]\nmonthly = { firecrawl = 7 }\n'
        '[costs]\n"firecrawl.search" = 0.002\n'
        '[relays.firecrawl]\nsearxng_url = "http://searx:8888/"\nscrape = "local"\n'
    )
    cfg = load_config(toml, env={"FIRECRAWL_API_KEY": ""}, home=tmp_path)
    assert cfg.port == 9000 and cfg.domain == "gateway.example.com"
    assert cfg.base_url() == "https://gw.example.com"
    assert cfg.plans["free"].monthly == {"firecrawl": 7} and cfg.plans["free"].coverage == {"firecrawl"}
    assert cfg.firecrawl.search == "searxng" and cfg.firecrawl.searxng_url == "http://searx:8888"
    assert cfg.unit_cost("firecrawl", "search", "searxng") == 0.002 and cfg.unit_cost("fal", "x", "y") == 0.0
    yaml = tmp_path / "gw.yaml"
    yaml.write_text("relays:\n  firecrawl:\n    firecrawl_url: http://fc.local\nadmin_token_env: MY_ADMIN\n")
    cfg = load_config(yaml, env={"FIRECRAWL_API_KEY": "fc-k", "MY_ADMIN": "adm"}, home=tmp_path,
                      overrides={"port": 1234, "firecrawl.scrape": "local"})
    assert cfg.firecrawl.search == "firecrawl" and cfg.firecrawl.scrape == "local"
    assert cfg.firecrawl.firecrawl_api_key == "fc-k" and "fc-k" not in repr(cfg)
    assert cfg.admin_token == "adm" and "adm'" not in repr(cfg) and cfg.port == 1234
    defaults = load_config(None, env={}, home=tmp_path)
    assert (defaults.host, defaults.port, defaults.domain) == ("127.0.0.1", 8787, "localhost")
    assert (defaults.firecrawl.search, defaults.firecrawl.scrape) == ("off", "local")
    assert defaults.db_path == tmp_path / "toolgateway" / "gateway.db"
    for bad in ('port = "x"', '[relays.firecrawl]\nsearch = "bing"', '[plans.free]\ncoverage = ["web"]',
                '[costs]\nx = -1', "not toml ["):
        toml.write_text(bad)
        with pytest.raises(ConfigError):
            load_config(toml, env={}, home=tmp_path)


def test_relay_label_for_host() -> None:
    assert relay_label_for_host("firecrawl-gateway.localhost:8787", "localhost") == "firecrawl"
    assert relay_label_for_host("FAL-QUEUE-gateway.localhost.", "localhost") == "fal-queue"
    assert relay_label_for_host("krea-gateway.example.com", "example.com") == "krea"
    for host in ("localhost:8787", "127.0.0.1:8787", "[::1]:8787", "a.b-gateway.localhost", "-gateway.localhost",
                 "firecrawl-gateway.evil.com", "firecrawl-gateway.localhost.evil.com"):
        assert relay_label_for_host(host, "localhost") is None, host


def test_access_log_redaction() -> None:
    text = redact_query(b"user_code=ABCD&login=ll_secret&access_token=t0k&api_key=k&days=7")
    assert "ll_secret" not in text and "t0k" not in text and "=k&" not in text
    assert "days=7" in text and "login=***" in text and "user_code=***" in text
    assert redact_query(b"") == ""


def test_secret_created_once_across_threads(tmp_path: Path) -> None:
    path = tmp_path / "state" / "secret"
    seen: list[bytes] = []
    threads = [threading.Thread(target=lambda: seen.append(keys.signing_secret(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 1 and len(seen[0]) == 32
    assert path.stat().st_mode & 0o777 == 0o600
    path.chmod(0o644)
    with pytest.raises(ConfigError):
        keys.signing_secret(path)
    assert keys.admin_token(tmp_path / "adm", "configured") == "configured"
    assert keys.admin_token(tmp_path / "adm") == keys.admin_token(tmp_path / "adm")


@pytest.mark.parametrize(("html", "expected"), [
    ("<p>a<br>b</p>", "a\nb"),
    ("<h2>Title <small>x</small></h2><p>t</p>", "## Title x\n\nt"),
    ("<p>Tom &amp; Jerry &lt;3</p>", "Tom & Jerry <3"),
    ("<p><a href='#top'>up</a> <a href='javascript:x()'>js</a> <a href='/p?q=1'>p</a></p>",
     "up js [p](https://site.test/p?q=1)"),
    ("<blockquote><p>q1</p><p>q2</p></blockquote>", "> q1\n\n> q2"),
    ("<table><tr><td>a|b</td><td>c</td></tr><tr><td>d</td></tr></table>", "| a\\|b | c |\n| --- | --- |\n| d |  |"),
    ("<p>x<code>y  z</code></p>", "x`y z`"),
    ("<html><head><title>T</title><body><p>unclosed head</p>", "unclosed head"),
    ("<div><nav>menu</nav><p>text</p><footer>foot</footer></div>", "text"),
    ("<div role='navigation'>menu</div><p>text</p>", "text"),
    ("<main></main><p>outside main</p>", "outside main"),
    ("<article><p>one</p></article><p>chrome</p><article><p>two</p></article>", "one\n\ntwo"),
    ("<p>before<script>evil()</script><style>p{}</style>after</p>", "beforeafter"),
    ("<pre>  keep\n    spaces</pre>", "```\n  keep\n    spaces\n```"),
    ("", ""),
])
def test_html_to_markdown(html: str, expected: str) -> None:
    assert html_to_markdown(html, "https://site.test/dir/").markdown.strip() == expected


def test_html_metadata_and_links() -> None:
    page = html_to_markdown('<html lang="de"><head><title> A  title </title><meta name="description" '
                            'content="desc"></head><body><a href="x">x</a><a href="x">again</a></body></html>',
                            "https://s.test/")
    assert (page.title, page.description, page.language) == ("A title", "desc", "de")
    assert page.links == ["https://s.test/x"]


def test_request_and_answer_bodies_are_read_as_json_loads_reads_bytes() -> None:
    import json

    from hermes.toolgateway.errors import loads_body

    text = '{"q": "caf\u00e9 \u4e2d", "n": [1, 2.5, null]}'
    bodies = [text.encode(enc) for enc in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32")]
    bodies += [b"[]", b" 1", b'"x"', b"{}"]
    for body in bodies:
        assert loads_body(body) == json.loads(body), body
    for bad in (b"\xff\xff", b"{", b"caf\xe9"):
        with pytest.raises(ValueError):
            loads_body(bad)


def test_a_relay_result_is_sent_as_starlettes_response_would_send_it() -> None:
    import asyncio

    from starlette.responses import Response

    from hermes.toolgateway.relays.base import RelayResult

    cases = [RelayResult(200, b'{"a":1}'), RelayResult(201, b"x", "text/plain"),
             RelayResult(200, b"x", "text/html; charset=latin-1", {"X-Request-Id": "r1", "Cache-Control": "no-store"}),
             RelayResult(204, b""), RelayResult(304, b""),
             RelayResult(200, b"abc", "audio/mpeg", {"Content-Length": "3"}),
             RelayResult(302, b"", "application/json", {"location": "https://example.org/a", "content-type": "text/x"})]

    async def sent(app: Any) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        await app(send)
        return messages

    for result in cases:
        ours = asyncio.run(sent(result.prepared().send))
        theirs = asyncio.run(sent(lambda send, r=result: Response(r.body, r.status, r.headers, r.content_type)(
            {"type": "http"}, None, send)))
        assert ours == theirs, result
    # a header that cannot be sent fails while the answer is prepared (inside the metering), not after it
    with pytest.raises(UnicodeEncodeError):
        RelayResult(200, b"x", "audio/mpeg; name=\u20ac").prepared()
    with pytest.raises(UnicodeEncodeError):
        RelayResult(200, b"x", headers={"x-call-id": "\u20ac"}).prepared()


def test_request_headers_get_as_starlette_headers_do() -> None:
    from starlette.datastructures import Headers

    from hermes.toolgateway.relays.base import RequestHeaders

    scope = {"type": "http", "headers": [(b"authorization", b"Bearer a"), (b"x-dup", b"1"), (b"x-dup", b"2"),
                                         (b"x-latin", "caf\u00e9".encode("latin-1"))]}
    ours, theirs = RequestHeaders(scope=scope), Headers(scope=scope)
    for key in ("authorization", "Authorization", "AUTHORIZATION", "x-dup", "X-Latin", "missing", "content-length"):
        assert ours.get(key) == theirs.get(key) and ours.get(key, "d") == theirs.get(key, "d"), key
    assert ours.getlist("x-dup") == ["1", "2"] and "x-dup" in ours
