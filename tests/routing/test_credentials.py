"""Portal tokens and claims (requirement GW-10, T-CONN): JWT parsing without verification, garbage, expiry, coverage."""

from __future__ import annotations

import base64
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.routing.credentials import (
    DEFAULT_PORTAL_URL,
    Claims,
    Credentials,
    decode_jwt_payload,
    load_credentials,
)

NOW = 1_800_000_000.0


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt(claims: Any, header: Any = None) -> str:
    head = b64(json.dumps(header or {"alg": "RS256", "typ": "JWT"}).encode())
    return f"{head}.{b64(json.dumps(claims).encode())}.c2lnbmF0dXJl"


# -- decoding -------------------------------------------------------------------------------------------
def test_decodes_payload_without_verifying() -> None:
    payload = {"exp": NOW + 60, "paid_access": True, "sub": "u1"}
    assert decode_jwt_payload(jwt(payload)) == payload
    assert decode_jwt_payload(jwt(payload, {"alg": "none"}).rsplit(".", 1)[0] + ".sig") == payload
    assert decode_jwt_payload(jwt(payload).rsplit(".", 1)[0] + ".") == payload


@pytest.mark.parametrize("padding", ["", "=", "=="])
def test_decodes_with_or_without_padding(padding: str) -> None:
    middle = base64.urlsafe_b64encode(b'{"a":1}').decode().rstrip("=") + padding
    assert decode_jwt_payload(f"h.{middle}.s") == {"a": 1}


GARBAGE: list[object] = [
    None, 123, b"a.b.c", "", "abc", "a.b", "a.b.c.d", "..", "a..c", "a.!!!.c", "a.e30.c.d",
    "h." + b64(b"not json") + ".s",
    "h." + b64(b"[1, 2]") + ".s",
    "h." + b64(b'"text"') + ".s",
    "h." + b64(b"\xff\xfe\xfa") + ".s",
    "h." + b64(b"[" * 5000 + b"]" * 5000) + ".s",
    "h." + b64(b'{"a": ' * 3000 + b"1" + b"}" * 3000) + ".s",
    "h.é.s",
    "h.a+b/.s",
    "h." + "A" * 70_000 + ".s",
    "h.A.s",
]


@pytest.mark.parametrize("token", GARBAGE, ids=[f"garbage{i}" for i in range(len(GARBAGE))])
def test_garbage_is_no_payload_never_an_exception(token: object) -> None:
    assert decode_jwt_payload(token) is None
    if isinstance(token, str) and token:
        creds = Credentials.from_sources({"providers": {"nous": {"access_token": token}}}, {})
        assert creds.logged_in and creds.claims is None
        assert not creds.covers("fal")
        assert creds.entitlement("fal", NOW).status == "unknown"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.text(max_size=10),
                                         st.text("ABCDEFabcdef0123456789-_=", max_size=40), st.text(max_size=5)))
def test_decoding_arbitrary_text_never_raises(token: str) -> None:
    result = decode_jwt_payload(token)
    assert result is None or isinstance(result, dict)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["exp", "paid_access", "tool_access", "managed_tools", "scope", "scp",
                                        "subscription_tier", "org_id", "sub"]), json_values, max_size=6))
def test_claims_from_any_payload_never_raise(payload: dict[str, Any]) -> None:
    claims = Claims.from_payload(payload)
    assert isinstance(claims.paid_access, bool) and isinstance(claims.coverage, frozenset)
    if payload.get("paid_access") is not True:
        assert not claims.paid_access


