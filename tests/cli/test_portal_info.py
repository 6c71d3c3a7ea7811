"""``hermes portal info`` for each routing state, as inline snapshots (GW-9), and its ``--json`` form.

The report is built from explicit (config, env, auth.json) inputs at a fixed clock, so every line is
exact. The text is the GW-9 block: the portal auth line, then one routing line per category with
✓ (gateway, entitled), ○ (your own key, a local backend, nothing configured) or ✗ (the route cannot run:
the selection error, or the reason the gateway would refuse).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hermes.cli.portal import info_lines
from hermes.errors import GatewayError, SelectionError
from hermes.routing import check_entitlement, resolve_all
from hermes.routing.credentials import Credentials
from hermes.routing.report import build_report, catalog_rows

NOW = 1_800_000_000.0


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def jwt(claims: dict[str, Any]) -> str:
    return f"{b64(b'{}')}.{b64(json.dumps(claims).encode())}.sig"


PAID = {"exp": NOW + 3600, "paid_access": True, "tool_access": {"enabled": True, "coverage": {}}}
FREE = {"exp": NOW + 3600, "paid_access": False,
        "tool_access": {"enabled": True, "coverage": {"firecrawl": True, "fal": True}}}
ALL_NOUS = {"web": {"backend": "nous"}, "image_gen": {"provider": "nous"}, "tts": {"provider": "nous"},
            "stt": {"provider": "nous"}, "browser": {"cloud_provider": "browser-use"}, "model": {"provider": "nous"}}


def auth(claims: dict[str, Any] | None, *, refresh: bool = True, token: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"access_token": token or jwt(claims or {})}
    if refresh:
        entry["refresh_token"] = "rt_x"
    return {"version": 1, "providers": {"nous": entry}}


def espeak_path() -> str:
    """A PATH holding an ``espeak-ng`` program, so the local eSpeak line does not depend on this machine."""
    folder = Path(tempfile.mkdtemp(prefix="hermes-espeak-"))
    program = folder / "espeak-ng"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return str(folder)


ESPEAK_PATH = espeak_path()


def info(config: dict[str, Any], env: dict[str, str], doc: dict[str, Any] | None) -> str:
    env = {"PATH": ESPEAK_PATH, **env}
    creds = Credentials.from_sources(doc, env)
    entry = doc["providers"]["nous"] if doc else None
    return "\n".join(info_lines(config, build_report(config, env, creds, entry, NOW))) + "\n"


def snap(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_logged_out_defaults() -> None:
    assert info({}, {}, None) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ○ not logged in — run 'hermes portal login'
          Web search        ○ active via DuckDuckGo
          Web extract       ○ active via direct page fetch
          Image generation  ○ not configured
          Text to speech    ○ active via local eSpeak
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ○ not available — local Chromium needs the program chromium (or chromium-browser or google-chrome or google-chrome-stable) on PATH (pip install 'hermes[browser]' and the chromium package)
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
          Sign up: https://portal.nousresearch.com/manage-subscription
          Login:   hermes portal login
        """)


def test_paid_subscription_with_one_own_key() -> None:
    assert info(ALL_NOUS, {"BROWSER_USE_API_KEY": "bu"}, auth(PAID)) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✓ managed tools available
          Web tools         ✓ active via Nous subscription
          Image generation  ✓ active via Nous subscription
          Text to speech    ✓ active via Nous subscription
          Speech to text    ○ not built yet — no tool uses it (route: Nous subscription)
          Browser           ○ active via Browser Use key
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
          Model:   ✓ using Nous as inference provider
        """)


def test_free_tier_does_not_cover_speech() -> None:
    config = {"web": {"backend": "nous"}, "image_gen": {"provider": "nous"}, "tts": {"provider": "nous"}}
    assert info(config, {}, auth(FREE)) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✓ free tool tier (covers fal, firecrawl)
          Web tools         ✓ active via Nous subscription
          Image generation  ✓ active via Nous subscription
          Text to speech    ✗ Nous subscription selected — not covered by the free tool tier
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ○ not available — local Chromium needs the program chromium (or chromium-browser or google-chrome or google-chrome-stable) on PATH (pip install 'hermes[browser]' and the chromium package)
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
        """)


def test_expired_but_refreshable_is_not_refreshed_by_info() -> None:
    assert info(ALL_NOUS, {"BROWSER_USE_API_KEY": "bu"}, auth({**PAID, "exp": NOW - 10})) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✓ managed tools available (expired, will refresh on next use)
          Web tools         ✓ active via Nous subscription
          Image generation  ✓ active via Nous subscription
          Text to speech    ✓ active via Nous subscription
          Speech to text    ○ not built yet — no tool uses it (route: Nous subscription)
          Browser           ○ active via Browser Use key
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
          Model:   ✓ using Nous as inference provider
        """)


def test_expired_without_refresh_token() -> None:
    """Selected categories show the refusal they would hit; never-configured ones stay off the gateway,
    since a login alone never moves a category onto it (requirement GW-8)."""
    config = {k: v for k, v in ALL_NOUS.items() if k in ("web", "tts", "browser")}
    assert info(config, {"BROWSER_USE_API_KEY": "bu"}, auth({**PAID, "exp": NOW - 10}, refresh=False)) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✗ login expired — run 'hermes portal login'
          Web tools         ✗ Nous subscription selected — the Nous Portal login has expired
          Image generation  ○ not configured
          Text to speech    ✗ Nous subscription selected — the Nous Portal login has expired
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ○ active via Browser Use key
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
        """)


