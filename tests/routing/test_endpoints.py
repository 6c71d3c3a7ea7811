"""Gateway origins and the token guard (requirement GW-14)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import ConfigError
from hermes.routing.endpoints import (
    KNOWN_LABELS,
    connector_origin,
    gateway_domain,
    gateway_origin,
    parse_origin,
    pin_env_name,
    shared_origin,
    token_allowed_for,
)


@pytest.mark.parametrize(
    ("label", "env", "origin"),
    [
        ("firecrawl", {}, "https://firecrawl-gateway.nousresearch.com"),
        ("fal-queue", {}, "https://fal-queue-gateway.nousresearch.com"),
        ("openai-audio", {}, "https://openai-audio-gateway.nousresearch.com"),
        ("browser-use", {}, "https://browser-use-gateway.nousresearch.com"),
        ("tool", {}, "https://tool-gateway.nousresearch.com"),
        ("connector", {}, "https://connector-gateway.nousresearch.com"),
        ("krea", {"TOOL_GATEWAY_DOMAIN": "gw.example.com"}, "https://krea-gateway.gw.example.com"),
        ("krea", {"TOOL_GATEWAY_DOMAIN": " GW.Example.COM. ", "TOOL_GATEWAY_SCHEME": "HTTP"},
         "http://krea-gateway.gw.example.com"),
        ("firecrawl", {"TOOL_GATEWAY_DOMAIN": "localhost:3009", "TOOL_GATEWAY_SCHEME": "http"},
         "http://firecrawl-gateway.localhost:3009"),
        ("firecrawl", {"TOOL_GATEWAY_SCHEME": ""}, "https://firecrawl-gateway.nousresearch.com"),
        ("firecrawl", {"FIRECRAWL_GATEWAY_URL": "http://127.0.0.1:3009/", "TOOL_GATEWAY_DOMAIN": "x.example"},
         "http://127.0.0.1:3009"),
        ("fal-queue", {"FAL_QUEUE_GATEWAY_URL": "https://relay.example.org/fal/"}, "https://relay.example.org/fal"),
        ("fal-queue", {"FAL_QUEUE_GATEWAY_URL": "  "}, "https://fal-queue-gateway.nousresearch.com"),
        ("firecrawl", {"TOOL_GATEWAY_URL": "http://127.0.0.1:4000"}, "https://firecrawl-gateway.nousresearch.com"),
        ("tool", {"TOOL_GATEWAY_URL": "http://127.0.0.1:4000", "TOOL_GATEWAY_SCHEME": "ftp"}, "http://127.0.0.1:4000"),
        ("connector", {"CONNECTOR_GATEWAY_URL": "HTTP://LOCALHOST:3010"}, "http://localhost:3010"),
        ("connector", {"TOOL_GATEWAY_URL": "http://127.0.0.1:4000"}, "https://connector-gateway.nousresearch.com"),
    ],
    ids=["firecrawl default", "fal-queue default", "openai-audio default", "browser-use default", "shared default",
         "connector default", "custom domain", "case and trailing dot", "domain with port", "empty scheme",
         "pinned wins over domain", "pinned keeps path", "blank pin ignored", "shared pin is not a vendor pin",
         "shared pin exact", "connector pin", "connector ignores shared pin"],
)
def test_gateway_origin(label: str, env: dict[str, str], origin: str) -> None:
    assert gateway_origin(label, env) == origin


def test_shared_and_connector_helpers() -> None:
    env = {"TOOL_GATEWAY_URL": "http://127.0.0.1:1", "CONNECTOR_GATEWAY_URL": "http://127.0.0.1:2"}
    assert shared_origin(env) == "http://127.0.0.1:1"
    assert connector_origin(env) == "http://127.0.0.1:2"


@pytest.mark.parametrize(("label", "name"), [("firecrawl", "FIRECRAWL_GATEWAY_URL"),
                                             ("fal-queue", "FAL_QUEUE_GATEWAY_URL"),
                                             ("openai-audio", "OPENAI_AUDIO_GATEWAY_URL"),
                                             ("browser-use", "BROWSER_USE_GATEWAY_URL"),
                                             ("tool", "TOOL_GATEWAY_URL"), ("connector", "CONNECTOR_GATEWAY_URL")])
def test_pin_env_name(label: str, name: str) -> None:
    assert pin_env_name(label) == name


@pytest.mark.parametrize("scheme", ["ftp", "javascript", "https://", "wss", "file"])
def test_bad_scheme_is_a_config_error(scheme: str) -> None:
    with pytest.raises(ConfigError, match="TOOL_GATEWAY_SCHEME must be http or https"):
        gateway_origin("firecrawl", {"TOOL_GATEWAY_SCHEME": scheme})


@pytest.mark.parametrize("domain", ["https://x.example", "x.example/path", "user@x.example", "x .example",
                                    "x.example:abc", "x.example:0", "x.example:70000", "-x.example", "x..example"])
def test_bad_domain_is_a_config_error(domain: str) -> None:
    with pytest.raises(ConfigError, match="TOOL_GATEWAY_DOMAIN"):
        gateway_origin("firecrawl", {"TOOL_GATEWAY_DOMAIN": domain})


@pytest.mark.parametrize("url", ["127.0.0.1:3009", "ftp://h.example", "https://user:hunter2@h.example",
                                 "https://h.example\\@evil.example", "http://"])
def test_bad_pin_is_a_config_error_without_echoing_it(url: str) -> None:
    with pytest.raises(ConfigError, match="FIRECRAWL_GATEWAY_URL must be a plain http") as info:
        gateway_origin("firecrawl", {"FIRECRAWL_GATEWAY_URL": url})
    assert "hunter2" not in str(info.value)


def test_bad_label_is_a_value_error() -> None:
    for label in ("Fire", "a.b", "", "-x", "x/y"):
        with pytest.raises(ValueError, match="not a gateway label"):
            gateway_origin(label, {})


def test_domain_parts() -> None:
    assert gateway_domain({}) == ("nousresearch.com", None)
    assert gateway_domain({"TOOL_GATEWAY_DOMAIN": "Dev.Example:8443"}) == ("dev.example", 8443)


# -- where the token may go -----------------------------------------------------------------------------
CUSTOM = {"TOOL_GATEWAY_DOMAIN": "gw.example.com", "TOOL_GATEWAY_SCHEME": "http"}
PINNED = {"FIRECRAWL_GATEWAY_URL": "https://relay.internal.example:8443/base",
          "TOOL_GATEWAY_URL": "https://shared.example.org", "CONNECTOR_GATEWAY_URL": "http://10.1.2.3:7000"}

ALLOWED = [
    ("https://firecrawl-gateway.nousresearch.com/v2/search", {}),
    ("HTTPS://FIRECRAWL-GATEWAY.NOUSRESEARCH.COM/v2/scrape", {}),
    ("https://firecrawl-gateway.nousresearch.com./v2/search", {}),
    ("https://fal-queue-gateway.nousresearch.com:443/fal-ai/x/requests/1/status", {}),
    ("https://tool-gateway.nousresearch.com/api/uploads", {}),
    ("https://connector-gateway.nousresearch.com/v1/connectors/gmail", {}),
    ("https://newvendor-gateway.nousresearch.com/x", {}),
    ("http://127.0.0.1:3009/v2/search", {}),
    ("https://127.5.6.7/", {}),
    ("http://localhost:8080/x", {}),
    ("http://LOCALHOST./x", {}),
    ("http://[::1]:9000/", {}),
    ("http://fal-queue-gateway.gw.example.com/x", CUSTOM),
    ("HTTP://Fal-Queue-Gateway.GW.example.com.:80/x", CUSTOM),
    ("http://firecrawl-gateway.localhost:3009/x", {"TOOL_GATEWAY_DOMAIN": "localhost:3009",
                                                    "TOOL_GATEWAY_SCHEME": "http"}),
    ("https://relay.internal.example:8443/v2/search", PINNED),
    ("https://shared.example.org/api/uploads/1", PINNED),
    ("http://10.1.2.3:7000/v1/connectors", PINNED),
]

REFUSED = [
    ("https://evil.com/firecrawl-gateway.nousresearch.com", {}),
    ("https://evil.com/?u=https://firecrawl-gateway.nousresearch.com", {}),
    ("https://firecrawl-gateway.nousresearch.com.evil.com/v2", {}),
    ("https://firecrawl-gateway.nousresearch.com@evil.com/", {}),
    ("https://evil.com@firecrawl-gateway.nousresearch.com/", {}),
    ("https://user:pw@firecrawl-gateway.nousresearch.com/", {}),
    ("https://firecrawl-gateway.nousresearch.com\\@evil.com/", {}),
    ("https://firecrawl-gateway.nousresearch.com%2eevil.com/", {}),
    ("https://firecrawl-gateway.nousresearch.com\n.evil.com/", {}),
    ("https://firecrawl-gateway.nousresearch.com\t/", {}),
    ("https://firecrawl-gateway.nousresearch.com /", {}),
    ("http://firecrawl-gateway.nousresearch.com/v2", {}),
    ("https://firecrawl-gateway.nousresearch.com:8443/v2", {}),
    ("https://firecrawl-gateway.nousresearch.com:99999/v2", {}),
    ("https://a.firecrawl-gateway.nousresearch.com/", {}),
    ("https://-gateway.nousresearch.com/", {}),
    ("https://nousresearch.com/", {}),
    ("https://portal.nousresearch.com/api", {}),
    ("https://firecrawl-gateway.nousresearch.co/", {}),
    ("https://firecrawl-gatewaynousresearch.com/", {}),
    ("wss://firecrawl-gateway.nousresearch.com/", {}),
    ("ftp://127.0.0.1/", {}),
    ("//firecrawl-gateway.nousresearch.com/", {}),
    ("firecrawl-gateway.nousresearch.com/v2", {}),
    ("", {}),
    ("not a url", {}),
    ("http://localhost.evil.com/", {}),
    ("http://127.0.0.1.nip.io/", {}),
    ("http://0x7f.0.0.1/", {}),
    ("https://ｆirecrawl-gateway.nousresearch.com/", {}),
    ("https://firecrawl-gateway.nousresearch.com/", CUSTOM),
    ("https://fal-queue-gateway.gw.example.com/x", CUSTOM),
    ("http://fal-queue-gateway.gw.example.com:8080/x", CUSTOM),
    ("https://relay.internal.example/v2/search", PINNED),
    ("http://relay.internal.example:8443/v2/search", PINNED),
    ("https://pay.example.com/charge", {"PAYMENT_GATEWAY_URL": "https://pay.example.com"}),
    ("https://searx.example.org/search", {"SEARXNG_URL": "https://searx.example.org"}),
    ("https://evil.example/", {"FIRECRAWL_GATEWAY_URL": "https://user:pw@evil.example"}),
    ("https://firecrawl-gateway.nousresearch.com/", {"TOOL_GATEWAY_SCHEME": "ftp"}),
]


@pytest.mark.parametrize(("url", "env"), ALLOWED, ids=[u for u, _ in ALLOWED])
def test_token_allowed(url: str, env: dict[str, str]) -> None:
    assert token_allowed_for(url, env) is True


@pytest.mark.parametrize(("url", "env"), REFUSED, ids=[repr(u) for u, _ in REFUSED])
def test_token_refused(url: str, env: dict[str, str]) -> None:
    assert token_allowed_for(url, env) is False


def test_extra_labels_extend_the_pins() -> None:
    env = {"ACME_GATEWAY_URL": "https://acme.example"}
    assert token_allowed_for("https://acme.example/x", env) is False
    assert token_allowed_for("https://acme.example/x", env, extra_labels=["acme"]) is True


def test_every_known_label_origin_is_allowed() -> None:
    env = {"TOOL_GATEWAY_DOMAIN": "gw.example.com"}
    for label in KNOWN_LABELS:
        assert token_allowed_for(gateway_origin(label, env) + "/x", env), label


def test_parse_origin_normalises() -> None:
    origin = parse_origin("HTTPS://Host.Example.:8443/p")
    assert origin is not None and (origin.scheme, origin.host, origin.port) == ("https", "host.example", 8443)
    v6 = parse_origin("http://[0:0:0:0:0:0:0:1]/")
    assert v6 is not None and v6.host == "::1" and v6.port == 80


@settings(max_examples=200, deadline=None)
@given(url=st.text(max_size=60) | st.builds(lambda a, b: f"https://{a}firecrawl-gateway.nousresearch.com{b}",
                                             st.text(max_size=8), st.text(max_size=8)),
       env=st.dictionaries(st.sampled_from(["TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_URL",
                                            "FIRECRAWL_GATEWAY_URL"]), st.text(max_size=20), max_size=3))
def test_token_allowed_for_never_raises(url: str, env: dict[str, str]) -> None:
    assert token_allowed_for(url, env) in (True, False)
