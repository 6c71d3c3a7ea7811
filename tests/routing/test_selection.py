"""Selection resolution (requirement GW-2…GW-7, GW-10, GW-11): the rules as a table, then properties.

Each row is (route name, config.yaml mapping, environment, credentials) → the expected route fields or
the exact error text. The hypothesis tests then throw arbitrary nested configs, environments and
credentials at the function and check that it answers a Route or a SelectionError and nothing else.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.errors import GatewayError, SelectionError
from hermes.routing import (
    CATEGORIES,
    ROUTE_NAMES,
    Credentials,
    Entitlement,
    Route,
    check_entitlement,
    entitlement_for,
    resolve_all,
    resolve_route,
    selection_state,
    selection_values,
)

NOW = 1_800_000_000.0
HINT = "Run 'hermes tools' to change it."


def jwt(claims: dict[str, Any]) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.sig"


def creds(claims: dict[str, Any] | None, env: dict[str, str] | None = None) -> Credentials:
    auth = {"version": 1, "providers": {"nous": {"access_token": jwt(claims)}}} if claims is not None else None
    return Credentials.from_sources(auth, env or {})


ANON = Credentials.anonymous()
PAID = creds({"exp": NOW + 3600, "paid_access": True})
FREE = creds({"exp": NOW + 3600, "tool_access": {"enabled": True, "coverage": {"fal": True, "firecrawl": True}}})
LAPSED = creds({"exp": NOW + 3600, "paid_access": False})
EXPIRED = creds({"exp": NOW - 10, "paid_access": True})
EXPIRED_RENEWABLE = Credentials.from_sources({"version": 1, "providers": {"nous": {
    "access_token": jwt({"exp": NOW - 10, "paid_access": True}), "refresh_token": "rt_x"}}}, {})
OPAQUE = Credentials.from_sources({"providers": {"nous": {"access_token": "opaque-token"}}}, {})
ENV_TOKEN = Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": jwt({"paid_access": True})})

NOUS_FAL = "https://fal-queue-gateway.nousresearch.com"
NOUS_FIRECRAWL = "https://firecrawl-gateway.nousresearch.com"
NOUS_AUDIO = "https://openai-audio-gateway.nousresearch.com"


@dataclass(frozen=True)
class Case:
    id: str
    name: str
    config: dict[str, Any]
    env: dict[str, str]
    credentials: Credentials
    expect: dict[str, Any] | str


CASES = [
    # -- GW-3: the saved selection always wins ------------------------------------------------------------
    Case("saved nous ignores FAL_KEY", "image_gen", {"image_gen": {"provider": "nous"}}, {"FAL_KEY": "k"}, ANON,
         {"kind": "gateway", "vendor": "fal", "origin": NOUS_FAL, "gateway_label": "fal-queue",
          "selected_by": "image_gen.provider", "credential_env": None, "message": "active via Nous subscription"}),
    Case("saved nous while logged out stays gateway", "tts", {"tts": {"provider": "nous"}},
         {"OPENAI_API_KEY": "k", "ELEVENLABS_API_KEY": "k"}, ANON, {"kind": "gateway", "origin": NOUS_AUDIO}),
    Case("saved fal without FAL_KEY is the exact GW-3 error", "image_gen", {"image_gen": {"provider": "fal"}}, {},
         ANON, f"image_gen is configured to use fal (set via hermes tools), but FAL_KEY is not set. {HINT}"),
    Case("saved fal without key never falls to an entitled gateway", "image_gen", {"image_gen": {"provider": "fal"}},
         {"FAL_KEY": "  "}, PAID,
         f"image_gen is configured to use fal (set via hermes tools), but FAL_KEY is not set. {HINT}"),
    Case("saved fal with FAL_KEY", "image_gen", {"image_gen": {"provider": "fal"}}, {"FAL_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "fal", "origin": "https://queue.fal.run", "credential_env": "FAL_KEY",
          "message": "active via FAL key", "gateway_label": None}),
    Case("selection written then key added is unchanged", "tts", {"tts": {"provider": "elevenlabs"}},
         {"ELEVENLABS_API_KEY": "k", "OPENAI_API_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "elevenlabs", "message": "active via ElevenLabs key"}),
    Case("saved local tts with keys present", "tts", {"tts": {"provider": "espeak"}}, {"OPENAI_API_KEY": "k"}, PAID,
         {"kind": "local", "vendor": "espeak", "origin": None, "message": "active via local eSpeak"}),
    Case("value is case and space tolerant", "stt", {"stt": {"provider": "  NOUS "}}, {}, ANON,
         {"kind": "gateway", "origin": NOUS_AUDIO, "vendor": "openai"}),
    Case("upstream alias ddgs means duckduckgo", "web.search", {"web": {"backend": "ddgs"}}, {}, ANON,
         {"kind": "local", "vendor": "duckduckgo", "selected_by": "web.backend"}),
    Case("empty selection value counts as never written", "image_gen", {"image_gen": {"provider": ""}},
         {"FAL_KEY": "k"}, ANON, {"kind": "byok", "vendor": "fal", "selected_by": None}),
    Case("null section counts as never written", "image_gen", {"image_gen": None}, {"KREA_API_KEY": "k"}, ANON,
         {"kind": "byok", "vendor": "krea", "origin": "https://api.krea.ai"}),
    # -- GW-4: auto-detection for never-configured categories --------------------------------------------
    Case("never configured plus FAL_KEY is byok fal", "image_gen", {}, {"FAL_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "fal", "selected_by": None, "credential_env": "FAL_KEY"}),
    # -- GW-8: a login alone never moves a category onto the subscription -------------------------------
    Case("login without any selection stays local", "tts", {}, {}, PAID,
         {"kind": "local", "vendor": "espeak", "selected_by": None}),
    Case("login without any selection leaves image generation off", "image_gen", {}, {}, PAID,
         {"kind": "none", "vendor": None, "message": "not configured"}),
    Case("login via the picker for tts moves tts", "tts", {"tts": {"provider": "nous"}}, {}, PAID,
         {"kind": "gateway", "origin": NOUS_AUDIO, "selected_by": "tts.provider"}),
    Case("login via the picker for tts leaves stt where it was", "stt", {"tts": {"provider": "nous"}}, {}, PAID,
         {"kind": "local", "vendor": "local", "selected_by": None}),
    Case("never configured nothing anonymous is local", "tts", {}, {}, ANON,
         {"kind": "local", "vendor": "espeak", "selected_by": None}),
    Case("never configured nothing anonymous image is none", "image_gen", {}, {}, ANON,
         {"kind": "none", "vendor": None, "origin": None, "message": "not configured"}),
    Case("never configured lapsed subscription is local", "browser", {}, {}, LAPSED,
         {"kind": "local", "vendor": "local", "message": "active via local Chromium"}),
    Case("a renewable login alone does not move the browser", "browser", {}, {}, EXPIRED_RENEWABLE,
         {"kind": "local", "vendor": "local"}),
    Case("opaque token has no claims so no gateway auto-detect", "stt", {}, {}, OPAQUE,
         {"kind": "local", "vendor": "local"}),
    Case("free tier covering fal does not auto-detect the gateway", "image_gen", {}, {}, FREE,
         {"kind": "none", "gateway_label": None}),
    Case("free tier not covering audio stays local", "tts", {}, {}, FREE, {"kind": "local", "vendor": "espeak"}),
    Case("auto priority elevenlabs before openai", "tts", {}, {"OPENAI_API_KEY": "a", "ELEVENLABS_API_KEY": "b"},
         ANON, {"vendor": "elevenlabs", "credential_env": "ELEVENLABS_API_KEY"}),
    Case("auto voice key preferred over OPENAI_API_KEY", "stt", {},
         {"OPENAI_API_KEY": "a", "VOICE_TOOLS_OPENAI_KEY": "b"}, ANON,
         {"vendor": "openai", "credential_env": "VOICE_TOOLS_OPENAI_KEY", "message": "active via OpenAI Whisper key"}),
    Case("env-only SEARXNG_URL auto-detects before keys", "web.search", {},
         {"SEARXNG_URL": "http://localhost:8888/", "FIRECRAWL_API_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "searxng", "origin": "http://localhost:8888", "credential_env": "SEARXNG_URL",
          "message": "active via SearXNG (SEARXNG_URL)"}),
    Case("SearXNG cannot extract so extract auto-detects firecrawl", "web.extract", {},
         {"SEARXNG_URL": "http://localhost:8888", "FIRECRAWL_API_KEY": "k"}, ANON,
         {"kind": "byok", "vendor": "firecrawl", "origin": "https://api.firecrawl.dev"}),
    Case("env-only CAMOFOX_URL auto-detects", "browser", {}, {"CAMOFOX_URL": "http://127.0.0.1:9377",
         "BROWSER_USE_API_KEY": "k"}, PAID, {"kind": "byok", "vendor": "camofox", "origin": "http://127.0.0.1:9377"}),
    Case("malformed SEARXNG_URL is an error not a guess", "web.search", {}, {"SEARXNG_URL": "localhost:8888"}, ANON,
         "web uses searxng, but SEARXNG_URL is not a plain http(s) URL (no user info, spaces or backslashes). "
         "Fix it in ~/.hermes/.env, or run 'hermes tools' to change the route."),
    Case("nothing anonymous web search is duckduckgo", "web.search", {}, {}, ANON,
         {"kind": "local", "vendor": "duckduckgo", "origin": "https://html.duckduckgo.com"}),
    Case("nothing anonymous web extract is local fetch", "web.extract", {}, {}, ANON,
         {"kind": "local", "vendor": "local", "message": "active via direct page fetch"}),
    Case("self-hosted firecrawl by URL alone", "web.extract", {}, {"FIRECRAWL_API_URL": "http://10.0.0.5:3002"}, ANON,
         {"vendor": "firecrawl", "origin": "http://10.0.0.5:3002", "credential_env": "FIRECRAWL_API_URL"}),
    Case("never configured video with xai key", "video_gen", {}, {"XAI_API_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "xai", "origin": "https://api.x.ai"}),
    # -- GW-5: web search and extract routed apart -------------------------------------------------------
    Case("split keys search byok", "web.search",
         {"web": {"search_backend": "firecrawl", "extract_backend": "nous"}}, {"FIRECRAWL_API_KEY": "k"}, ANON,
         {"kind": "byok", "vendor": "firecrawl", "selected_by": "web.search_backend"}),
    Case("split keys extract gateway", "web.extract",
         {"web": {"search_backend": "firecrawl", "extract_backend": "nous"}}, {"FIRECRAWL_API_KEY": "k"}, ANON,
         {"kind": "gateway", "origin": NOUS_FIRECRAWL, "gateway_label": "firecrawl",
          "selected_by": "web.extract_backend"}),
    Case("split key overrides web.backend for its function", "web.search",
         {"web": {"backend": "nous", "search_backend": "tavily"}}, {"TAVILY_API_KEY": "k"}, ANON,
         {"kind": "byok", "vendor": "tavily", "origin": "https://api.tavily.com"}),
    Case("web.backend still applies to the other function", "web.extract",
         {"web": {"backend": "nous", "search_backend": "tavily"}}, {"TAVILY_API_KEY": "k"}, ANON,
         {"kind": "gateway", "selected_by": "web.backend"}),
    Case("split key missing its key names the function", "web.search", {"web": {"search_backend": "tavily"}}, {},
         ANON, f"web.search is configured to use tavily (set via hermes tools), but TAVILY_API_KEY is not set. {HINT}"),
    Case("web.backend firecrawl missing key names both variables", "web.extract", {"web": {"backend": "firecrawl"}},
         {}, PAID, "web is configured to use firecrawl (set via hermes tools), but FIRECRAWL_API_KEY "
         f"(or FIRECRAWL_API_URL) is not set. {HINT}"),
    Case("web.backend searxng searches with SearXNG", "web.search", {"web": {"backend": "searxng"}},
         {"SEARXNG_URL": "https://searx.example.org"}, ANON, {"vendor": "searxng", "selected_by": "web.backend"}),
    Case("web.backend searxng extracts with local fetch", "web.extract", {"web": {"backend": "searxng"}},
         {"SEARXNG_URL": "https://searx.example.org"}, PAID,
         {"kind": "local", "vendor": "local", "message": "active via direct page fetch (SearXNG does not extract)"}),
    Case("web.backend searxng without SEARXNG_URL", "web.search", {"web": {"backend": "searxng"}}, {}, ANON,
         f"web is configured to use searxng (set via hermes tools), but SEARXNG_URL is not set. {HINT}"),
    Case("extract backend that cannot extract", "web.extract", {"web": {"extract_backend": "brave"}}, {}, ANON,
         "web.extract_backend is set to 'brave', which cannot extract in web. "
         f"Valid values: nous, firecrawl, tavily, exa, local. {HINT}"),
    Case("web.backend local is not a search backend", "web.search", {"web": {"backend": "local"}}, {}, ANON,
         "web.backend is set to 'local', which cannot search in web. "
         f"Valid values: nous, firecrawl, tavily, exa, brave, searxng, duckduckgo. {HINT}"),
    # -- GW-6: legacy use_gateway ------------------------------------------------------------------------
    Case("legacy use_gateway alone reads as nous", "image_gen", {"image_gen": {"use_gateway": True}},
         {"FAL_KEY": "k"}, ANON, {"kind": "gateway", "selected_by": "image_gen.use_gateway"}),
    Case("legacy upstream shape provider fal plus use_gateway", "image_gen",
         {"image_gen": {"provider": "fal", "use_gateway": True}}, {"FAL_KEY": "k"}, ANON,
         {"kind": "gateway", "vendor": "fal", "selected_by": "image_gen.use_gateway"}),
    Case("legacy web.use_gateway covers both functions", "web.search",
         {"web": {"backend": "firecrawl", "use_gateway": True}}, {"FIRECRAWL_API_KEY": "k"}, ANON,
         {"kind": "gateway", "origin": NOUS_FIRECRAWL}),
    Case("legacy flag next to a vendor the gateway does not relay", "web.search",
         {"web": {"backend": "tavily", "use_gateway": True}}, {"TAVILY_API_KEY": "k"}, PAID,
         {"kind": "byok", "vendor": "tavily", "selected_by": "web.backend"}),
    Case("legacy flag string true", "browser", {"browser": {"use_gateway": "true"}}, {}, ANON,
         {"kind": "gateway", "vendor": "browser-use"}),
    Case("legacy use_gateway false is no selection", "image_gen", {"image_gen": {"use_gateway": False}},
         {"FAL_KEY": "k"}, PAID, {"kind": "byok", "vendor": "fal", "selected_by": None}),
    Case("split key beats legacy flag", "web.search",
         {"web": {"use_gateway": True, "search_backend": "exa"}}, {"EXA_API_KEY": "k"}, ANON,
         {"kind": "byok", "vendor": "exa"}),
    # -- malformed selections ----------------------------------------------------------------------------
    Case("unknown vendor names the valid ones", "image_gen", {"image_gen": {"provider": "dalle"}}, {}, ANON,
         f"image_gen.provider is set to 'dalle', which is not a known image_gen backend. "
         f"Valid values: nous, fal, krea, openai. {HINT}"),
    Case("unknown browser vendor", "browser", {"browser": {"cloud_provider": "steel"}}, {}, ANON,
         "browser.cloud_provider is set to 'steel', which is not a known browser backend. "
         f"Valid values: nous, browser-use, browserbase, camofox, local. {HINT}"),
    Case("non-string selection", "tts", {"tts": {"provider": 3}}, {}, ANON,
         f"tts.provider must be a backend name (nous, openai, elevenlabs, espeak, piper), not 3. {HINT}"),
    Case("section that is not a mapping", "image_gen", {"image_gen": "fal"}, {"FAL_KEY": "k"}, ANON,
         f"image_gen in config.yaml must be a mapping (for example image_gen: {{provider: nous}}), not 'fal'. {HINT}"),
    Case("browserbase needs both variables", "browser", {"browser": {"cloud_provider": "browserbase"}},
         {"BROWSERBASE_API_KEY": "k"}, ANON, "browser is configured to use browserbase (set via hermes tools), "
         f"but BROWSERBASE_PROJECT_ID is not set. {HINT}"),
    Case("browserbase missing both", "browser", {"browser": {"cloud_provider": "browserbase"}}, {}, ANON,
         "browser is configured to use browserbase (set via hermes tools), "
         f"but BROWSERBASE_API_KEY and BROWSERBASE_PROJECT_ID are not set. {HINT}"),
    Case("openai tts missing key names the alternatives", "tts", {"tts": {"provider": "openai"}}, {}, ANON,
         "tts is configured to use openai (set via hermes tools), "
         f"but VOICE_TOOLS_OPENAI_KEY (or OPENAI_API_KEY) is not set. {HINT}"),
    # -- GW-14 origins in routes -------------------------------------------------------------------------
    Case("pinned relay URL", "image_gen", {"image_gen": {"provider": "nous", "model": "fal-ai/flux-2-pro"}},
         {"FAL_QUEUE_GATEWAY_URL": "http://127.0.0.1:3009/"}, ANON, {"origin": "http://127.0.0.1:3009"}),
    Case("self-hosted domain and scheme", "web.search", {"web": {"backend": "nous"}},
         {"TOOL_GATEWAY_DOMAIN": "gw.example.com", "TOOL_GATEWAY_SCHEME": "http"}, ANON,
         {"origin": "http://firecrawl-gateway.gw.example.com"}),
    Case("bad scheme breaks only gateway routes", "tts", {"tts": {"provider": "nous"}},
         {"TOOL_GATEWAY_SCHEME": "ftp"}, ANON, "tts is routed through the Nous Tool Gateway, but "
         "TOOL_GATEWAY_SCHEME must be http or https, not 'ftp'. Fix it in ~/.hermes/.env, or run 'hermes tools' "
         "to change the route."),
    Case("bad scheme leaves byok alone", "tts", {"tts": {"provider": "elevenlabs"}},
         {"TOOL_GATEWAY_SCHEME": "ftp", "ELEVENLABS_API_KEY": "k"}, ANON, {"kind": "byok"}),
    Case("env token is the gateway credential", "browser", {"browser": {"cloud_provider": "nous"}}, {}, ENV_TOKEN,
         {"credential_env": "TOOL_GATEWAY_USER_TOKEN"}),
    # -- GW-11 image model decides the relay -------------------------------------------------------------
    Case("krea native model goes to krea relay", "image_gen", {"image_gen": {"provider": "nous",
         "model": "krea-2-large"}}, {}, FREE, {"gateway_label": "krea", "vendor": "krea",
                                               "origin": "https://krea-gateway.nousresearch.com"}),
    Case("portal model goes to the shared origin", "image_gen", {"image_gen": {"provider": "nous",
         "model": "gpt-image-1"}}, {"TOOL_GATEWAY_URL": "http://127.0.0.1:4000"}, PAID,
         {"gateway_label": "tool", "vendor": "nous", "origin": "http://127.0.0.1:4000"}),
    Case("no model paid plan defaults to krea", "image_gen", {"image_gen": {"provider": "nous"}}, {}, PAID,
         {"gateway_label": "krea"}),
    Case("no model free tier defaults to fal", "image_gen", {"image_gen": {"provider": "nous"}}, {}, FREE,
         {"gateway_label": "fal-queue"}),
    Case("a paid login beside a free env token is judged by the free token it sends", "image_gen",
         {"image_gen": {"provider": "nous"}}, {},
         creds({"exp": NOW + 3600, "paid_access": True}, {"TOOL_GATEWAY_USER_TOKEN": jwt(
             {"exp": NOW + 3600, "tool_access": {"enabled": True, "coverage": {"fal": True}}})}),
         {"gateway_label": "fal-queue"}),
    Case("video gateway uses fal queue", "video_gen", {"video_gen": {"provider": "nous"}}, {}, ANON,
         {"kind": "gateway", "gateway_label": "fal-queue", "vendor": "fal"}),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_selection_table(case: Case) -> None:
    if isinstance(case.expect, str):
        with pytest.raises(SelectionError) as info:
            resolve_route(case.name, case.config, case.env, case.credentials, now=NOW)
        assert str(info.value) == case.expect
        return
    route = resolve_route(case.name, case.config, case.env, case.credentials, now=NOW)
    got = {key: getattr(route, key) for key in case.expect}
    assert got == case.expect


@pytest.mark.parametrize("credentials", [
    EXPIRED,
    EXPIRED_RENEWABLE,
    Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": jwt({"exp": NOW - 10, "paid_access": True})}),
    PAID,
], ids=["expired-login", "renewable-login", "expired-env-token", "valid"])
def test_auto_detection_never_picks_the_gateway_from_a_login(credentials: Credentials) -> None:
    assert resolve_route("tts", {}, {}, credentials, now=NOW).kind == "local"
    # a saved selection still wins: the route stays on the gateway and the entitlement check explains
    assert resolve_route("tts", {"tts": {"provider": "nous"}}, {}, credentials, now=NOW).kind == "gateway"


def test_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


def test_route_names_and_bad_names() -> None:
    assert ROUTE_NAMES == ("web.search", "web.extract", "image_gen", "tts", "stt", "browser", "video_gen")
    with pytest.raises(ValueError, match=r"web\.search, web\.extract"):
        resolve_route("web", {}, {}, ANON)
    for bad in ("images", "web.crawl", "tts.speak", ""):
        with pytest.raises(ValueError, match="unknown tool category"):
            resolve_route(bad, {}, {}, ANON)


def test_route_name_and_require() -> None:
    route = resolve_route("web.search", {}, {}, ANON)
    assert route.name == "web.search" and route.auto_detected
    none = resolve_route("video_gen", {}, {}, ANON)
    assert none.name == "video_gen"
    with pytest.raises(SelectionError, match=r"^video_gen is not configured: set a key for one of fal \(FAL_KEY\)"):
        none.require()
    assert route.require() is route


def test_resolve_all_collects_routes_and_errors() -> None:
    config = {"image_gen": {"provider": "fal"}, "web": {"extract_backend": "nous"}}
    result = resolve_all(config, {"TAVILY_API_KEY": "k"}, ANON)
    assert list(result) == list(ROUTE_NAMES)
    assert isinstance(result["image_gen"], SelectionError)
    assert "FAL_KEY is not set" in str(result["image_gen"])
    search, extract = result["web.search"], result["web.extract"]
    assert isinstance(search, Route) and search.vendor == "tavily"
    assert isinstance(extract, Route) and extract.kind == "gateway"


def test_selection_values_for_the_picker() -> None:
    web = CATEGORIES["web"]
    assert selection_values(web) == ("nous", "firecrawl", "tavily", "exa", "brave", "searxng", "duckduckgo")
    assert selection_values(web, "extract") == ("nous", "firecrawl", "tavily", "exa", "local")
    assert selection_values(CATEGORIES["stt"]) == ("nous", "openai", "local")


# -- GW-7: how each category stands for the checklist ----------------------------------------------------
@pytest.mark.parametrize(
    ("category", "config", "env", "state"),
    [
        ("web", {"web": {"backend": "searxng"}}, {}, "explicit"),
        ("browser", {"browser": {"cloud_provider": "camofox"}}, {}, "explicit"),
        ("web", {}, {"SEARXNG_URL": "http://localhost:8888"}, "env_only"),
        ("browser", {}, {"CAMOFOX_URL": "http://localhost:9377"}, "env_only"),
        ("web", {}, {"FIRECRAWL_API_KEY": "k"}, "unconfigured"),
        ("image_gen", {}, {}, "unconfigured"),
        ("tts", {"tts": {"provider": "nous"}}, {}, "gateway"),
        ("image_gen", {"image_gen": {"use_gateway": True}}, {}, "gateway"),
        ("web", {"web": {"backend": "nous", "search_backend": "firecrawl"}}, {}, "explicit"),
        ("web", {"web": {"search_backend": "nous", "extract_backend": "nous"}}, {}, "gateway"),
        ("tts", {"tts": "garbage"}, {}, "explicit"),
        ("tts", {"tts": {"provider": ["x"]}}, {}, "explicit"),
    ],
    ids=["searxng saved", "camofox saved", "SEARXNG_URL only", "CAMOFOX_URL only", "key lying around",
         "nothing", "nous saved", "legacy flag", "split firecrawl", "split both nous", "garbage section",
         "garbage value"],
)
def test_selection_state(category: str, config: dict[str, Any], env: dict[str, str], state: str) -> None:
    assert selection_state(category, config, env) == state


# -- GW-10: entitlement of gateway routes ----------------------------------------------------------------
MANAGE = "https://portal.nousresearch.com/manage-subscription"
SWITCH = "or run 'hermes tools' to switch {0} to your own key."


@pytest.mark.parametrize(
    ("config", "credentials", "status", "message"),
    [
        ({"tts": {"provider": "nous"}}, PAID, "paid", None),
        ({"image_gen": {"provider": "nous", "model": "fal-ai/flux-2/klein/9b"}}, FREE, "free_tier", None),
        ({"tts": {"provider": "nous"}}, ANON, "not_logged_in",
         "tts uses the Nous Tool Gateway, but you are not logged in to Nous Portal. Run 'hermes portal login', "
         + SWITCH.format("tts")),
        ({"tts": {"provider": "nous"}}, EXPIRED, "expired",
         "tts uses the Nous Tool Gateway, but your Nous Portal login has expired. Run 'hermes portal login' to "
         "renew it, " + SWITCH.format("tts")),
        ({"tts": {"provider": "nous"}}, LAPSED, "no_access",
         "tts uses the Nous Tool Gateway, but your Nous Portal account has no active subscription with tool "
         f"access (it may have expired). Renew it at {MANAGE}, " + SWITCH.format("tts")),
        ({"tts": {"provider": "nous"}}, FREE, "not_covered",
         f"tts uses the Nous Tool Gateway, but your free tool tier does not cover it. Upgrade at {MANAGE}, "
         + SWITCH.format("tts")),
        ({"tts": {"provider": "nous"}}, OPAQUE, "unknown",
         "tts uses the Nous Tool Gateway, but your Nous Portal token carries no readable entitlement. "
         "Run 'hermes portal login', " + SWITCH.format("tts")),
        ({"image_gen": {"provider": "nous", "model": "krea-2-medium"}}, FREE, "not_covered",
         "image_gen uses a Krea or Nous Portal image model, which needs a paid Nous subscription; the free tool "
         f"tier covers FAL models only. Upgrade at {MANAGE}, pick a FAL model in 'hermes tools', "
         + SWITCH.format("image_gen")),
    ],
    ids=["paid", "free tier fal", "logged out", "expired login", "lapsed subscription", "free tier not covering",
         "opaque token", "krea on free tier"],
)
def test_check_entitlement(config: dict[str, Any], credentials: Credentials, status: str, message: str | None) -> None:
    name = next(iter(config))
    route = resolve_route(name, config, {}, credentials)
    entitlement = entitlement_for(route, credentials, now=NOW)
    assert entitlement is not None and entitlement.status == status
    if message is None:
        assert check_entitlement(route, credentials, now=NOW) == entitlement
        return
    with pytest.raises(GatewayError) as info:
        check_entitlement(route, credentials, now=NOW)
    assert str(info.value) == message


def test_entitlement_is_none_for_direct_routes_and_never_shows_the_token() -> None:
    route = resolve_route("image_gen", {}, {"FAL_KEY": "k"}, PAID)
    assert entitlement_for(route, PAID, now=NOW) is None
    assert check_entitlement(route, ANON, now=NOW) is None
    secret = jwt({"exp": NOW - 1, "paid_access": True, "pad": "s3cr3t"})
    expired = creds({"exp": NOW - 1, "paid_access": True, "pad": "s3cr3t"})
    gw = resolve_route("tts", {"tts": {"provider": "nous"}}, {}, expired)
    with pytest.raises(GatewayError) as info:
        check_entitlement(gw, expired, now=NOW)
    assert secret not in str(info.value) and secret not in repr(expired)


def test_portal_url_in_gw10_follows_the_configured_portal() -> None:
    lapsed = Credentials.from_sources(
        {"providers": {"nous": {"access_token": jwt({"paid_access": False}), "portal_base_url": "http://127.0.0.1:9"}}},
        {},
    )
    route = resolve_route("stt", {"stt": {"provider": "nous"}}, {}, lapsed)
    with pytest.raises(GatewayError, match=r"Renew it at http://127\.0\.0\.1:9/manage-subscription"):
        check_entitlement(route, lapsed, now=NOW)


# -- properties ------------------------------------------------------------------------------------------
SECTION_KEYS = ["backend", "search_backend", "extract_backend", "provider", "cloud_provider", "use_gateway", "model"]
NAMES = ["nous", "NOUS", "fal", "krea", "openai", "firecrawl", "tavily", "exa", "brave", "searxng", "duckduckgo",
         "ddgs", "local", "espeak", "elevenlabs", "browser-use", "browserbase", "camofox", "xai", "krea-2-large",
         "fal-ai/x", "", " ", "dalle"]
ENV_NAMES = sorted({n for c in CATEGORIES.values() for v in c.vendors for n in v.env_names} | {
    "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_URL", "TOOL_GATEWAY_USER_TOKEN",
    "FAL_QUEUE_GATEWAY_URL", "FIRECRAWL_GATEWAY_URL", "KREA_GATEWAY_URL"})
KEY_NAMES = [n for n in ENV_NAMES if n.endswith(("_KEY", "_PROJECT_ID"))]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.sampled_from(NAMES),
                    st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(SECTION_KEYS) | st.text(max_size=5), inner,
                                                 max_size=4)), max_leaves=8)
sections = st.one_of(values, st.dictionaries(st.sampled_from(SECTION_KEYS), values, max_size=5))
random_configs = st.dictionaries(st.sampled_from([*CATEGORIES, "model", "other"]), sections, max_size=7)
# Configs shaped like real ones: the right keys per category, mostly valid values, sometimes the legacy flag.


def shaped_section(name: str) -> st.SearchStrategy[dict[str, Any]]:
    category = CATEGORIES[name]
    optional: dict[str, st.SearchStrategy[Any]] = {
        category.selection_key.split(".")[1]: st.sampled_from([*selection_values(category), "dalle", ""]),
        "use_gateway": st.booleans(),
        "model": st.sampled_from(["krea-2-large", "fal-ai/flux-2-pro", "gpt-image-1"]),
    }
    if name == "web":
        for function in ("search", "extract"):
            optional[f"{function}_backend"] = st.sampled_from(selection_values(category, function))
    return st.fixed_dictionaries({}, optional=optional)


shaped_configs = st.fixed_dictionaries({}, optional={name: shaped_section(name) for name in CATEGORIES})
configs = st.one_of(random_configs, shaped_configs, shaped_configs, shaped_configs)
ODD_ENV_VALUES = ["k", "http://localhost:8888", "https://gw.example.com/", "ftp", "http", "example.com", "a b",
                  "https://u:p@h", "", " "]
env_values = st.one_of(st.sampled_from(["k"] * 6), st.sampled_from(ODD_ENV_VALUES), st.text(max_size=20))
envs = st.dictionaries(st.sampled_from(ENV_NAMES), env_values, max_size=12)
claims = st.dictionaries(st.sampled_from(["exp", "paid_access", "tool_access", "managed_tools", "scope"]),
                         values | st.fixed_dictionaries({"enabled": st.booleans(), "coverage": st.dictionaries(
                             st.sampled_from(["fal", "firecrawl", "openai-audio", "browser-use", "fal-video"]),
                             st.booleans())}), max_size=5)
credentials_st = st.one_of(
    st.just(ANON),
    claims.map(lambda c: creds(c)),
    st.builds(lambda doc, env: Credentials.from_sources(doc, env), values, envs),
)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(ROUTE_NAMES), config=configs, env=envs, credentials=credentials_st)
def test_resolve_route_answers_a_route_or_a_selection_error(
    name: str, config: dict[str, Any], env: dict[str, str], credentials: Credentials
) -> None:
    try:
        route = resolve_route(name, config, env, credentials)
    except SelectionError as exc:
        assert str(exc).strip()
        return
    assert isinstance(route, Route) and route.kind in ("gateway", "byok", "local", "none")
    assert route.name == name
    if route.kind == "gateway":
        assert route.origin and route.gateway_label
    try:
        result = check_entitlement(route, credentials, now=NOW)
    except GatewayError as exc:
        # the token never leaks into a message (short generated tokens may occur in ordinary words)
        assert credentials.token is None or len(credentials.token) < 8 or credentials.token not in str(exc)
    else:
        assert result is None or isinstance(result, Entitlement)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(ROUTE_NAMES), env=envs, credentials=credentials_st,
       added=st.dictionaries(st.sampled_from(KEY_NAMES), st.just("key"), min_size=1))
def test_a_saved_selection_ignores_added_keys(
    data: st.DataObject, name: str, env: dict[str, str], credentials: Credentials, added: dict[str, str]
) -> None:
    category_name, _, function = name.partition(".")
    category = CATEGORIES[category_name]
    per_function = bool(function) and data.draw(st.booleans(), label="per-function key")
    value = data.draw(st.sampled_from(selection_values(category, function if per_function else None)), label="value")
    leaf = f"{function}_backend" if per_function else category.selection_key.split(".")[1]
    config = {category_name: {leaf: value}}
    vendor = category.vendor(value)
    ready = {group[0]: "key" for group in vendor.env} if vendor else {}
    if "SEARXNG_URL" in ready or "CAMOFOX_URL" in ready:
        ready = dict.fromkeys(ready, "http://127.0.0.1:8080")
    try:
        before = resolve_route(name, config, {**env, **ready}, credentials)
    except SelectionError as exc:  # only a malformed gateway or origin override may stop a complete selection
        assert "Fix it in ~/.hermes/.env" in str(exc)
        return
    assert before.selected_by is not None
    after = resolve_route(name, config, {**env, **ready, **added}, credentials)
    assert (after.kind, after.vendor, after.gateway_label, after.selected_by) == (
        before.kind, before.vendor, before.gateway_label, before.selected_by)


@settings(max_examples=100, deadline=None)
@given(config=configs, env=envs)
def test_selection_state_never_raises(config: dict[str, Any], env: dict[str, str]) -> None:
    for category in CATEGORIES:
        assert selection_state(category, config, env) in ("gateway", "explicit", "env_only", "unconfigured")
