"""The DeepInfra backend against a fake of its OpenAI-compatible videos endpoint and model list (T-VGEN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fakes.vendors.video import FakeDeepInfraVideo
from hermes.config.settings import Settings
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

FAKE = (FakeDeepInfraVideo, "deepinfra", "DEEPINFRA_API_KEY", "")


def call(args: dict[str, Any]) -> dict[str, Any]:
    tools = ToolSession(registry, ["video_generate"], SessionContext.from_settings(Settings.load(), session_id="di"))
    result = json.loads(tools.dispatch("video_generate", args).text)
    assert isinstance(result, dict)
    return result


def test_live_list_then_submit_poll_and_relative_download(home: Path, fake: FakeDeepInfraVideo) -> None:
    assert "does only text-to-video" in call({"prompt": "x", "image_url": "https://example.com/a.png"})["error"]
    assert fake.submits() == [] and [r["path"] for r in fake.requests] == ["/models/list"]
    cached = json.loads((home / "cache" / "video_models" / "deepinfra.json").read_text())
    assert [m["id"] for m in cached["models"]] == ["Pixverse/Pixverse-T2V", "Wan-AI/Wan2.6-T2V"]
    result = call({"prompt": "a bicycle in the rain", "duration": 8, "aspect_ratio": "16:9", "seed": 42})
    assert result["success"] and result["backend"] == "deepinfra", result
    assert fake.submits()[0]["path"] == "/v1/openai/videos"
    assert fake.submits()[0]["json"] == {"model": "Pixverse/Pixverse-T2V", "prompt": "a bicycle in the rain",
                                         "seconds": 8, "aspect_ratio": "16:9", "seed": 42}
    download = [r for r in fake.requests if r["path"].startswith("/generated/")]
    assert download and "authorization" not in download[0]["headers"]
    assert Path(result["path"]).read_bytes()[4:8] == b"ftyp"


def test_failure_is_reported(home: Path, fake: FakeDeepInfraVideo) -> None:
    fake.fail_with = "NSFW content detected"
    assert "failed on DeepInfra: NSFW content detected" in call({"prompt": "x"})["error"]
