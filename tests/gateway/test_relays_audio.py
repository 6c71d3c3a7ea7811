"""The openai-audio relay over real HTTP: the gateway (create_app under uvicorn) in front of the OpenAI fake.

Speech and transcription are forwarded with the operator's key (the user's token stops at the gateway),
metered in characters (speech) and files (transcription), and refused past a free plan's allowance.
The end-to-end test drives our own ``text_to_speech`` tool through ``tts.provider: nous`` and a pinned
``OPENAI_AUDIO_GATEWAY_URL``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes.tools.audio.tool  # noqa: F401  (registers text_to_speech)
from fakes.vendors import ServerThread
from fakes.vendors.harness import GatewayHarness
from fakes.vendors.openai_audio import FAKE_AUDIO, FakeOpenAIAudio
from hermes.toolgateway.config import load_config
from hermes.toolgateway.storage.metering import month_period
from hermes.tools.registry import registry

OPERATOR_KEY = "sk-operator-secret"
LIMITS = {"backoff_base": 0.01, "vendor_retries": 2}
_ENV = ("OPENAI_API_KEY", "VOICE_TOOLS_OPENAI_KEY", "ELEVENLABS_API_KEY", "TOOL_GATEWAY_USER_TOKEN",
        "OPENAI_AUDIO_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_URL", "TOOL_GATEWAY_SCHEME")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeOpenAIAudio, ServerThread]]:
    vendor = FakeOpenAIAudio(key=OPERATOR_KEY, transcript="the gateway heard you")
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def gw(fake: tuple[FakeOpenAIAudio, ServerThread], tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_audio"), limits=LIMITS,
                             plans={"free": {"coverage": ["firecrawl", "fal", "openai-audio"],
                                             "monthly": {"firecrawl": 100, "fal": 25, "openai-audio": 20}}},
                             **{"openai-audio.url": fake[1].url, "openai-audio.api_key": OPERATOR_KEY})
    with harness:
        harness.user("alice", "paid")
        harness.user("fred", "free")
        harness.user("nina", "none")
        yield harness


def speech(gw: GatewayHarness, body: dict[str, Any], *, token: str, host_routed: bool = False) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}", "accept": "application/octet-stream"}
    if host_routed:
        headers["host"] = gw.relay_host("openai-audio")
        url = f"{gw.url}/v1/audio/speech"
    else:
        url = f"{gw.relay_url('openai-audio')}/v1/audio/speech"
    return httpx.post(url, json=body, headers=headers, timeout=30)


def transcribe(gw: GatewayHarness, token: str, fmt: str = "text", audio: bytes = FAKE_AUDIO["wav"]) -> httpx.Response:
    return httpx.post(f"{gw.relay_url('openai-audio')}/v1/audio/transcriptions",
                      headers={"authorization": f"Bearer {token}"},
                      data={"model": "whisper-1", "response_format": fmt, "user": "dropped"},
                      files={"file": ("note.wav", audio, "audio/wav")}, timeout=30)


def units(gw: GatewayHarness, name: str, operation: str) -> list[tuple[int, int]]:
    user = gw.side.accounts.get_user(name)
    rows = gw.usage_rows("SELECT units, status FROM usage WHERE user_id = ? AND operation = ? ORDER BY id",
                                (user.id, operation))
    return [(int(r[0]), int(r[1])) for r in rows]


def test_config_section() -> None:
    cfg = load_config(None, env={"OPENAI_API_KEY": "sk-env"}, home=Path("/nonexistent"))
    assert cfg.openai_audio.backend == "vendor" and cfg.openai_audio.api_key == "sk-env"
    assert cfg.openai_audio.url == "https://api.openai.com" and "sk-env" not in repr(cfg)
    off = load_config(None, env={}, home=Path("/nonexistent"))
    assert off.openai_audio.backend == "off" and off.fal_queue.backend == "off"


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_speech_is_forwarded_with_the_operator_key(gw: GatewayHarness, fake: tuple[FakeOpenAIAudio, ServerThread],
                                                   host_routed: bool) -> None:
    token = gw.token("alice")
    body = {"model": "gpt-4o-mini-tts", "voice": "alloy", "input": "hello there", "response_format": "wav",
            "speed": 1.25, "user": "not-forwarded"}
    resp = speech(gw, body, token=token, host_routed=host_routed)
    assert resp.status_code == 200, resp.text
    assert resp.content == FAKE_AUDIO["wav"] and resp.headers["content-type"].startswith("audio/wav")
    seen = fake[0].requests[-1]
    assert seen["path"] == "/v1/audio/speech"
    assert seen["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}"
    assert seen["json"] == {k: v for k, v in body.items() if k != "user"}
    assert token not in str(seen)
    assert units(gw, "alice", "speech")[-1] == (len("hello there"), 200)


def test_transcription_text_and_json(gw: GatewayHarness, fake: tuple[FakeOpenAIAudio, ServerThread]) -> None:
    token = gw.token("alice")
    resp = transcribe(gw, token, "text")
    assert resp.status_code == 200 and resp.text.strip() == "the gateway heard you"
    assert resp.headers["content-type"].startswith("text/plain")
    seen = fake[0].requests[-1]
    assert seen["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}" and token not in str(seen)
    assert fake[0].uploads[-1]["file"][1] == FAKE_AUDIO["wav"] and fake[0].uploads[-1]["file"][0] == "note.wav"
    assert "user" not in fake[0].uploads[-1]
    resp = transcribe(gw, token, "json")
    assert resp.status_code == 200 and resp.json() == {"text": "the gateway heard you"}
    assert units(gw, "alice", "transcription")[-2:] == [(1, 200), (1, 200)]


def test_bad_requests_and_vendor_errors(gw: GatewayHarness, fake: tuple[FakeOpenAIAudio, ServerThread]) -> None:
    token = gw.token("alice")
    assert speech(gw, {"model": "m", "voice": "alloy", "input": ""}, token=token).json()["code"] == "invalid_request"
    assert speech(gw, {"model": "m", "voice": "alloy", "input": "x", "response_format": "exe"},
                  token=token).status_code == 400
    resp = httpx.post(f"{gw.relay_url('openai-audio')}/v1/audio/transcriptions", content=b"raw",
                      headers={"authorization": f"Bearer {token}", "content-type": "audio/wav"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_request"
    fake[0].fail_next = [503]
    assert speech(gw, {"model": "m", "voice": "alloy", "input": "retried"}, token=token).status_code == 200
    fake[0].fail_next = [500] * 5
    resp = speech(gw, {"model": "m", "voice": "alloy", "input": "down"}, token=token)
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_error"
    fake[0].fail_next = []
    assert units(gw, "alice", "speech")[-1] == (0, 502)
    fake[0].key = "rotated"
    try:
        resp = speech(gw, {"model": "m", "voice": "alloy", "input": "auth"}, token=token)
    finally:
        fake[0].key = OPERATOR_KEY
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_auth_failed" and OPERATOR_KEY not in resp.text


def test_auth_coverage_and_free_quota(gw: GatewayHarness) -> None:
    body = {"model": "gpt-4o-mini-tts", "voice": "alloy", "input": "x" * 8}
    assert httpx.post(f"{gw.relay_url('openai-audio')}/v1/audio/speech", json=body).status_code == 401
    assert speech(gw, body, token=gw.token("nina")).status_code in (402, 403)
    fred = gw.token("fred")
    assert speech(gw, body, token=fred).status_code == 200  # 8 of 20 characters
    assert speech(gw, body, token=fred).status_code == 200  # 16 of 20
    over = speech(gw, body, token=fred)
    assert over.status_code == 429 and over.json()["code"] == "quota_exceeded" and int(over.headers["retry-after"]) > 0
    assert speech(gw, {**body, "input": "four"}, token=fred).status_code == 200  # exactly 20
    assert transcribe(gw, fred).status_code == 429
    user = gw.side.accounts.get_user("fred")
    assert gw.side.meter.used(user.id, "openai-audio", month_period(gw.side.clock())) == 20


# -- end to end through our own client -------------------------------------------------------------------
@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    registry.invalidate_checks()
    return hermes_home


def test_text_to_speech_tool_through_the_gateway(home: Path, monkeypatch: pytest.MonkeyPatch, gw: GatewayHarness,
                                                 fake: tuple[FakeOpenAIAudio, ServerThread]) -> None:
    token = gw.token("alice")
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    monkeypatch.setenv("OPENAI_AUDIO_GATEWAY_URL", gw.relay_url("openai-audio"))
    (home / "config.yaml").write_text("tts:\n  provider: nous\n", encoding="utf-8")
    registry.invalidate_checks()
    before = len(fake[0].requests)
    result = json.loads(registry.dispatch("text_to_speech", {"text": "through the gateway", "format": "wav"}))
    assert result.get("success") and result["route"] == "gateway" and result["format"] == "wav", result
    assert Path(result["path"]).read_bytes() == FAKE_AUDIO["wav"]
    seen = fake[0].requests[before:]
    assert len(seen) == 1 and seen[0]["json"]["input"] == "through the gateway"
    assert seen[0]["json"]["model"] == "gpt-4o-mini-tts"
    assert seen[0]["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}" and token not in str(seen[0])
    assert units(gw, "alice", "speech")[-1] == (len("through the gateway"), 200)