# -- claims, strictly ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("payload", "paid", "enabled", "coverage"),
    [
        ({"paid_access": True}, True, False, set()),
        ({"paid_access": "true"}, False, False, set()),
        ({"paid_access": 1}, False, False, set()),
        ({"tool_access": {"enabled": True, "coverage": {"fal": True, "firecrawl": False, "openai-audio": 1}}},
         False, True, {"fal"}),
        ({"tool_access": {"enabled": "yes", "coverage": {"fal": True}}}, False, False, {"fal"}),
        ({"tool_access": {"enabled": True, "coverage": ["fal"]}}, False, True, set()),
        ({"tool_access": True}, False, False, set()),
        ({"tool_access": {"enabled": True, "coverage": {"fal": "true", "7": True}}}, False, True, {"7"}),
    ],
    ids=["paid", "paid as string", "paid as 1", "coverage literal true only", "enabled as string",
         "coverage as list", "tool_access as bool", "coverage values strict"],
)
def test_claims_read_only_literal_true(payload: dict[str, Any], paid: bool, enabled: bool, coverage: set[str]) -> None:
    claims = Claims.from_payload(payload)
    assert (claims.paid_access, claims.tool_access_enabled, set(claims.coverage)) == (paid, enabled, coverage)


@pytest.mark.parametrize(("exp", "parsed"), [(NOW, NOW), (1, 1.0), (True, None), ("1800000000", None),
                                             (float("nan"), None), (float("inf"), None), (None, None), ([1], None)])
def test_exp_must_be_a_finite_number(exp: Any, parsed: float | None) -> None:
    assert Claims.from_payload({"exp": exp}).exp == parsed


def test_nan_exp_from_a_real_token() -> None:
    token = "h." + b64(b'{"exp": NaN, "paid_access": true}') + ".s"
    creds = Credentials.from_sources({"providers": {"nous": {"access_token": token}}}, {})
    assert creds.exp is None and creds.paid_access and not creds.is_expired(NOW)


def test_expiry() -> None:
    claims = Claims.from_payload({"exp": NOW})
    assert claims.is_expired(NOW) and claims.is_expired(NOW + 1)
    assert not claims.is_expired(NOW - 1)
    assert claims.is_expired(NOW - 30, leeway=60)
    assert not Claims.from_payload({}).is_expired(NOW)


def test_free_tier_and_coverage() -> None:
    free = Claims.from_payload({"tool_access": {"enabled": True, "coverage": {"fal": True}}})
    assert free.free_tier and free.any_tool_access
    assert free.covers("fal") and not free.covers("openai-audio")
    paid = Claims.from_payload({"paid_access": True, "tool_access": {"enabled": True, "coverage": {}}})
    assert not paid.free_tier and paid.covers("openai-audio") and paid.covers("browser-use")
    nothing = Claims.from_payload({"paid_access": False})
    assert not nothing.any_tool_access and not nothing.covers("fal")


@pytest.mark.parametrize(("value", "enabled", "names"), [
    (True, True, ()), (False, False, ()), ("true", False, ()), (["gmail", "", 3, "slack"], True, ("gmail", "slack")),
    ([], False, ()), ({"enabled": True}, True, ()), ({"enabled": 1}, False, ()), (None, False, ())])
def test_managed_tools_claim(value: Any, enabled: bool, names: tuple[str, ...]) -> None:
    claims = Claims.from_payload({"managed_tools": value})
    assert (claims.managed_tools, claims.managed_tool_names) == (enabled, names)


def test_other_claims() -> None:
    claims = Claims.from_payload({"scope": "inference:invoke tool:invoke", "subscription_tier": "pro", "org_id": "o",
                                  "sub": "u"})
    assert claims.scopes == {"inference:invoke", "tool:invoke"}
    assert (claims.subscription_tier, claims.org_id, claims.subject) == ("pro", "o", "u")
    assert Claims.from_payload({"scp": ["a", 1, "b"]}).scopes == {"a", "b"}


def test_account_info_shape() -> None:
    info = {"paid_service_access": {"allowed": True}, "tool_access": {"enabled": True, "coverage": {"fal": True}},
            "subscription": {"tier": "plus"}}
    claims = Claims.from_account_info(info, exp=NOW)
    assert claims.paid_access and claims.coverage == {"fal"} and claims.exp == NOW
    assert claims.subscription_tier == "plus"
    assert Claims.from_account_info({"paid_access": True}).paid_access
    assert not Claims.from_account_info({"paid_service_access": {"allowed": False}, "paid_access": True}).paid_access


