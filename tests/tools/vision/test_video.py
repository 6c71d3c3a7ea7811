"""video_analyze: frames sampled with the real ffmpeg, sent to a scripted model (requirement T-VIS).

Tests that need ffmpeg (Debian package) are skipped when it is absent; the "ffmpeg missing" message is
checked with an empty PATH either way.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.vision.tool  # noqa: F401  (registers video_analyze)
from fakes.model_server import ScriptedModelServer, text
from hermes.tools.registry import registry
from hermes.tools.vision.frames import frame_times

FFMPEG = shutil.which("ffmpeg")
needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg is not installed (apt-get install ffmpeg)")


def configure(home: Path, url: str) -> None:
    (home / "config.yaml").write_text(f"model:\n  base_url: {url}\n  name: m\n  api_key: k\n  vision: true\n")


def watch(args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(registry.dispatch("video_analyze", args))
    assert isinstance(result, dict)
    return result


@pytest.fixture(scope="module")
def clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if FFMPEG is None:
        pytest.skip("ffmpeg is not installed")
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    subprocess.run([FFMPEG, "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc=duration=2:size=96x64:rate=10", "-c:v", "mpeg4", str(path)], check=True, timeout=60)
    return path


def test_frame_times() -> None:
    assert frame_times(2.0, 4) == [0.25, 0.75, 1.25, 1.75]
    assert frame_times(None, 3) == [0.0, 1.0, 2.0]


@needs_ffmpeg
def test_frames_are_sampled_and_sent(hermes_home: Path, model_server: Any, clip: Path) -> None:
    server: ScriptedModelServer = model_server([text("A test pattern.")], model="m")
    configure(hermes_home, server.url)
    result = watch({"video_url": str(clip), "question": "What is shown?", "frames": 3})
    assert result["success"] and result["analysis"] == "A test pattern." and result["frames"] == 3, result
    assert result["frame_times"] == pytest.approx([0.333, 1.0, 1.667], abs=0.01)
    assert result["video"]["format"] == "mp4" and result["video"]["duration_s"] == pytest.approx(2.0, abs=0.1)
    content = server.requests[0]["messages"][0]["content"]
    assert content[0]["type"] == "text" and content[0]["text"].startswith("What is shown?")
    assert "3 images are frames sampled from a 2.0-second video" in content[0]["text"]
    images = [part["image_url"]["url"] for part in content[1:]]
    assert len(images) == 3
    for uri in images:
        assert uri.startswith("data:image/jpeg;base64,")
        assert base64.b64decode(uri.split(",", 1)[1]).startswith(b"\xff\xd8")


@needs_ffmpeg
def test_a_data_uri_video_goes_through_a_temporary_file(hermes_home: Path, model_server: Any, clip: Path) -> None:
    server: ScriptedModelServer = model_server([text("ok")], model="m")
    configure(hermes_home, server.url)
    uri = "data:video/mp4;base64," + base64.b64encode(clip.read_bytes()).decode()
    assert watch({"video_url": uri, "question": "q", "frames": 1})["frames"] == 1


@needs_ffmpeg
def test_not_a_video(hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    server: ScriptedModelServer = model_server([], model="m")
    configure(hermes_home, server.url)
    path = tmp_path / "notes.mp4"
    path.write_text("hello")
    assert "is not a MP4, MOV, WebM/MKV, AVI or MPEG video" in watch({"video_url": str(path), "question": "q"})["error"]


def test_missing_ffmpeg_is_reported(hermes_home: Path, model_server: Any, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    server: ScriptedModelServer = model_server([], model="m")
    configure(hermes_home, server.url)
    monkeypatch.setenv("PATH", str(tmp_path))
    error = watch({"video_url": str(tmp_path / "x.mp4"), "question": "q"})["error"]
    assert error.startswith("video_analyze samples video frames locally with ffmpeg, which is not installed")
    assert "apt-get install ffmpeg" in error
