"""The usage dashboard over real HTTP (the Chromium tests are in test_dashboard_browser.py).

The gateway and its usage come from :func:`fakes.dashboard.usage_gateway`. Covered: sign-in by login
link and by the token form, cookie flags, CSRF and cross-site refusals, sign-out (the old cookie stops
working), disabled users and revoked tokens, the user page showing only its user's numbers, the admin
page behind its own session, hostile names escaped, the OpenAPI entries.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from fakes.dashboard import DAY, HOSTILE, Page, login_link, usage_gateway
from fakes.vendors.harness import GatewayHarness


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with usage_gateway(tmp_path_factory.mktemp("gw_dash")) as harness:
        yield harness


def set_cookies(resp: httpx.Response) -> dict[str, str]:
    """``{name: whole Set-Cookie line}``."""
    return {line.split("=", 1)[0]: line for line in resp.headers.get_list("set-cookie")}


@contextmanager
def signed_in(gw: GatewayHarness, name: str) -> Iterator[httpx.Client]:
    with gw.client() as c:
        resp = c.get(f"/dashboard?login={login_link(gw, name)}")
        assert resp.status_code == 303, resp.text
        yield c


def csrf_of(resp: httpx.Response) -> str:
    return Page(resp.text).hidden["csrf"]


# -- sign-in -----------------------------------------------------------------------------------------
def test_login_link_sets_a_strict_httponly_session_and_redirects(gw: GatewayHarness) -> None:
    with gw.client() as c:
        link = login_link(gw, "alice")
        resp = c.get(f"/dashboard?login={link}&days=30")
        assert resp.status_code == 303 and resp.headers["location"] == "/dashboard?days=30"
        line = set_cookies(resp)["hgw_session"]
        flags = [f.strip().lower() for f in line.split(";")]
        assert "httponly" in flags and "samesite=strict" in flags and "path=/dashboard" in flags
        assert "secure" not in flags  # plain http without an https public_url
        value = c.cookies["hgw_session"]
        assert link not in line
        # the cookie is not a gateway token: the API refuses it
        assert httpx.get(f"{gw.url}/api/usage", headers={"authorization": f"Bearer {value}"}).status_code == 401
        page = c.get("/dashboard")
        assert page.status_code == 200 and "Signed in as alice (plan paid)" in page.text
        for header, expected in (("x-frame-options", "DENY"), ("referrer-policy", "same-origin"),
                                 ("cache-control", "no-store")):
            assert page.headers[header] == expected
        csp = page.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script" not in csp
        assert "<script" not in page.text
        # the link was single use
        again = httpx.get(f"{gw.url}/dashboard?login={link}")
        assert again.status_code == 400 and "invalid, expired or already used" in again.text
        assert "hgw_session" not in set_cookies(again)
    # the session shows up as a dashboard row in the token list
    assert any(t["source"] == "dashboard" and t["user"] == "alice" for t in gw.side.accounts.list_tokens())


def test_token_form_sign_in_and_csrf(gw: GatewayHarness) -> None:
    token = gw.token("bob")
    with gw.client() as c:
        form = c.get("/dashboard")
        assert form.status_code == 200 and 'name="token"' in form.text and "Signed in" not in form.text
        assert "hgw_pre" in set_cookies(form)
        csrf = csrf_of(form)
        # no CSRF field, or one not bound to this browser's nonce: refused
        assert c.post("/dashboard/signin", data={"token": token}).status_code == 403
        with gw.client() as other:
            assert other.post("/dashboard/signin", data={"token": token, "csrf": csrf}).status_code == 403
        # a cross-site form post is refused before anything else
        evil = c.post("/dashboard/signin", data={"token": token, "csrf": csrf},
                      headers={"origin": "http://evil.example"})
        assert evil.status_code == 403 and "another site" in evil.text
        bad = c.post("/dashboard/signin", data={"token": "not-a-token", "csrf": csrf})
        assert bad.status_code == 401 and "refused" in bad.text and "hgw_session" not in set_cookies(bad)
        ok = c.post("/dashboard/signin", data={"token": token, "csrf": csrf},
                    headers={"origin": gw.url, "sec-fetch-site": "same-origin"})
        assert ok.status_code == 303 and ok.headers["location"] == "/dashboard"
        assert token not in set_cookies(ok)["hgw_session"]
        page = c.get("/dashboard")
        assert "Signed in as bob (plan free)" in page.text
        # the allowance of the free plan: 3 of 100 used this month
        allowance = Page(page.text).tables["allowances"]
        assert allowance[0][:3] == ["Web search and extract (firecrawl)", "3", "100"]
        assert allowance[0][3].endswith("-01T00:00:00Z")
        # revoking the token bob signed in with ends the dashboard session too
        gw.side.accounts.revoke(token)
        ended = c.get("/dashboard")
        assert "Signed in as" not in ended.text and "revoked" in ended.text


def test_where_a_form_came_from_decides(gw: GatewayHarness) -> None:
    """The headers a browser sends with a form decide, as Chromium sends them: ``Sec-Fetch-Site`` when present
    (``same-origin`` passes even with ``Origin: null``; ``same-site``, i.e. another port of this host, and
    ``cross-site`` do not); without it an ``Origin`` that is not ours, ``null`` included, is refused."""
    token = gw.token("bob")
    cases = [({"origin": "null", "sec-fetch-site": "same-origin"}, 303),
             ({"origin": gw.url, "sec-fetch-site": "same-origin"}, 303),
             ({"origin": gw.url, "sec-fetch-site": "same-site"}, 403),
             ({"origin": "null", "sec-fetch-site": "cross-site"}, 403),
             ({"origin": "null"}, 403),
             ({"origin": "http://localhost:1"}, 403),
             ({"origin": gw.url}, 303)]
    for headers, status in cases:
        with gw.client() as c:
            csrf = csrf_of(c.get("/dashboard"))
            resp = c.post("/dashboard/signin", data={"token": token, "csrf": csrf}, headers=headers)
            assert resp.status_code == status, headers
            assert ("another site" in resp.text) == (status == 403), headers


def test_login_code_in_the_form(gw: GatewayHarness) -> None:
    with gw.client() as c:
        csrf = csrf_of(c.get("/dashboard"))
        code = login_link(gw, "dora")
        assert c.post("/dashboard/signin", data={"token": code, "csrf": csrf}).status_code == 303
        assert "Signed in as dora" in c.get("/dashboard").text
        again = c.post("/dashboard/signin", data={"token": code, "csrf": csrf})
        assert again.status_code == 401 and "already used" in again.text


def test_sign_out_needs_the_session_csrf_and_ends_the_session(gw: GatewayHarness) -> None:
    with signed_in(gw, "alice") as c:
        page = c.get("/dashboard")
        csrf = csrf_of(page)
        old = c.cookies["hgw_session"]
        assert c.post("/dashboard/signout", data={}).status_code == 403
        assert c.post("/dashboard/signout", data={"csrf": "0" * 40}).status_code == 403
        with signed_in(gw, "alice") as other:  # another session's token is not this one's
            assert other.post("/dashboard/signout", data={"csrf": csrf}).status_code == 403
        assert "Signed in as alice" in c.get("/dashboard").text
        out = c.post("/dashboard/signout", data={"csrf": csrf})
        assert out.status_code == 303
        cleared = set_cookies(out)["hgw_session"].lower()
        assert "max-age=0" in cleared or "expires=thu, 01 jan 1970" in cleared
        replay = httpx.get(f"{gw.url}/dashboard", headers={"cookie": f"hgw_session={old}"})
        assert replay.status_code == 200 and "Signed in as" not in replay.text and "ended" in replay.text
        forged = httpx.get(f"{gw.url}/dashboard", headers={"cookie": f"hgw_session={old[:-4]}AAAA"})
        assert "Signed in as" not in forged.text


def test_disabled_user_is_refused(gw: GatewayHarness) -> None:
    with signed_in(gw, "dora") as c:
        gw.side.accounts.set_disabled("dora", True)
        try:
            resp = c.get("/dashboard")
            assert resp.status_code == 403 and "disabled" in resp.text and "Signed in as" not in resp.text
            link_page = httpx.get(f"{gw.url}/dashboard?login=" + _link_for_disabled(gw))
            assert link_page.status_code == 403 and "hgw_session" not in set_cookies(link_page)
        finally:
            gw.side.accounts.set_disabled("dora", False)


def _link_for_disabled(gw: GatewayHarness) -> str:
    gw.side.accounts.set_disabled("dora", False)
    link = login_link(gw, "dora")
    gw.side.accounts.set_disabled("dora", True)
    return link


# -- what a user sees -------------------------------------------------------------------------------
def test_user_page_shows_only_its_own_usage(gw: GatewayHarness) -> None:
    with signed_in(gw, "alice") as c:
        page = c.get("/dashboard?days=1&user=bob")  # there is no user parameter: still alice's own page
        assert page.status_code == 200
        parsed = Page(page.text)
        rows = parsed.tables["by-tool"]
        assert [r[:7] for r in rows] == [
            ["Web extract", "firecrawl relay, local", "scrape", "2", "1", "1", "$0.001"],
            ["Web search", "firecrawl relay, searxng", "search", "2", "2", "2", "$0.004"],
            ["Text to speech", "openai-audio relay, openai", "speech", "1", "1", "24", "$0.0024"],
        ]
        assert all(r[7].endswith(" ms") for r in rows)
        assert "bob" not in page.text and "bob-only" not in page.text and "mallory" not in page.text
        assert "allowances" not in parsed.tables  # the paid plan has no monthly cap
        cats = {(m["kind"], m["data-category"]) for m in parsed.marks}
        assert cats == {("bar", "firecrawl"), ("bar", "openai-audio"), ("point", "firecrawl"),
                        ("point", "openai-audio")}
        today = time.strftime("%Y-%m-%d", time.gmtime())
        bars = {m["data-category"]: m["data-units"] for m in parsed.marks if m["kind"] == "bar"
                and m["data-day"] == today}
        assert bars == {"firecrawl": "3", "openai-audio": "24"}
        # the last 30 days include the earlier day; a month long ago has nothing
        month = c.get("/dashboard?days=30")
        days = {m["data-day"] for m in Page(month.text).marks}
        assert today in days and time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * DAY)) in days
        assert 'data-days="31"' in month.text
        old = c.get("/dashboard?period=2001-02")
        assert old.status_code == 200 and "No usage in this period." in old.text and not Page(old.text).marks
        assert 'data-days="28"' in old.text
        bad = c.get("/dashboard?period=<b>x</b>")
        assert bad.status_code == 400 and "period must look like" in bad.text and "<b>x" not in bad.text


def test_hostile_names_are_escaped(gw: GatewayHarness) -> None:
    link = gw.side.oauth.create_login_link(gw.side.accounts.get_user(HOSTILE))
    with gw.client() as c:
        assert c.get(f"/dashboard?login={link}").status_code == 303
        page = c.get("/dashboard")
        assert page.status_code == 200 and HOSTILE not in page.text
        assert "Signed in as &lt;img src=x onerror=alert(1)&gt;&quot;&amp;" in page.text
        assert "<img" not in page.text


# -- the admin's page --------------------------------------------------------------------------------
@contextmanager
def admin_client(gw: GatewayHarness) -> Iterator[httpx.Client]:
    with gw.client() as c:
        csrf = csrf_of(c.get("/admin/dashboard"))
        resp = c.post("/admin/dashboard/signin", data={"admin_token": gw.side.admin_token, "csrf": csrf})
        assert resp.status_code == 303 and resp.headers["location"] == "/admin/dashboard"
        yield c


def test_admin_page_needs_the_admin_session(gw: GatewayHarness) -> None:
    with signed_in(gw, "alice") as user:
        resp = httpx.get(f"{gw.url}/admin/dashboard", headers={"cookie": f"hgw_admin={user.cookies['hgw_session']}"})
        assert resp.status_code == 200 and 'name="admin_token"' in resp.text and "bob" not in resp.text
    with gw.client() as c:
        csrf = csrf_of(c.get("/admin/dashboard"))
        wrong = c.post("/admin/dashboard/signin", data={"admin_token": "gwadm_wrong", "csrf": csrf})
        assert wrong.status_code == 403 and "hgw_admin" not in set_cookies(wrong)
        assert c.post("/admin/dashboard/signin", data={"admin_token": gw.side.admin_token}).status_code == 403
    with admin_client(gw) as admin:
        # the admin cookie does not open a user's page
        assert "Signed in as" not in httpx.get(f"{gw.url}/dashboard",
                                               headers={"cookie": f"hgw_session={admin.cookies['hgw_admin']}"}).text
        csrf = csrf_of(admin.get("/admin/dashboard"))
        old = admin.cookies["hgw_admin"]
        assert admin.post("/admin/dashboard/signout", data={"csrf": csrf}).status_code == 303
        replay = httpx.get(f"{gw.url}/admin/dashboard", headers={"cookie": f"hgw_admin={old}"})
        assert 'name="admin_token"' in replay.text and "bob" not in replay.text


def test_admin_page_shows_everyone_and_filters(gw: GatewayHarness) -> None:
    with admin_client(gw) as c:
        page = c.get("/admin/dashboard?days=1")
        assert page.status_code == 200 and "Signed in as the administrator" in page.text
        parsed = Page(page.text)
        per_user = {r[0]: r for r in parsed.tables["by-user"]}
        assert per_user["alice"][2:6] == ["5", "4", "27", "$0.0074"]
        assert per_user["bob"][1:6] == ["free", "3", "3", "3", "$0.006"]
        assert {r[0] for r in parsed.tables["by-tool"]} == {"alice", "bob", HOSTILE}
        assert HOSTILE not in page.text and "&lt;img src=x" in page.text
        bob = c.get("/admin/dashboard?user=bob&days=1")
        parsed = Page(bob.text)
        assert [r[:8] for r in parsed.tables["by-tool"]] == [
            ["bob", "Web search", "firecrawl relay, searxng", "search", "3", "3", "3", "$0.006"]]
        assert "alice" not in "".join(r[0] for r in parsed.tables["by-tool"])
        assert parsed.tables["allowances"][0][:3] == ["Web search and extract (firecrawl)", "3", "100"]
        assert 'value="bob" selected' in bob.text and 'href="dashboard?user=bob&amp;days=30"' in bob.text
        assert '<input type="hidden" name="days" value="1">' in bob.text
        unknown = c.get("/admin/dashboard", params={"user": "<script>alert(1)</script>"})
        assert unknown.status_code == 404 and "<script>" not in unknown.text
        assert "There is no user named &#x27;&lt;script&gt;" in unknown.text


def test_secure_cookie_behind_an_https_public_url(tmp_path: Path) -> None:
    with GatewayHarness(tmp_path, public_url="https://gw.example") as harness:
        harness.user("erin")
        link = harness.side.oauth.create_login_link(harness.side.accounts.get_user("erin"))
        with harness.client() as c:
            # a link followed from another site: a page of ours moves on, so the Strict cookie is sent
            resp = c.get(f"/dashboard?login={link}", headers={"sec-fetch-site": "cross-site"})
            assert resp.status_code == 200 and 'http-equiv="refresh"' in resp.text
            flags = [f.strip().lower() for f in set_cookies(resp)["hgw_session"].split(";")]
            assert "secure" in flags and "httponly" in flags and "samesite=strict" in flags
            form = c.get("/admin/dashboard")
            pre = set_cookies(form)["hgw_admin_pre"]
            assert "; secure" in pre.lower()
            nonce = pre.split(";")[0].split("=", 1)[1]  # a Secure cookie: httpx keeps it off plain http
            ok = c.post("/admin/dashboard/signin", headers={"origin": "https://gw.example",
                                                            "cookie": f"hgw_admin_pre={nonce}"},
                        data={"admin_token": harness.side.admin_token, "csrf": csrf_of(form)})
            assert ok.status_code == 303


def test_openapi_lists_the_dashboard(gw: GatewayHarness) -> None:
    spec = httpx.get(f"{gw.url}/openapi.json").json()
    paths = {p: ops for p, ops in spec["paths"].items() if "dashboard" in p}
    assert set(paths) == {"/dashboard", "/dashboard/signin", "/dashboard/signout", "/admin/dashboard",
                          "/admin/dashboard/signin", "/admin/dashboard/signout"}
    for path, ops in paths.items():
        for method in ops:
            resp = httpx.request(method.upper(), gw.url + path, data={} if method == "post" else None)
            assert str(resp.status_code) in ops[method]["responses"], (method, path, resp.status_code)
            if resp.status_code == 303:  # signing out without a session: back to the page
                assert resp.headers["location"] == path.removesuffix("/signout")
            else:
                assert resp.headers["content-type"].startswith("text/html")
            assert resp.headers["content-security-policy"].startswith("default-src 'none'")