# -- entitlement -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("claims", "key", "status"),
    [
        (None, "fal", "not_logged_in"),
        ({"exp": NOW + 10, "paid_access": True}, "browser-use", "paid"),
        ({"exp": NOW - 10, "paid_access": True}, "fal", "expired"),
        ({"exp": NOW + 10, "tool_access": {"enabled": True, "coverage": {"fal": True}}}, "fal", "free_tier"),
        ({"exp": NOW + 10, "tool_access": {"enabled": True, "coverage": {"fal": True}}}, "fal-video", "not_covered"),
        ({"exp": NOW + 10, "paid_access": False, "tool_access": {"enabled": False}}, "fal", "no_access"),
        ({}, "fal", "no_access"),
    ],
    ids=["logged out", "paid", "expired", "free tier covered", "free tier not covered", "no access", "no claims set"],
)
def test_entitlement(claims: dict[str, Any] | None, key: str, status: str) -> None:
    auth = {"providers": {"nous": {"access_token": jwt(claims)}}} if claims is not None else None
    ent = Credentials.from_sources(auth, {}).entitlement(key, NOW)
    assert ent.status == status and ent.coverage_key == key
    assert ent.entitled is (status in ("paid", "free_tier"))
    assert ent.summary


# -- sources ---------------------------------------------------------------------------------------------
def test_auth_json_layout_and_env_token() -> None:
    login = jwt({"paid_access": True, "exp": NOW + 100})
    env_tok = jwt({"paid_access": False})
    auth = {"version": 1, "providers": {"nous": {"access_token": login, "expires_at": "2027-01-15T08:00:00+00:00",
                                                  "portal_base_url": "http://127.0.0.1:8080/"}}}
    creds = Credentials.from_sources(auth, {"TOOL_GATEWAY_USER_TOKEN": env_tok})
    assert creds.token == env_tok and creds.token_source == "env"
    # requirement GW-10, issue 24: one credential decides both what is sent and the plan it is judged by
    assert not creds.paid_access
    assert creds.expires_at == NOW
    assert creds.portal_base_url == "http://127.0.0.1:8080"
    alone = Credentials.from_sources(auth, {})
    assert alone.token == login and alone.token_source == "auth.json"


def test_env_token_alone_carries_claims() -> None:
    creds = Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": jwt({"tool_access": {
        "enabled": True, "coverage": {"firecrawl": True}}})})
    assert creds.logged_in and creds.free_tier and creds.covers("firecrawl") and not creds.covers("fal")
    opaque = Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": "opaque"})
    assert opaque.logged_in and opaque.claims is None
    # an opaque portal token leaves the claims to a JWT in TOOL_GATEWAY_USER_TOKEN
    mixed = Credentials.from_sources({"providers": {"nous": {"access_token": "opaque"}}},
                                     {"TOOL_GATEWAY_USER_TOKEN": jwt({"paid_access": True})})
    assert mixed.paid_access and mixed.access_token == "opaque"


def test_credential_pool_fallback() -> None:
    auth = {"providers": {"nous": {}}, "credential_pool": {"nous": ["x", {"source": "device_code"},
                                                                     {"access_token": jwt({"paid_access": True})}]}}
    assert Credentials.from_sources(auth, {}).paid_access


@pytest.mark.parametrize("doc", [None, [], "text", 3, {"providers": []}, {"providers": {"nous": "tok"}},
                                 {"providers": {"nous": {"access_token": 5}}}, {"credential_pool": {"nous": "x"}}])
def test_malformed_auth_documents_mean_logged_out(doc: object) -> None:
    creds = Credentials.from_sources(doc, {})
    assert not creds.logged_in and creds.claims is None and not creds.covers("fal")
    assert creds.entitlement("fal", NOW).status == "not_logged_in"


