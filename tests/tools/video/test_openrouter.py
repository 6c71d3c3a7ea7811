"""The OpenRouter backend against a fake of its documented video API: the catalog read live (and cached),
per-model limits from it, submit, poll with progress, download from the signed URL (T-VGEN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.vendors.video import FakeOpenRouterVideo
from hermes.config.settings import Settings
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

FAKE = (FakeOpenRouterVideo, "openrouter", "OPENROUTER_API_KEY", "/v1")


def tools() -> ToolSession:
    return ToolSession(registry, ["video_generate"], SessionContext.from_settings(Settings.load(), session_id="or"))


def call(args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(tools().dispatch("video_generate", args).text)
    assert isinstance(result, dict)
    return result


def test_catalog_is_read_live_before_the_paid_call_and_limits_come_from_it(home: Path,
                                                                          fake: FakeOpenRouterVideo) -> None:
    error = call({"prompt": "x", "duration": 5})["error"]
    assert error == "'duration' must be 4, 6, 8 seconds for google/veo-3.1, got 5"
    assert [r["path"] for r in fake.requests] == ["/v1/videos/models"]  # the catalog only: nothing paid
    cached = json.loads((home / "cache" / "video_models" / "openrouter.json").read_text())
    assert [m["id"] for m in cached["models"]] == ["google/veo-3.1", "alibaba/wan-2.6"]
    # the next session's description comes from the cached catalog, offline
    described = next(d["function"] for d in tools().definitions() if d["function"]["name"] == "video_generate")
    assert "OpenRouter, model Veo 3.1 (google/veo-3.1)" in described["description"]
    assert described["parameters"]["properties"]["duration"]["enum"] == [4, 6, 8]


def test_generate_with_a_first_frame(home: Path, fake: FakeOpenRouterVideo) -> None:
    result = call({"prompt": "a kite", "image_url": "https://example.com/kite.png", "duration": 6,
                   "resolution": "1080p", "audio": True})
    assert result["success"] and result["backend"] == "openrouter", result
    submit = fake.submits()[0]
    assert submit["headers"]["authorization"] == "Bearer or-test"
    assert submit["json"] == {"model": "google/veo-3.1", "prompt": "a kite", "duration": 6, "resolution": "1080p",
                              "generate_audio": True, "frame_images": [
                                  {"type": "image_url", "image_url": {"url": "https://example.com/kite.png"},
                                   "frame_type": "first_frame"}]}
    download = [r for r in fake.requests if r["path"].startswith("/files/")]
    assert download and "authorization" not in download[0]["headers"]
    assert Path(result["path"]).parent == home / "media" / "or"


def test_a_model_without_frames_refuses_images_and_failures_are_reported(home: Path,
                                                                         fake: FakeOpenRouterVideo) -> None:
    (home / "config.yaml").write_text((home / "config.yaml").read_text() + "  model: alibaba/wan-2.6\n")
    registry.invalidate_checks()
    error = call({"prompt": "x", "image_url": "https://example.com/a.png"})["error"]
    assert "alibaba/wan-2.6 does only text-to-video" in error and fake.submits() == []
    fake.fail_with = "provider rejected the prompt"
    assert "failed on OpenRouter: provider rejected the prompt" in call({"prompt": "x"})["error"]
    (home / "config.yaml").write_text((home / "config.yaml").read_text().replace("alibaba/wan-2.6", "no/such"))
    registry.invalidate_checks()
    assert "which OpenRouter's catalog does not list" in call({"prompt": "x"})["error"]


def test_hermes_video_models_fetches_and_caches_the_live_catalog(home: Path, fake: FakeOpenRouterVideo) -> None:
    import os
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "hermes", "video", "models", "openrouter", "--json"],
                         env=dict(os.environ), capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    listed = json.loads(run.stdout)
    assert [m["id"] for m in listed] == ["google/veo-3.1", "alibaba/wan-2.6"]
    assert listed[1]["capabilities"]["modes"] == ["text"] and listed[1]["capabilities"]["durations"] == [5, 10]
    assert (home / "cache" / "video_models" / "openrouter.json").exists()
    assert [r["path"] for r in fake.requests] == ["/v1/videos/models"]


DOWN, ENTER = "\x1b[B", "\r"


def test_the_tools_picker_guides_backend_and_model_from_the_live_catalog(home: Path, fake: FakeOpenRouterVideo,
                                                                         pipe: Any) -> None:
    from prompt_toolkit.output import DummyOutput

    from hermes.cli.tools import run_picker

    # Video generation (6th) → OpenRouter (4th; its key is set) → the live catalog's 2nd model → Done (7th)
    pipe.send_text("6" + ENTER + "4" + ENTER + DOWN + ENTER + "7" + ENTER)
    out: list[str] = []
    run_picker(Settings.load(), out.append, input=pipe, output=DummyOutput())
    text = (home / "config.yaml").read_text()
    assert "provider: openrouter" in text and "model: alibaba/wan-2.6" in text, (text, out)
    assert "Video generation model → alibaba/wan-2.6" in out
    assert any("opt-in" in line for line in out)
    assert [r["path"] for r in fake.requests] == ["/v1/videos/models"]


def test_the_picker_asks_the_fal_key_then_offers_the_fal_models(home: Path, fake: FakeOpenRouterVideo, pipe: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from prompt_toolkit.output import DummyOutput

    from hermes.cli.tools import run_picker

    monkeypatch.delenv("FAL_KEY", raising=False)
    # Video generation → FAL (2nd) → FAL_KEY typed → Kling 3.0 Pro (4th in FAL's table) → Done
    pipe.send_text("6" + ENTER + "2" + ENTER + "fal-secret-1" + ENTER + "4" + ENTER + "7" + ENTER)
    out: list[str] = []
    run_picker(Settings.load(), out.append, input=pipe, output=DummyOutput())
    text = (home / "config.yaml").read_text()
    assert "provider: fal" in text and "model: fal-ai/kling-video/v3/pro/text-to-video" in text, (text, out)
    assert "FAL_KEY=fal-secret-1" in (home / ".env").read_text()
    assert not any("fal-secret-1" in line for line in out)
