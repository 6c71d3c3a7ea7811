"""video_generate through our own gateway server's fal-queue relay (GW-1, T-VGEN).

The real gateway app (uvicorn on 127.0.0.1) sits in front of the FAL video fake with the operator's key;
hermes's ``video_generate`` is routed there by ``video_gen.provider: nous`` and a pinned
``FAL_QUEUE_GATEWAY_URL``. The portal token reaches the gateway only; the vendor sees the operator's key;
the queue URLs the tool polls are the relay's own; the result is saved like a BYOK one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import hermes.tools.video.tool  # noqa: F401  (registers video_generate)
from fakes.vendors import ServerThread
from fakes.vendors.harness import GatewayHarness
from fakes.vendors.video import FakeFalVideo
from hermes.tools.registry import registry

OPERATOR_KEY = "fal-operator-secret"
_ENV = ("FAL_KEY", "XAI_API_KEY", "TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_URL", "TOOL_GATEWAY_DOMAIN",
        "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeFalVideo, ServerThread]]:
    vendor = FakeFalVideo(key=OPERATOR_KEY)
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def gw(fake: tuple[FakeFalVideo, ServerThread], tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_fal_video"), limits={"backoff_base": 0.01},
                             **{"fal-queue.url": fake[1].url, "fal-queue.api_key": OPERATOR_KEY})
    with harness:
        harness.user("alice", "paid")
        harness.user("fred", "free")  # the default free plan covers FAL images, not video
        yield harness


def test_video_generate_through_the_gateway_relay(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                  gw: GatewayHarness, fake: tuple[FakeFalVideo, ServerThread]) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    token = gw.token("alice")
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    monkeypatch.setenv("FAL_QUEUE_GATEWAY_URL", gw.relay_url("fal-queue"))
    monkeypatch.setenv("FAL_KEY", "a-key-the-saved-selection-ignores")
    monkeypatch.setenv("HERMES_ALLOW_PRIVATE_URLS", "1")  # the fake vendors publish results on 127.0.0.1
    (hermes_home / "config.yaml").write_text("video_gen:\n  provider: nous\n  model: fal-ai/veo3.1\n"
                                             "  poll_seconds: 0.001\n", encoding="utf-8")
    registry.invalidate_checks()
    result = json.loads(registry.dispatch("video_generate", {"prompt": "a harbour at night", "duration": 4}))
    assert result.get("success") is True and result["route"] == "gateway", result
    assert result["via"] == "the Nous Tool Gateway (fal-queue relay)"
    assert Path(result["path"]).read_bytes()[4:8] == b"ftyp"
    seen = fake[0].requests
    assert seen[0]["path"] == "/fal-ai/veo3.1" and seen[0]["json"] == {"prompt": "a harbour at night",
                                                                       "duration": "4s"}
    assert all(r["headers"].get("authorization") in (f"Key {OPERATOR_KEY}", None) for r in seen)
    assert all(token not in str(r) for r in seen)
    assert sum(1 for r in seen if r["path"].endswith("/status")) >= 3
    user = gw.side.accounts.get_user("alice")
    rows = gw.usage_rows("SELECT operation, category, units FROM usage WHERE user_id = ? ORDER BY id",
                                (user.id,))
    ops = [(str(r[0]), str(r[1]), int(r[2])) for r in rows]
    assert ops[0] == ("submit", "fal-video", 1) and ops[-1] == ("result", "fal-video", 0)
    assert {category for _op, category, _units in ops} == {"fal-video"}


def test_video_models_are_authorised_and_metered_as_fal_video(gw: GatewayHarness,
                                                              fake: tuple[FakeFalVideo, ServerThread]) -> None:
    from hermes.toolgateway.relays.fal_queue import is_video_model

    assert is_video_model("fal-ai/veo3.1") and is_video_model("fal-ai/kling-video/v3/pro/text-to-video")
    assert is_video_model("fal-ai/pixverse/v6/image-to-video") and not is_video_model("fal-ai/flux-2/klein/9b")
    headers = {"authorization": f"Key {gw.token('fred')}"}
    video = httpx.post(f"{gw.relay_url('fal-queue')}/fal-ai/veo3.1", json={"prompt": "x"}, headers=headers, timeout=30)
    assert video.status_code == 403 and video.json()["code"] == "category_not_covered", video.text
    assert "fal-video" in video.json()["error"]
    image = httpx.post(f"{gw.relay_url('fal-queue')}/fal-ai/flux-2/klein/9b", json={"prompt": "x"}, headers=headers,
                       timeout=30)
    assert image.status_code == 200, image.text  # images stay covered by the free plan