def test_selection_errors_and_split_web() -> None:
    config = {"web": {"search_backend": "firecrawl", "extract_backend": "nous"}, "image_gen": {"provider": "fal"},
              "tts": {"provider": "elevenlabs"}, "stt": {"provider": "local"}, "browser": {"cloud_provider": "camofox"},
              "model": {"provider": "openai"}}
    env = {"FIRECRAWL_API_KEY": "fc", "ELEVENLABS_API_KEY": "el"}
    assert info(config, env, auth(PAID)) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✓ managed tools available
          Web search        ○ active via Firecrawl key
          Web extract       ✓ active via Nous subscription
          Image generation  ✗ image_gen is configured to use fal (set via hermes tools), but FAL_KEY is not set. Run 'hermes tools' to change it.
          Text to speech    ○ active via ElevenLabs key
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ✗ browser is configured to use camofox (set via hermes tools), but CAMOFOX_URL is not set. Run 'hermes tools' to change it.
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
          Model:   currently openai (switch with 'hermes model')
        """)


def test_legacy_use_gateway_and_env_token() -> None:
    config = {"web": {"backend": "firecrawl", "use_gateway": True},
              "image_gen": {"provider": "fal", "use_gateway": True},
              "tts": {"provider": "espeak"}, "stt": {"provider": "local"}, "browser": {"cloud_provider": "local"}}
    env = {"FAL_KEY": "k", "TOOL_GATEWAY_USER_TOKEN": jwt(PAID)}
    assert info(config, env, None) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ✓ managed tools available (TOOL_GATEWAY_USER_TOKEN)
          Web tools         ✓ active via Nous subscription
          Image generation  ✓ active via Nous subscription
          Text to speech    ○ active via local eSpeak
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ✗ not available — local Chromium needs the program chromium (or chromium-browser or google-chrome or google-chrome-stable) on PATH (pip install 'hermes[browser]' and the chromium package)
          Video generation  ○ active via FAL key; opt-in: not enabled (hermes tools enable video_gen)

          Portal:  https://portal.nousresearch.com
        """)


def test_no_tool_access_and_opaque_token() -> None:
    config = {"tts": {"provider": "nous"}, "web": {"backend": "duckduckgo"}}
    assert info(config, {}, auth({"exp": NOW + 3600, "paid_access": False})) == snap("""
        ◆ Nous Tool Gateway
          Nous Portal       ○ logged in, no subscription with tool access — https://portal.nousresearch.com/manage-subscription
          Web search        ○ active via DuckDuckGo
          Web extract       ○ active via direct page fetch (DuckDuckGo does not extract)
          Image generation  ○ not configured
          Text to speech    ✗ Nous subscription selected — no active subscription with tool access
          Speech to text    ○ not built yet — no tool uses it (route: local faster-whisper)
          Browser           ○ not available — local Chromium needs the program chromium (or chromium-browser or google-chrome or google-chrome-stable) on PATH (pip install 'hermes[browser]' and the chromium package)
          Video generation  ○ not configured

          Portal:  https://portal.nousresearch.com
        """)
    opaque = info(config, {}, auth(None, token="opaque-token-value"))
    assert "  Nous Portal       ○ logged in; the token carries no readable plan (the gateway decides on each call)\n" \
        in opaque
    assert "  Text to speech    ✗ Nous subscription selected — the portal token carries no readable claims\n" in opaque


