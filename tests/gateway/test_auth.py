"""Gateway authentication and entitlement over real HTTP: every refusal has its status and code.

One gateway (uvicorn on 127.0.0.1, Firecrawl fake behind it) serves the whole module; users and tokens
are made through a second connection to its database, as the ``hermes toolgateway`` CLI does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.vendors import FakeFirecrawl, ServerThread
from fakes.vendors.harness import GatewayHarness
from hermes.toolgateway.portal import jwt

SEARCH = "/relay/firecrawl/v2/search"


@pytest.fixture(scope="module")
def vendor() -> Iterator[tuple[FakeFirecrawl, ServerThread]]:
    fake = FakeFirecrawl(api_key="fc-operator-key")
    with ServerThread(fake.app) as server:
        yield fake, server


@pytest.fixture(scope="module")
def gw(vendor: tuple[FakeFirecrawl, ServerThread],
       tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    home = tmp_path_factory.mktemp("gw_auth_home")
    harness = GatewayHarness(
        home, access_log=str(home / "access.log"),
        plans={"free": {"coverage": ["fal"], "monthly": {"fal": 10}}},
        firecrawl={"firecrawl_url": vendor[1].url, "firecrawl_api_key": "fc-operator-key"},
    )
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("frank", "free"), ("nora", "none")):
            harness.user(name, plan)
        harness.user("eve", "paid", plan_expires=time.time() - 60)
        yield harness


def search(gw: GatewayHarness, token: str | None, **headers: str) -> httpx.Response:
    hdrs = {"authorization": f"Bearer {token}"} if token is not None else {}
    hdrs.update(headers)
    return httpx.post(gw.relay_url("firecrawl") + "/v2/search", json={"query": "q", "limit": 1}, headers=hdrs,
                      timeout=30)


def assert_refused(resp: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["code"] == code
    assert isinstance(body["error"], str) and body["error"]
    assert body["success"] is False
    return dict(body)


def test_no_token_is_401_with_www_authenticate(gw: GatewayHarness) -> None:
    resp = search(gw, None)
    assert_refused(resp, 401, "missing_token")
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert_refused(search(gw, "", authorization="Basic YWxpY2U6eA=="), 401, "missing_token")


def test_garbage_and_badly_signed_tokens_are_401(gw: GatewayHarness) -> None:
    assert_refused(search(gw, "not-a-token"), 401, "invalid_token")
    good = gw.token("alice")
    claims = jwt.unverified_claims(good)
    assert claims is not None
    assert_refused(search(gw, jwt.sign(claims, b"another-gateway-secret-32-bytes!")), 401, "invalid_token")
    # the claims changed under a valid signature
    head, _, sig = good.split(".")
    forged = f"{head}.{jwt.b64url_encode(json.dumps({**claims, 'sub': 'usr_other'}).encode())}.{sig}"
    assert_refused(search(gw, forged), 401, "invalid_token")
    # alg "none" — what the upstream client itself would accept — is refused here
    none_head = jwt.b64url_encode(b'{"alg":"none","typ":"JWT"}')
    assert_refused(search(gw, f"{none_head}.{good.split('.')[1]}."), 401, "invalid_token")


def test_token_not_issued_here_is_401(gw: GatewayHarness) -> None:
    claims = jwt.unverified_claims(gw.token("alice"))
    assert claims is not None
    stranger = jwt.sign({**claims, "jti": "tok_never_issued"}, gw.side.accounts.secret)
    assert_refused(search(gw, stranger), 401, "unknown_token")


def test_expired_token_is_401_with_portal_url(gw: GatewayHarness) -> None:
    user = gw.side.accounts.get_user("alice")
    expired = gw.side.accounts.issue_access_token(user, ttl=-5).token
    body = assert_refused(search(gw, expired), 401, "token_expired")
    assert body["portal_url"] == gw.config.base_url()


def test_revocation_takes_effect_on_the_next_request(gw: GatewayHarness) -> None:
    token = gw.token("alice")
    assert search(gw, token).status_code == 200
    gw.side.accounts.revoke(token)
    assert_refused(search(gw, token), 401, "token_revoked")
    resp = httpx.get(gw.url + "/api/oauth/account", headers={"authorization": f"Bearer {token}"})
    assert_refused(resp, 401, "token_revoked")
    assert search(gw, gw.token("alice")).status_code == 200  # other tokens of the user still work


def test_changes_made_by_hand_in_the_database_apply_on_the_next_request(gw: GatewayHarness) -> None:
    """The server reuses token and user rows while the database's change counter stands still; its triggers
    raise it for any change, so even plain SQL from another program (no hermes code) reaches the server."""
    import sqlite3

    gw.user("hand", "paid")
    token, other = gw.token("hand"), gw.token("hand")
    jti = (jwt.unverified_claims(token) or {})["jti"]
    assert search(gw, token).status_code == 200 and search(gw, token).status_code == 200  # now cached
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("UPDATE users SET plan = 'none' WHERE name = 'hand'")
    assert_refused(search(gw, token), 403, "not_entitled")
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("UPDATE users SET plan = 'paid' WHERE name = 'hand'")
    assert search(gw, token).status_code == 200
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("UPDATE access_tokens SET revoked = 1 WHERE jti = ?", (jti,))
    assert_refused(search(gw, token), 401, "token_revoked")
    assert search(gw, other).status_code == 200
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("DELETE FROM access_tokens WHERE jti = ?", ((jwt.unverified_claims(other) or {})["jti"],))
    assert_refused(search(gw, other), 401, "unknown_token")


def test_a_counter_set_back_by_hand_drops_the_cached_rows(gw: GatewayHarness) -> None:
    """A change counter lower than the one last seen (a restored backup) may match old cache entries again:
    the server drops them all instead."""
    import sqlite3

    gw.user("rewind", "paid")
    gw.user("bystander", "paid")
    token, other = gw.token("rewind"), gw.token("bystander")
    with sqlite3.connect(gw.config.db_path) as db:
        (version,) = db.execute("SELECT version FROM auth_version").fetchone()
    assert search(gw, token).status_code == 200 and search(gw, token).status_code == 200  # cached under v
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("UPDATE users SET disabled = 0 WHERE name = 'bystander'")  # v + 1 ...
    assert search(gw, other).status_code == 200  # ... which the server has now seen
    with sqlite3.connect(gw.config.db_path) as db:
        db.execute("UPDATE users SET plan = 'none' WHERE name = 'rewind'")  # v + 2 ...
        db.execute("UPDATE auth_version SET version = ?", (version,))  # ... set back to v by hand
    assert_refused(search(gw, token), 403, "not_entitled")


def test_without_the_counting_triggers_nothing_is_cached(vendor: tuple[FakeFirecrawl, ServerThread], tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    """A table rebuilt by hand loses its triggers: the server then reads the rows on every request, and says so."""
    import sqlite3

    harness = GatewayHarness(tmp_path, firecrawl={"firecrawl_url": vendor[1].url,
                                                  "firecrawl_api_key": "fc-operator-key"})
    with sqlite3.connect(harness.config.db_path) as db:
        db.execute("DROP TRIGGER users_update_auth_version")
    with caplog.at_level("WARNING", logger="hermes.toolgateway"), harness:
        harness.user("tess", "paid")
        token = harness.token("tess")
        assert search(harness, token).status_code == 200 and search(harness, token).status_code == 200
        with sqlite3.connect(harness.config.db_path) as db:
            db.execute("UPDATE users SET plan = 'none' WHERE name = 'tess'")  # the counter stands still
        assert_refused(search(harness, token), 403, "not_entitled")
    assert "lacks the triggers that count token and user changes" in caplog.text


def test_disabled_user_is_403_until_enabled(gw: GatewayHarness) -> None:
    gw.user("dora", "paid")
    token = gw.token("dora")
    assert search(gw, token).status_code == 200
    gw.side.accounts.set_disabled("dora", True)
    assert_refused(search(gw, token), 403, "account_disabled")
    gw.side.accounts.set_disabled("dora", False)
    assert search(gw, token).status_code == 200


def test_wrong_tier_scope_and_expired_plan(gw: GatewayHarness) -> None:
    body = assert_refused(search(gw, gw.token("frank")), 403, "category_not_covered")
    assert body["category"] == "firecrawl"
    assert_refused(search(gw, gw.token("nora")), 403, "not_entitled")
    body = assert_refused(search(gw, gw.token("eve")), 402, "subscription_expired")
    assert body["portal_url"] == gw.config.base_url()
    assert gw.config.base_url() in str(body["error"])
    assert_refused(search(gw, gw.token("alice", scope="inference:invoke")), 403, "insufficient_scope")


def test_plan_change_applies_to_existing_tokens(gw: GatewayHarness) -> None:
    gw.user("paula", "paid")
    token = gw.token("paula")
    assert search(gw, token).status_code == 200
    gw.side.accounts.set_plan("paula", "none", None)
    assert_refused(search(gw, token), 403, "not_entitled")


def test_usage_is_private_to_each_user(gw: GatewayHarness) -> None:
    alice, bob = gw.token("alice"), gw.token("bob")
    for _ in range(2):
        assert search(gw, bob).status_code == 200
    assert search(gw, alice).status_code == 200
    for query in ("", "?user=bob", "?user_id=1&name=bob"):
        resp = httpx.get(gw.url + "/api/usage" + query, headers={"authorization": f"Bearer {alice}"})
        assert resp.status_code == 200
        data = resp.json()
        assert data["user"]["name"] == "alice"
        assert "bob" not in resp.text
        assert all("user" not in row for row in data["by_tool"])
    bob_usage = httpx.get(gw.url + "/api/usage", headers={"authorization": f"Bearer {bob}"}).json()
    assert bob_usage["totals"]["calls"] == 2
    assert_refused(httpx.get(gw.url + "/api/usage"), 401, "missing_token")
    # the admin view needs the admin token, not a user's
    assert_refused(httpx.get(gw.url + "/api/admin/usage", headers={"authorization": f"Bearer {alice}"}),
                   401, "admin_required")
    admin = httpx.get(gw.url + "/api/admin/usage", headers={"authorization": f"Bearer {gw.side.admin_token}"})
    assert admin.status_code == 200
    names = {u["user"] for u in admin.json()["users"]}
    assert {"alice", "bob"} <= names
    one = httpx.get(gw.url + "/api/admin/usage?user=bob", headers={"authorization": f"Bearer {gw.side.admin_token}"})
    assert [u["user"] for u in one.json()["users"]] == ["bob"]


def test_vendor_never_sees_the_user_token_and_logs_hold_no_secrets(
        gw: GatewayHarness, vendor: tuple[FakeFirecrawl, ServerThread]) -> None:
    token = gw.token("alice")
    assert search(gw, token).status_code == 200
    seen = vendor[0].requests[-1]
    assert seen["headers"]["authorization"] == "Bearer fc-operator-key"
    assert token not in json.dumps(seen)
    httpx.get(gw.url + "/device?login=ll_secret_value&user_code=ABCD-EFGH")
    deadline = time.monotonic() + 5  # access lines are written in batches at most 0.2 s apart
    while True:
        lines = [json.loads(line) for line in (gw.config.home / "access.log").read_text().splitlines()]
        if any(entry["path"] == "/device" for entry in lines) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert any(entry["path"] == "/device" for entry in lines)
    text = json.dumps(lines)
    assert token not in text and "fc-operator-key" not in text and "ll_secret_value" not in text
    relay_lines = [entry for entry in lines if entry["path"] == SEARCH and entry["status"] == 200]
    alice = gw.side.accounts.get_user("alice").uid
    assert any(entry["user"] == alice for entry in relay_lines)
    assert all({"method", "path", "status", "latency_ms", "ts"} <= set(entry) for entry in lines)


def test_secret_file_is_private(gw: GatewayHarness) -> None:
    secret: Path = gw.config.secret_path
    assert secret.stat().st_mode & 0o077 == 0
    assert gw.config.db_path == gw.config.home / "toolgateway" / "gateway.db"


def test_every_request_gets_one_access_line_with_the_status_it_was_sent(gw: GatewayHarness) -> None:
    """Relays log through the router (the status they record), the rest through the access-log middleware:
    each request one line, with the path the client sent and the status it got."""
    token = gw.token("bob")
    bob = gw.side.accounts.get_user("bob").uid
    marker = f"q{time.monotonic_ns()}"
    sent = {  # path (query marks this test's requests) -> the status the client got
        f"{SEARCH}?m={marker}": search_at(gw, f"{SEARCH}?m={marker}", token).status_code,
        f"/v2/search?m={marker}": search_at(gw, f"/v2/search?m={marker}", token).status_code,  # bare host
        f"{SEARCH}?m={marker}&anon=1": search_at(gw, f"{SEARCH}?m={marker}&anon=1", None).status_code,
        f"/relay/nope/x?m={marker}": httpx.get(f"{gw.url}/relay/nope/x?m={marker}").status_code,
        f"/relay/tool/api/uploads?m={marker}": httpx.get(f"{gw.url}/relay/tool/api/uploads?m={marker}").status_code,
        f"/healthz?m={marker}": httpx.get(f"{gw.url}/healthz?m={marker}").status_code,
    }
    assert list(sent.values()) == [200, 200, 401, 404, 401, 200]
    deadline = time.monotonic() + 5
    while True:
        lines = [json.loads(line) for line in (gw.config.home / "access.log").read_text().splitlines()]
        mine = [entry for entry in lines if marker in entry["query"]]
        if len(mine) >= len(sent) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    logged = {f"{entry['path']}?{entry['query']}": entry for entry in mine}
    assert len(mine) == len(sent) == len(logged)
    for path, status in sent.items():
        assert logged[path]["status"] == status, (path, sorted(logged))
    assert logged[f"{SEARCH}?m={marker}"]["user"] == bob
    assert logged[f"/v2/search?m={marker}"]["user"] == bob
    assert logged[f"{SEARCH}?m={marker}&anon=1"]["user"] is None


def search_at(gw: GatewayHarness, path: str, token: str | None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.post(gw.url + path, json={"query": "q", "limit": 1}, headers=headers, timeout=30)
