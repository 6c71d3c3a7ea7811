"""The portal's device-code login end to end over real HTTP, as the upstream client drives it.

authorize → approve on the HTML page (one-time login link, or the admin token) → poll → tokens →
refresh with rotation → reuse detection → account endpoint; the issued JWT's claims are read with
``hermes.routing.credentials`` exactly as our client reads them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from fakes.vendors import FakeFirecrawl, ServerThread
from fakes.vendors.harness import GatewayHarness
from hermes.routing.credentials import Claims, Credentials, decode_jwt_payload

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    fake = FakeFirecrawl()
    with ServerThread(fake.app) as vendor:
        harness = GatewayHarness(tmp_path_factory.mktemp("gw_portal"), org_id="acme",
                                 firecrawl={"firecrawl_url": vendor.url, "firecrawl_api_key": "fc-test"})
        with harness:
            harness.user("alice", "paid")
            harness.user("fred", "free")
            yield harness


def start_login(c: httpx.Client) -> dict[str, Any]:
    resp = c.post("/api/oauth/device/code", data={"client_id": "hermes-cli", "scope": "inference:invoke"})
    assert resp.status_code == 200
    body: dict[str, Any] = resp.json()
    return body


def poll(c: httpx.Client, device_code: str) -> httpx.Response:
    return c.post("/api/oauth/token", data={"grant_type": DEVICE_GRANT, "client_id": "hermes-cli",
                                            "device_code": device_code})


def poll_until_done(c: httpx.Client, device_code: str, interval: float) -> httpx.Response:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        resp = poll(c, device_code)
        if resp.status_code == 200 or resp.json()["error"] not in ("authorization_pending", "slow_down"):
            return resp
        time.sleep(min(interval, 1.0))
    raise AssertionError("login never completed")


def approve_with_link(gw: GatewayHarness, c: httpx.Client, user: str, user_code: str) -> httpx.Response:
    secret = gw.side.oauth.create_login_link(gw.side.accounts.get_user(user))
    page = c.get(f"/device?login={secret}&user_code={user_code}")
    assert page.status_code == 200 and f"Signed in as <b>{user}</b>" in page.text
    return c.post("/device", data={"user_code": user_code, "login": secret, "action": "approve"})


def refresh(c: httpx.Client, token: str) -> httpx.Response:
    return c.post("/api/oauth/token", data={"grant_type": "refresh_token", "client_id": "hermes-cli"},
                  headers={"x-nous-refresh-token": token})


def test_device_login_refresh_rotation_and_reuse(gw: GatewayHarness) -> None:
    with gw.client() as c:
        grant = start_login(c)
        assert set(grant) >= {"device_code", "user_code", "verification_uri", "verification_uri_complete",
                              "expires_in", "interval"}
        assert re.fullmatch(r"[A-Z]{4}-[A-Z]{4}", grant["user_code"])
        assert grant["verification_uri"] == f"{gw.url}/device"
        assert grant["verification_uri_complete"].endswith(grant["user_code"])
        first = poll(c, grant["device_code"])
        assert first.status_code == 400 and first.json()["error"] == "authorization_pending"
        assert poll(c, grant["device_code"]).json()["error"] == "slow_down"
        # the verification page as the person opens it (the user code prefilled)
        page = c.get(grant["verification_uri_complete"])
        assert page.status_code == 200 and grant["user_code"] in page.text
        assert "frame-ancestors" in page.headers["content-security-policy"] or page.headers["x-frame-options"]
        assert page.headers["referrer-policy"] == "no-referrer"
        done = approve_with_link(gw, c, "alice", grant["user_code"])
        assert done.status_code == 200 and "approved" in done.text
        time.sleep(0.6)
        tokens = poll_until_done(c, grant["device_code"], grant["interval"])
        assert tokens.status_code == 200, tokens.text
        body = tokens.json()
        assert body["token_type"] == "Bearer" and body["expires_in"] == gw.config.access_token_ttl
        assert set(body["scope"].split()) == {"inference:invoke", "tool:invoke"}
        access, refresh_token = body["access_token"], body["refresh_token"]
        # exchanged once only
        assert poll(c, grant["device_code"]).json()["error"] == "invalid_grant"

        auth = {"authorization": f"Bearer {access}"}
        assert c.post("/relay/firecrawl/v2/search", json={"query": "x"}, headers=auth).status_code == 200

        rotated = refresh(c, refresh_token)
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()
        assert new["refresh_token"] != refresh_token and new["access_token"] != access
        assert c.post("/relay/firecrawl/v2/search", json={"query": "x"},
                      headers={"authorization": f"Bearer {new['access_token']}"}).status_code == 200
        # the old refresh token again: reuse → the whole login is revoked
        reused = refresh(c, refresh_token)
        assert reused.status_code == 400 and reused.json()["error"] == "refresh_token_reused"
        assert refresh(c, new["refresh_token"]).json()["error"] == "invalid_grant"
        for token in (access, new["access_token"]):
            resp = c.post("/relay/firecrawl/v2/search", json={"query": "x"},
                          headers={"authorization": f"Bearer {token}"})
            assert resp.status_code == 401 and resp.json()["code"] == "token_revoked"


def test_issued_claims_read_by_our_client_and_account_endpoint(gw: GatewayHarness) -> None:
    now = time.time()
    with gw.client() as c:
        results: dict[str, dict[str, Any]] = {}
        for user in ("alice", "fred"):
            grant = start_login(c)
            assert approve_with_link(gw, c, user, grant["user_code"]).status_code == 200
            results[user] = poll_until_done(c, grant["device_code"], 1).json()
        for user, body in results.items():
            token = body["access_token"]
            payload = decode_jwt_payload(token)
            assert payload is not None and token.count(".") == 2
            # what the upstream client needs: numeric exp beyond now+60, inference scope, real bools
            assert isinstance(payload["exp"], int) and payload["exp"] > now + 60
            assert "inference:invoke" in payload["scope"].split()
            assert isinstance(payload["paid_access"], bool)
            assert set(payload["tool_access"]["coverage"]) == {"firecrawl", "fal", "fal-video", "openai-audio",
                                                               "browser-use", "modal"}
            assert payload["org_id"] == "acme" and payload["sub"].startswith("usr_")
            auth_json = {"version": 1, "providers": {"nous": {"access_token": token, "refresh_token": body[
                "refresh_token"], "portal_base_url": gw.url}}}
            creds = Credentials.from_sources(auth_json, {})
            assert creds.claims is not None
            account = c.get("/api/oauth/account", headers={"authorization": f"Bearer {token}",
                                                           "accept": "application/json"})
            assert account.status_code == 200
            info = account.json()
            assert "error" not in info
            from_account = Claims.from_account_info(info)
            assert from_account.paid_access == creds.claims.paid_access
            assert from_account.coverage == creds.claims.coverage
            assert from_account.tool_access_enabled == creds.claims.tool_access_enabled
            assert info["user"]["name"] == user and info["organisation"]["id"] == "acme"
        alice = Credentials.from_sources({"providers": {"nous": {"access_token": results["alice"]["access_token"]}}},
                                         {})
        assert alice.paid_access and alice.managed_tools
        assert alice.entitlement("modal", now).status == "paid"
        fred = Credentials.from_sources({}, {"TOOL_GATEWAY_USER_TOKEN": results["fred"]["access_token"]})
        assert fred.free_tier and not fred.paid_access and not fred.managed_tools
        assert fred.entitlement("firecrawl", now).status == "free_tier"
        assert fred.entitlement("modal", now).status == "not_covered"


def test_approval_needs_identity(gw: GatewayHarness) -> None:
    with gw.client() as c:
        grant = start_login(c)
        code = grant["user_code"]
        nobody = c.post("/device", data={"user_code": code, "action": "approve"})
        assert nobody.status_code == 403
        wrong = c.post("/device", data={"user_code": code, "admin_token": "nope", "user": "alice"})
        assert wrong.status_code == 403
        assert poll(c, grant["device_code"]).json()["error"] == "authorization_pending"
        # a login link works once
        secret = gw.side.oauth.create_login_link(gw.side.accounts.get_user("alice"))
        other = start_login(c)
        assert c.post("/device", data={"user_code": other["user_code"], "login": secret}).status_code == 200
        again = c.post("/device", data={"user_code": code, "login": secret})
        assert again.status_code == 403
        # the operator approves with the admin token, the code retyped in lower case without the dash
        ok = c.post("/device", data={"user_code": code.lower().replace("-", ""), "admin_token": gw.side.admin_token,
                                     "user": "fred"})
        assert ok.status_code == 200 and "fred" in ok.text
        time.sleep(0.6)
        token = poll_until_done(c, grant["device_code"], 1).json()["access_token"]
        assert decode_jwt_payload(token)["sub"] == gw.side.accounts.get_user("fred").uid  # type: ignore[index]
        # an unknown code, and markup in the code, are answered safely
        page = c.get('/device?user_code=<script>alert(1)</script>')
        assert "<script>" not in page.text and "&lt;script&gt;" in page.text
        assert c.post("/device", data={"user_code": "ZZZZ-ZZZZ", "admin_token": gw.side.admin_token,
                                       "user": "alice"}).status_code == 400


def test_denied_expired_and_malformed_requests(gw: GatewayHarness) -> None:
    with gw.client() as c:
        grant = start_login(c)
        secret = gw.side.oauth.create_login_link(gw.side.accounts.get_user("alice"))
        denied = c.post("/device", data={"user_code": grant["user_code"], "login": secret, "action": "deny"})
        assert denied.status_code == 200 and "denied" in denied.text
        assert poll(c, grant["device_code"]).json()["error"] == "access_denied"

        late = start_login(c)
        gw.side.conn.execute("UPDATE device_codes SET expires = 0 WHERE user_code = ?", (late["user_code"],))
        assert poll(c, late["device_code"]).json()["error"] == "expired_token"

        assert poll(c, "no-such-code").json()["error"] == "invalid_grant"
        bad = c.post("/api/oauth/token", data={"grant_type": "password", "username": "alice"})
        assert bad.status_code == 400 and bad.json()["error"] == "unsupported_grant_type"
        assert refresh(c, "rt_unknown").json()["error"] == "invalid_grant"
        missing = c.post("/api/oauth/token", data={"grant_type": "refresh_token", "client_id": "hermes-cli"})
        assert missing.json()["error"] == "invalid_request"
        assert c.post("/api/oauth/device/code", data={"scope": "x"}).json()["error"] == "invalid_client"
        assert c.get("/api/oauth/account").status_code == 401


def test_health_and_openapi(gw: GatewayHarness) -> None:
    with gw.client() as c:
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json()["relays"][0]["label"] == "firecrawl"
        # health answers on relay hosts too; other paths there belong to the relay
        assert c.get("/healthz", headers={"host": gw.relay_host("firecrawl")}).status_code == 200
        spec = c.get("/openapi.json").json()
        assert spec["openapi"].startswith("3.")
        for path in ("/api/oauth/device/code", "/api/oauth/token", "/api/oauth/account", "/device", "/api/usage",
                     "/api/admin/usage", "/healthz", "/readyz", "/relay/firecrawl/v2/search"):
            assert path in spec["paths"]
        missing = c.get("/nowhere")
        assert missing.status_code == 404 and missing.json()["code"] == "not_found"
