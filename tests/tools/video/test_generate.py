"""video_generate end to end against the FAL and xAI video fakes on 127.0.0.1 (T-VGEN, GW-3).

Calls go through a real ToolSession (``SessionContext`` with settings, a session id and a recording sink),
so the session-start description, the progress events and the session's media folder are the real ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fakes.vendors.fal import tiny_png
from hermes.config.settings import Settings
from hermes.store.video_jobs import VideoJobStore
from hermes.tools.progress import ToolProgress
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

HINT = "Run 'hermes tools' to change it."


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    registry.invalidate_checks()


def fast(extra: str = "") -> str:
    """video_gen keys for fast polling (under ``video_gen:``)."""
    return f"  poll_seconds: 0.001\n{extra}"


class Events:
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def emit(self, event: Any) -> None:
        self.seen.append(event)

    def ask(self, request: Any) -> None:
        return None

    def progress(self) -> list[str]:
        return [e.message for e in self.seen if isinstance(e, ToolProgress)]


def session(sink: Events | None = None, session_id: str = "sess-1") -> ToolSession:
    settings = Settings.load()
    return ToolSession(registry, ["video_generate", "xai_video_edit", "xai_video_extend"],
                       SessionContext.from_settings(settings, session_id=session_id, sink=sink or Events()))


def call(args: dict[str, Any], sink: Events | None = None, tool: str = "video_generate") -> dict[str, Any]:
    result = json.loads(session(sink).dispatch(tool, args).text)
    assert isinstance(result, dict)
    return result


def described(tool: str = "video_generate") -> dict[str, Any]:
    found = [d["function"] for d in session().definitions() if d["function"]["name"] == tool]
    assert found, f"{tool} is not offered"
    return found[0]


def fal_config(home: Path, fakes: dict[str, Any], model: str = "fal-ai/veo3.1", extra: str = "") -> None:
    configure(home, f"video_gen:\n  provider: fal\n  model: {model}\n{fast(extra)}"
                    f"  fal:\n    base_url: {fakes['fal_url']}\n")


def test_fal_text_to_video_queue_progress_file_and_metadata(home: Path, fakes: dict[str, Any],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes)
    events = Events()
    result = call({"prompt": "a lighthouse at dusk", "duration": 8, "aspect_ratio": "16:9", "audio": True}, events)
    assert result["success"] is True, result
    path = Path(result["path"])
    assert path.parent == home / "media" / "sess-1" and path.read_bytes()[4:8] == b"ftyp"
    assert result["duration_seconds"] == pytest.approx(4.0) and result["mode"] == "text"
    meta = json.loads(Path(result["metadata_path"]).read_text())
    assert meta["backend"] == "fal" and meta["model"] == "fal-ai/veo3.1" and meta["session_id"] == "sess-1"
    assert meta["cost_estimate_usd"] == pytest.approx(3.2) and meta["vendor_job_id"].startswith("vreq-")
    submit = fakes["fal"].submits()
    assert len(submit) == 1 and submit[0]["path"] == "/fal-ai/veo3.1"
    assert submit[0]["json"] == {"prompt": "a lighthouse at dusk", "duration": "8s", "aspect_ratio": "16:9",
                                 "generate_audio": True}
    messages = events.progress()
    assert any("position 2" in m for m in messages) and any("position 1" in m for m in messages)
    assert any("rendering: rendering frames" in m for m in messages)
    download = [r for r in fakes["fal"].requests if r["path"].startswith("/files/")]
    assert download and "authorization" not in download[0]["headers"]
    with VideoJobStore.in_home(home) as store:
        job = store.recent()[0]
    assert job.state == "done" and job.result_path == str(path) and job.polls >= 3


def test_image_url_picks_the_image_to_video_app(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes, "fal-ai/kling-video/v3/pro/text-to-video")
    assert call({"prompt": "wave", "image_url": "https://example.com/cat.png", "duration": 10})["success"]
    sent = fakes["fal"].submits()[-1]
    assert sent["path"] == "/fal-ai/kling-video/v3/pro/image-to-video"
    assert sent["json"] == {"prompt": "wave", "start_image_url": "https://example.com/cat.png", "duration": "10"}
    picture = tmp_path / "cat.png"
    picture.write_bytes(tiny_png(4, 4))
    assert call({"prompt": "blink", "image_url": str(picture)})["mode"] == "image"
    assert fakes["fal"].submits()[-1]["json"]["start_image_url"].startswith("data:image/png;base64,")


@pytest.mark.parametrize(("args", "words"), [
    ({"prompt": "x", "duration": 5}, "'duration' must be 4, 6, 8 seconds for fal-ai/veo3.1, got 5"),
    ({"prompt": "x", "aspect_ratio": "4:3"}, "'aspect_ratio' must be one of 16:9, 9:16 for fal-ai/veo3.1"),
    ({"prompt": "x", "resolution": "4k"}, "'resolution' must be one of 720p, 1080p"),
    ({"prompt": "x", "reference_image_urls": ["https://example.com/a.png"]}, "takes no reference images"),
    ({"prompt": "x", "model": "fal-ai/kling-video/v3/pro/text-to-video"}, "model"),
])
def test_limits_are_refused_before_any_paid_call(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                 args: dict[str, Any], words: str) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes)
    error = call(args)["error"]
    assert words in error
    assert fakes["fal"].requests == []


def test_vendor_failure_is_reported_and_stored(home: Path, fakes: dict[str, Any],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes)
    fakes["fal"].fail_with = "content policy: the prompt was refused"
    error = call({"prompt": "x"})["error"]
    assert "failed on FAL: content policy: the prompt was refused" in error
    with VideoJobStore.in_home(home) as store:
        assert store.recent()[0].state == "failed"


def test_missing_key_is_the_gw3_message(home: Path) -> None:
    configure(home, "video_gen:\n  provider: fal\n")
    assert call({"prompt": "x"}) == {"error": "tool 'video_generate' is not enabled in this session. Available "
                                              "tools: none"}
    assert registry.availability("video_generate") == (
        False, f"video_gen is configured to use fal (set via hermes tools), but FAL_KEY is not set. {HINT}")


def test_unknown_model_names_the_backend_models(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    configure(home, "video_gen:\n  provider: xai\n  model: fal-ai/veo3.1\n")
    ok, why = registry.availability("video_generate")
    assert not ok and why is not None
    assert "video_gen.model is set to 'fal-ai/veo3.1', which xAI Grok Imagine does not have" in why
    assert "grok-imagine-video" in why


def test_xai_generation_body_and_limits(home: Path, fakes: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    configure(home, f"video_gen:\n  provider: xai\n{fast()}  xai:\n    base_url: {fakes['xai_url']}\n")
    assert "'resolution' must be one of 480p, 720p" in call({"prompt": "x", "resolution": "1080p"})["error"]
    assert "cannot turn sound off" in call({"prompt": "x", "audio": False})["error"]
    assert fakes["xai"].requests == []
    result = call({"prompt": "a fox", "image_url": "https://example.com/fox.jpg", "duration": 12,
                   "aspect_ratio": "9:16", "resolution": "720p"})
    assert result["success"] and result["backend"] == "xai" and result["model"] == "grok-imagine-video", result
    body = fakes["xai"].submits()[0]
    assert body["path"] == "/v1/videos/generations" and body["headers"]["authorization"] == "Bearer xai-test"
    assert body["json"] == {"model": "grok-imagine-video", "prompt": "a fox", "duration": 12, "aspect_ratio": "9:16",
                            "resolution": "720p", "image": {"url": "https://example.com/fox.jpg"}}


def test_description_is_rebuilt_per_backend_and_model(home: Path, fakes: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    monkeypatch.setenv("XAI_API_KEY", "xai-test")
    fal_config(home, fakes)
    veo = described()
    props = veo["parameters"]["properties"]
    assert "Active: FAL, model Veo 3.1 (Google) (fal-ai/veo3.1)" in veo["description"]
    assert "Duration: 4, 6, 8 seconds" in veo["description"] and "audio: true/false" in veo["description"]
    assert props["duration"]["enum"] == [4, 6, 8] and props["aspect_ratio"]["enum"] == ["16:9", "9:16"]
    assert "reference_image_urls" not in props and "image_url" in props
    fal_config(home, fakes, "fal-ai/kling-video/v3/pro/text-to-video")
    kling = described()["parameters"]["properties"]
    assert "resolution" not in kling and kling["duration"]["minimum"] == 3 and kling["duration"]["maximum"] == 15
    configure(home, "video_gen:\n  provider: xai\n")
    grok = described()
    assert "xAI Grok Imagine" in grok["description"] and "Makes sound (always on)" in grok["description"]
    assert "audio" not in grok["parameters"]["properties"] and "negative_prompt" not in grok["parameters"]["properties"]
    assert grok["parameters"]["properties"]["resolution"]["enum"] == ["480p", "720p"]


def test_pending_answer_then_the_same_call_resumes_and_pays_once(home: Path, fakes: dict[str, Any],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes, extra="  wait_seconds: 0\n")
    fakes["fal"].hold = True
    first = call({"prompt": "slow render"})
    assert first["status"] == "pending" and first["queue_position"] == 5, first
    fakes["fal"].hold = False
    fal_config(home, fakes)
    events = Events()
    second = call({"prompt": "slow render"}, events)
    assert second["success"] and second["job_id"] == first["job_id"], second
    assert len(fakes["fal"].submits()) == 1
    assert any("resuming job" in m for m in events.progress())
    third = call({"prompt": "slow render"})  # a finished job is not reused: a new call is a new video
    assert third["job_id"] != first["job_id"] and len(fakes["fal"].submits()) == 2


def test_status_lines_tell_the_truth(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.routing.report import load_report

    def line() -> Any:
        settings = Settings.load()
        return load_report(settings.paths.auth, settings.config.data, settings.env.as_dict()).routes["video_gen"]

    configure(home, "")
    assert not line().ready and line().message == "not configured"
    monkeypatch.setenv("FAL_KEY", "fal-test")
    assert line().ready and line().message == "active via FAL key; opt-in: not enabled (hermes tools enable video_gen)"
    configure(home, "toolsets: [hermes-cli, video_gen]\n")
    assert line().message == "active via FAL key"
    configure(home, "toolsets: [hermes-cli, video_gen]\nvideo_gen:\n  provider: acme\n")
    assert line().message == "acme plugin backend (selected)"
    assert registry.availability("video_generate")[0] is False  # the plugin is not installed: the tool says so


def test_video_toolsets_are_opt_in() -> None:
    from hermes.tools.toolsets import Surface, resolve_toolsets

    default = resolve_toolsets(Surface.CLI, None)
    assert not {"video_generate", "xai_video_edit", "xai_video_extend"} & set(default.tools)
    assert "video_generate" in resolve_toolsets(Surface.CLI, ["hermes-cli", "video_gen"]).tools
    both = resolve_toolsets(Surface.CLI, ["hermes-cli", "video"]).tools
    assert {"video_generate", "xai_video_edit", "xai_video_extend"} <= set(both)


def test_an_interrupted_turn_stops_waiting_but_keeps_the_job(home: Path, fakes: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes)  # wait_seconds stays 600: only the interruption ends the wait
    fakes["fal"].hold = True
    picture = tmp_path / "boat.png"
    picture.write_bytes(tiny_png(3, 3))
    tools = ToolSession(registry, ["video_generate"],
                        SessionContext.from_settings(Settings.load(), session_id="s2", cancelled=lambda: True))
    result = json.loads(tools.dispatch("video_generate", {"prompt": "sail", "image_url": str(picture)}).text)
    assert result["status"] == "pending", result
    with VideoJobStore.in_home(home) as store:
        job = store.get(result["job_id"])
    assert job.state == "queued" and job.request["image_url"].startswith(f"{picture} sha256:")
    assert "base64" not in json.dumps(job.request)  # the inlined file is sent, never stored


def test_a_job_left_submitting_is_closed_with_a_warning(home: Path, fakes: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.plugins.video_gen.base import VideoRequest

    monkeypatch.setenv("FAL_KEY", "fal-test")
    fal_config(home, fakes)
    request = VideoRequest(prompt="lost")
    with VideoJobStore.in_home(home) as store:  # what a process killed inside submit() leaves behind
        lost = store.create(fingerprint=request.fingerprint("fal", "fal-ai/veo3.1", "generate", "byok"),
                            kind="generate", backend="fal", route="byok", model="fal-ai/veo3.1",
                            request=request.to_data(), cost_estimate=None, session_id=None)
    assert call({"prompt": "lost"})["success"]
    with VideoJobStore.in_home(home) as store:
        closed = store.get(lost.id)
    assert closed.state == "failed" and "may have started (and billed) it" in (closed.error or "")
    assert len(fakes["fal"].submits()) == 1