@pytest.mark.parametrize(("config", "env", "doc"), [
    ({}, {}, None),
    (ALL_NOUS, {"BROWSER_USE_API_KEY": "bu"}, auth(PAID)),
    ({"web": {"backend": "nous"}, "tts": {"provider": "nous"}}, {}, auth(FREE)),
    ({"image_gen": {"provider": "fal"}, "web": {"backend": "tavily"}}, {"TAVILY_API_KEY": "t"}, auth(PAID)),
    ({"web": {"backend": "nous"}}, {"TOOL_GATEWAY_SCHEME": "ftp"}, auth(PAID)),
])
def test_the_report_is_the_answer_the_tools_act_on(config: dict[str, Any], env: dict[str, str],
                                                   doc: dict[str, Any] | None) -> None:
    env = {"PATH": ESPEAK_PATH, **env}
    creds = Credentials.from_sources(doc, env)
    report = build_report(config, env, creds, doc["providers"]["nous"] if doc else None, NOW).to_json()
    for name, found in resolve_all(config, env, creds).items():
        item = report["routes"][name]
        assert set(item) >= {"route", "vendor", "origin", "message"}
        if isinstance(found, SelectionError):
            assert item == {**item, "route": "error", "vendor": None, "origin": None, "message": str(found)}
            continue
        assert (item["vendor"], item["origin"], item["kind"]) == (found.vendor, found.origin, found.kind)
        if name == "stt":  # no tool of this installation uses it
            assert not item["ready"] and item["message"].startswith("not built yet")
            continue
        if name == "browser" and found.kind != "gateway":  # no Chromium on this PATH; Browserbase, Camofox unbuilt
            if found.vendor == "browser-use":
                assert item["ready"] and item["message"] == found.message
            else:
                local = found.kind == "local"
                assert not item["ready"] and item["message"].startswith("not available" if local else "not built yet")
            continue
        if found.kind == "gateway":
            try:
                check_entitlement(found, creds, now=NOW)
                assert item["message"] == "active via Nous subscription" and item["error"] is None
            except GatewayError as exc:
                assert item["error"] == str(exc)
        else:
            assert item["route"] == ("none" if found.kind == "none" else "byok") and item["message"] == found.message


def test_catalog_marks_the_relay_in_use() -> None:
    config = {"web": {"backend": "nous"}, "image_gen": {"provider": "nous", "model": "fal-ai/flux-2/klein/9b"},
              "tts": {"provider": "elevenlabs"}}
    creds = Credentials.from_sources(auth(PAID), {"ELEVENLABS_API_KEY": "e"})
    report = build_report(config, {"ELEVENLABS_API_KEY": "e"}, creds, None, NOW)
    rows = {(r["relay"], r["route_name"]): r for r in catalog_rows(report)}
    assert rows[("firecrawl", "web.search")]["state"] == "via Nous subscription"
    assert rows[("firecrawl", "web.search")]["origin"] == "https://firecrawl-gateway.nousresearch.com"
    assert rows[("fal-queue", "image_gen")]["in_use"] and not rows[("krea", "image_gen")]["in_use"]
    assert rows[("krea", "image_gen")]["state"] == "gateway via the fal-queue relay"
    assert rows[("openai-audio", "tts")]["state"] == "active via ElevenLabs key"


def hermes(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_KEY", "_URL"))}
    full.update({"HERMES_HOME": str(home), **(env or {})})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          timeout=60)


def test_info_json_and_tools_commands(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("web:\n  backend: nous\ntts:\n  provider: elevenlabs\n")
    (hermes_home / ".env").write_text("ELEVENLABS_API_KEY=el-secret-value-123\n")
    token = jwt({**PAID, "exp": 4_000_000_000})
    (hermes_home / "auth.json").write_text(json.dumps(auth(PAID, token=token)))
    os.chmod(hermes_home / "auth.json", 0o600)
    proc = hermes(hermes_home, "portal", "info", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"portal", "routes", "warnings", "model"}
    assert data["portal"]["status"] == "active" and data["portal"]["token_source"] == "auth.json"
    assert data["routes"]["web.search"] == {
        "name": "web.search", "route": "gateway", "kind": "gateway", "vendor": "firecrawl",
        "origin": "https://firecrawl-gateway.nousresearch.com", "message": "active via Nous subscription",
        "selected_by": "web.backend", "gateway_label": "firecrawl", "entitlement": "paid", "error": None,
        "ready": True, "missing": None}
    assert data["routes"]["tts"]["route"] == "byok" and data["routes"]["tts"]["vendor"] == "elevenlabs"
    assert token not in proc.stdout and "el-secret-value-123" not in proc.stdout
    text = hermes(hermes_home, "portal").stdout
    assert text.startswith("◆ Nous Tool Gateway\n  Nous Portal       ✓ managed tools available\n")
    tools = hermes(hermes_home, "portal", "tools")
    assert "  Firecrawl — web search and page extraction\n      web.search  ✓ via Nous subscription" in tools.stdout
    assert json.loads(hermes(hermes_home, "portal", "tools", "--json").stdout)["catalog"][0]["relay"] == "firecrawl"


def test_info_imports_no_network_or_terminal_libraries(hermes_home: Path) -> None:
    """``portal info`` stays fast: no httpx, prompt_toolkit or openai import, no refresh."""
    code = ("import sys; from hermes.cli.main import main; main(['portal', 'info']); "
            "print(sorted(m for m in ('httpx', 'prompt_toolkit', 'openai') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "HERMES_HOME": str(hermes_home)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("[]")


def test_a_paid_login_beside_a_free_env_token_shows_the_credential_that_decides() -> None:
    """One credential decides plan and token: TOOL_GATEWAY_USER_TOKEN is sent, so its free tier is shown."""
    lines = info({"image_gen": {"provider": "nous"}}, {"TOOL_GATEWAY_USER_TOKEN": jwt(FREE)}, auth(PAID))
    assert "  Nous Portal       ✓ free tool tier (TOOL_GATEWAY_USER_TOKEN) (covers fal, firecrawl)\n" in lines
