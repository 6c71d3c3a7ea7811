"""xai_video_edit and xai_video_extend against the xAI video fake: input limits first, then the job (T-VIDEO)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from fakes.vendors.video import tiny_mp4
from hermes.tools.registry import registry
from hermes.tools.routed.media import mp4_duration


def configure(home: Path, fakes: dict[str, Any]) -> None:
    (home / "config.yaml").write_text(f"video_gen:\n  poll_seconds: 0.001\n  xai:\n    base_url: {fakes['xai_url']}\n",
                                      encoding="utf-8")
    registry.invalidate_checks()


def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(registry.dispatch(tool, args))
    assert isinstance(result, dict)
    return result


def clip(tmp_path: Path, seconds: float) -> str:
    path = tmp_path / f"clip-{seconds}.mp4"
    path.write_bytes(tiny_mp4(seconds))
    return str(path)


def test_mp4_length_is_read_from_its_header() -> None:
    assert mp4_duration(tiny_mp4(8.7)) == pytest.approx(8.7)
    assert mp4_duration(b"\x1a\x45\xdf\xa3 webm") is None


def test_without_key_the_tools_are_unavailable(home: Path) -> None:
    assert registry.availability("xai_video_edit") == (False, "missing XAI_API_KEY")


def test_edit_refuses_long_sources_before_sending(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    configure(home, fakes)
    error = call("xai_video_edit", {"prompt": "make it snow", "video_url": clip(tmp_path, 9.5)})["error"]
    assert error == "'video_url': xAI edits videos of at most 8.7 seconds; this one is 9.50 s"
    assert fakes["xai"].requests == []
    result = call("xai_video_edit", {"prompt": "make it snow", "video_url": clip(tmp_path, 5.0)})
    assert result["success"] and result["source_seconds"] == pytest.approx(5.0), result
    sent = fakes["xai"].submits()[0]
    assert sent["path"] == "/v1/videos/edits" and sent["json"]["model"] == "grok-imagine-video"
    assert base64.b64decode(sent["json"]["video"]["url"].split(",", 1)[1]) == tiny_mp4(5.0)


@pytest.mark.parametrize(("seconds", "added", "words"), [
    (1.0, 5, "xAI extends videos of 2 to 15 seconds; this one is 1.00 s"),
    (16.0, 5, "xAI extends videos of 2 to 15 seconds; this one is 16.00 s"),
    (6.0, 11, "'duration' must be at most 10"),
])
def test_extend_limits_are_checked_first(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path, seconds: float, added: int, words: str) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    configure(home, fakes)
    error = call("xai_video_extend", {"prompt": "keep going", "video_url": clip(tmp_path, seconds),
                                      "duration": added})["error"]
    assert words in error
    assert fakes["xai"].requests == []


def test_extend_runs_and_saves(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                               tmp_path: Path) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    configure(home, fakes)
    result = call("xai_video_extend", {"prompt": "the bird flies on", "video_url": clip(tmp_path, 4.0), "duration": 4})
    assert result["success"] and Path(result["path"]).parent == home / "media", result
    assert fakes["xai"].submits()[0]["path"] == "/v1/videos/extensions"
    assert fakes["xai"].submits()[0]["json"]["duration"] == 4
