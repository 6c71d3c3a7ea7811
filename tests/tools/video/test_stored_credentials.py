"""Video backends on credentials kept in auth.json instead of a variable: an OpenRouter key stored with
``hermes auth add openrouter`` and a SuperGrok login (``hermes auth add xai --type oauth``: RFC 8628 device
code against a loopback fake of xAI's login server, renewed with its refresh token when it is about to end)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fakes.vendors.server import ServerThread
from fakes.vendors.video import FakeOpenRouterVideo
from hermes.config.settings import Settings
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

FAKE = (FakeOpenRouterVideo, "openrouter", "OPENROUTER_API_KEY", "/v1")


def hermes(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes", *args], input=stdin, capture_output=True, text=True,
                          env=dict(os.environ), timeout=60)


def generate(args: dict[str, Any]) -> dict[str, Any]:
    tools = ToolSession(registry, ["video_generate"], SessionContext.from_settings(Settings.load(), session_id="st"))
    result = json.loads(tools.dispatch("video_generate", args).text)
    assert isinstance(result, dict)
    return result


def test_a_stored_openrouter_key_pays_for_the_video_when_the_variable_is_unset(
        home: Path, fake: FakeOpenRouterVideo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY")
    registry.invalidate_checks()
    assert registry.availability("video_generate")[0] is False  # no key anywhere: tools list says ✗
    fake.key = "sk-or-stored-1"
    added = hermes("auth", "add", "openrouter", "--label", "team key", stdin="sk-or-stored-1\n")
    assert added.returncode == 0, added.stderr
    assert stat.S_IMODE((home / "auth.json").stat().st_mode) == 0o600
    listed = hermes("auth", "list")
    assert "openrouter" in listed.stdout and "team key" in listed.stdout
    assert "sk-or-stored-1" not in listed.stdout + added.stdout + added.stderr
    registry.invalidate_checks()
    assert registry.availability("video_generate") == (True, None)
    result = generate({"prompt": "a kite", "duration": 4})
    assert result["success"] and result["backend"] == "openrouter", result
    assert fake.submits()[0]["headers"]["authorization"] == "Bearer sk-or-stored-1"
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-from-env")  # a set variable wins over the stored key
    fake.key = "or-from-env"
    assert generate({"prompt": "a kite", "duration": 4})["success"]
    assert hermes("auth", "remove", "openrouter").stdout.startswith("Removed 1 stored openrouter credential")
    assert "credential_pool" not in json.loads((home / "auth.json").read_text()) or \
        "openrouter" not in json.loads((home / "auth.json").read_text())["credential_pool"]


class FakeXaiLogin:
    """xAI's login server as RFC 8628 describes it: a device code, one ``authorization_pending``, then tokens;
    ``refresh_token`` grants rotate both tokens."""

    def __init__(self) -> None:
        self.forms: list[dict[str, str]] = []
        self.issued = 0
        self.app = Starlette(routes=[Route("/oauth2/device/code", self._device, methods=["POST"]),
                                     Route("/oauth2/token", self._token, methods=["POST"])])

    async def _device(self, request: Request) -> Response:
        self.forms.append(dict(await request.form()))
        return JSONResponse({"device_code": "dev-secret", "user_code": "ABCD-EFGH", "expires_in": 600,
                             "verification_uri": "https://accounts.x.ai/device", "interval": 1})

    async def _token(self, request: Request) -> Response:
        form = dict(await request.form())
        self.forms.append(form)
        if form.get("grant_type") == "urn:ietf:params:oauth:grant-type:device_code":
            if sum(1 for f in self.forms if f.get("device_code")) == 1:
                return JSONResponse({"error": "authorization_pending"}, 400)
        elif not (form.get("grant_type") == "refresh_token" and form.get("refresh_token") == f"rt-{self.issued}"):
            return JSONResponse({"error": "invalid_grant", "error_description": "bad refresh token"}, 400)
        self.issued += 1
        return JSONResponse({"access_token": f"at-{self.issued}", "refresh_token": f"rt-{self.issued}",
                             "token_type": "Bearer", "expires_in": 3600})


@pytest.fixture
def xai_login(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeXaiLogin]:
    made = FakeXaiLogin()
    with ServerThread(made.app, lifespan="off") as thread:
        monkeypatch.setenv("XAI_OAUTH_ISSUER", thread.url)
        yield made


def test_a_supergrok_login_pays_for_xai_video_and_is_renewed_before_it_ends(
        home: Path, fakes: dict[str, Any], xai_login: FakeXaiLogin) -> None:
    from hermes.routing import xai_oauth

    shown: list[str] = []
    stored = xai_oauth.login(home / "auth.json", dict(os.environ), show=lambda code: shown.append(code.user_code),
                             sleep=lambda _: None)
    assert shown == ["ABCD-EFGH"] and "access_token" not in stored
    assert xai_login.forms[0]["client_id"] == xai_oauth.CLIENT_ID and "api:access" in xai_login.forms[0]["scope"]
    assert stat.S_IMODE((home / "auth.json").stat().st_mode) == 0o600
    (home / "config.yaml").write_text(f"video_gen:\n  provider: xai\n  poll_seconds: 0.001\n"
                                      f"  xai:\n    base_url: {fakes['xai_url']}\n", encoding="utf-8")
    registry.invalidate_checks()
    fakes["xai"].key = "at-1"
    result = generate({"prompt": "a fox", "duration": 6})
    assert result["success"] and result["backend"] == "xai", result
    assert fakes["xai"].submits()[0]["headers"]["authorization"] == "Bearer at-1"
    # an hour later the token is about to end: it is renewed (rotating the refresh token) before it is sent
    document = json.loads((home / "auth.json").read_text())
    document["providers"]["xai-oauth"]["expires_at"] = 0
    (home / "auth.json").write_text(json.dumps(document))
    fakes["xai"].key = "at-2"
    assert generate({"prompt": "a fox", "duration": 6})["success"]
    assert json.loads((home / "auth.json").read_text())["providers"]["xai-oauth"]["refresh_token"] == "rt-2"
    listed = hermes("auth", "list", "--json")
    assert json.loads(listed.stdout)[0]["provider"] == "xai" and "at-2" not in listed.stdout
    assert hermes("auth", "remove", "xai").returncode == 0
    registry.invalidate_checks()
    assert registry.availability("video_generate")[0] is False
