"""Nous inference takes the portal login as its key: the model endpoint sees the access token, refreshed.

A real gateway server on loopback issues the login (device code approved through its accounts API);
a scripted OpenAI-compatible server stands in for the Nous inference API and records the
``Authorization`` header of every chat request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ServerFactory
from fakes.model_server import text
from fakes.vendors.harness import GatewayHarness
from hermes.agent.provider import CallOptions, OpenAICompatProvider
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.routing.inference import session_model
from hermes.routing.portal_login import DeviceCode, login


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    with GatewayHarness(tmp_path_factory.mktemp("gw_inference")) as harness:
        harness.user("alice", "paid")
        yield harness


def log_in(gw: GatewayHarness, home: Path) -> None:
    def approve(code: DeviceCode) -> None:
        assert gw.side.oauth.decide(code.user_code, gw.side.accounts.get_user("alice"), True)

    login(home / "auth.json", {}, gw.url, show=approve, sleep=lambda _: None)


def nous_config(home: Path, base_url: str) -> None:
    (home / "config.yaml").write_text(f"model:\n  provider: nous\n  base_url: {base_url}\n  name: Hermes-4-70B\n")


def ask(home: Path) -> None:
    settings = Settings.load(HermesPaths(home))
    provider = OpenAICompatProvider(session_model(settings), stream=False)
    try:
        assert provider.complete([{"role": "user", "content": "hi"}], None, CallOptions()).content == "hello"
    finally:
        provider.close()


def stored(home: Path) -> dict[str, str]:
    entry: dict[str, str] = json.loads((home / "auth.json").read_text())["providers"]["nous"]
    return entry


def test_the_portal_login_is_the_inference_key(gw: GatewayHarness, hermes_home: Path,
                                               model_server: ServerFactory) -> None:
    log_in(gw, hermes_home)
    server = model_server([text("hello")])
    nous_config(hermes_home, server.url)
    settings = session_model(Settings.load(HermesPaths(hermes_home)))
    assert "Nous Portal login" in settings.api_key_source and settings.api_key not in settings.api_key_source
    assert settings.api_key not in repr(settings)
    ask(hermes_home)
    assert server.request_headers[0]["authorization"] == f"Bearer {stored(hermes_home)['access_token']}"


def test_a_token_about_to_expire_is_refreshed_before_the_model_call(gw: GatewayHarness, hermes_home: Path,
                                                                     model_server: ServerFactory) -> None:
    log_in(gw, hermes_home)
    doc = json.loads((hermes_home / "auth.json").read_text())
    old_access = doc["providers"]["nous"]["access_token"]
    old_refresh = doc["providers"]["nous"]["refresh_token"]
    doc["providers"]["nous"]["expires_at"] = "2000-01-01T00:00:00Z"  # due: refreshed before use
    (hermes_home / "auth.json").write_text(json.dumps(doc))
    server = model_server([text("hello")])
    nous_config(hermes_home, server.url)
    ask(hermes_home)
    entry = stored(hermes_home)
    assert entry["refresh_token"] != old_refresh and entry["access_token"] != old_access
    assert server.request_headers[0]["authorization"] == f"Bearer {entry['access_token']}"


def test_nous_api_key_wins_and_the_override_url_is_not_saved(gw: GatewayHarness, hermes_home: Path,
                                                            model_server: ServerFactory,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    log_in(gw, hermes_home)
    server = model_server([text("hello")])
    nous_config(hermes_home, "https://inference-api.nousresearch.com/v1")
    monkeypatch.setenv("NOUS_API_KEY", "nk-direct")
    monkeypatch.setenv("NOUS_INFERENCE_BASE_URL", server.url)
    settings = session_model(Settings.load(HermesPaths(hermes_home)))
    assert settings.base_url == server.url and settings.api_key_source.startswith("NOUS_API_KEY")
    ask(hermes_home)
    assert server.request_headers[0]["authorization"] == "Bearer nk-direct"
    assert "inference-api.nousresearch.com" in (hermes_home / "config.yaml").read_text()


def test_without_a_login_the_key_is_missing_and_the_source_says_so(hermes_home: Path) -> None:
    nous_config(hermes_home, "https://inference-api.nousresearch.com/v1")
    settings = session_model(Settings.load(HermesPaths(hermes_home)))
    assert settings.api_key is None and settings.api_key_source == "none" and settings.key_provider is None