def test_secrets_stay_out_of_repr() -> None:
    creds = Credentials.from_sources({"providers": {"nous": {"access_token": "s3cret-login"}}},
                                     {"TOOL_GATEWAY_USER_TOKEN": "s3cret-env"})
    assert "s3cret" not in repr(creds)


@pytest.mark.parametrize(("stored", "env", "expected"), [
    ("https://evil.example", {}, DEFAULT_PORTAL_URL),
    ("http://localhost:3000", {}, "http://localhost:3000"),
    ("not a url", {}, DEFAULT_PORTAL_URL),
    ("http://[::1", {}, DEFAULT_PORTAL_URL),
    (None, {"HERMES_PORTAL_BASE_URL": "https://portal.staging.example/"}, "https://portal.staging.example"),
    ("http://localhost:3000", {"NOUS_PORTAL_BASE_URL": "https://p.example"}, "https://p.example"),
])
def test_portal_base_url(stored: str | None, env: dict[str, str], expected: str) -> None:
    auth = {"providers": {"nous": {"access_token": "t", "portal_base_url": stored}}}
    assert Credentials.from_sources(auth, env).portal_base_url == expected


@pytest.mark.parametrize(("value", "ok"), [("2027-01-15T08:00:00Z", True), ("2027-01-15T08:00:00+00:00", True),
                                           ("2027-01-15T08:00:00", False), ("soon", False), (17, False)])
def test_expires_at(value: object, ok: bool) -> None:
    creds = Credentials.from_sources({"providers": {"nous": {"access_token": "t", "expires_at": value}}}, {})
    assert (creds.expires_at is not None) is ok


# -- loading auth.json -----------------------------------------------------------------------------------
def write_auth(path: Path, doc: object, mode: int = 0o600) -> None:
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc, encoding="utf-8")
    os.chmod(path, mode)


def test_load_missing_file(tmp_path: Path) -> None:
    creds = load_credentials(tmp_path / "auth.json", {})
    assert not creds.logged_in and creds.warnings == ()


def test_load_private_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"version": 1, "providers": {"nous": {"access_token": jwt({"paid_access": True})}}})
    with caplog.at_level(logging.WARNING, logger="hermes.routing"):
        creds = load_credentials(path, {})
    assert creds.paid_access and creds.warnings == () and not caplog.records


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_load_warns_about_a_readable_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "auth.json"
    token = jwt({"paid_access": True})
    write_auth(path, {"providers": {"nous": {"access_token": token}}}, mode=0o644)
    with caplog.at_level(logging.WARNING, logger="hermes.routing"):
        creds = load_credentials(path, {})
    assert creds.paid_access  # still used
    assert len(creds.warnings) == 1 and "mode 0644" in creds.warnings[0] and "chmod 600" in creds.warnings[0]
    assert "mode 0644" in caplog.text and token not in caplog.text


def test_load_tolerates_garbage(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, "{not json")
    creds = load_credentials(path, {"TOOL_GATEWAY_USER_TOKEN": "t"})
    assert creds.token == "t" and not creds.access_token
    assert any("not valid JSON" in w for w in creds.warnings)
    deep = tmp_path / "deep.json"
    write_auth(deep, "[" * 100_000 + "]" * 100_000)
    assert not load_credentials(deep, {}).logged_in


def test_load_unreadable_path(tmp_path: Path) -> None:
    folder = tmp_path / "auth.json"
    folder.mkdir()
    creds = load_credentials(folder, {})
    assert not creds.logged_in and "could not be read" in creds.warnings[0]


def test_load_does_not_write(tmp_path: Path) -> None:
    path = tmp_path / "auth.json"
    write_auth(path, {"providers": {"nous": {"access_token": "t"}}})
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    load_credentials(path, {})
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir())) == before
