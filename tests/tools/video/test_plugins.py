"""A third-party video backend written into a temporary HERMES_HOME is found and used (REG-12, T-VGEN).

The plugin below is what docs/video-gen-plugins.md tells an outsider to write: a folder
``plugins/video_gen/acme/`` with ``BACKEND = AcmeBackend()``. It talks to the xAI video fake (any HTTP API
would do), with the key from its own variable and the origin from ``video_gen.acme.base_url``.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from hermes.config.settings import Settings
from hermes.plugins.video_gen.discovery import find_backends
from hermes.tools.registry import registry
from hermes.tools.session import SessionContext, ToolSession

PLUGIN = '''
"""Acme video: a third-party backend for hermes."""
from hermes.plugins.video_gen.base import (Capabilities, Connection, ModelInfo, Progress, Submitted,
                                           VideoBackend, VideoRequest)


class AcmeBackend(VideoBackend):
    name = "acme"
    display = "Acme Video"
    env = ("ACME_VIDEO_KEY",)
    api_origin = "https://video.acme.invalid"
    default_model = "acme-1"

    def models(self):
        caps = Capabilities(modes=("text",), aspect_ratios=("1:1",), min_duration=2, max_duration=3)
        return (ModelInfo("acme-1", "Acme One", caps, 0.5),)

    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        answer = await conn.http.post(conn.origin + "/v1/videos/generations",
                                      headers={"authorization": "Bearer " + conn.secret},
                                      json={"model": model.id, "prompt": request.prompt})
        answer.raise_for_status()
        job = answer.json()["request_id"]
        return Submitted(job, {"id": job})

    async def poll(self, conn: Connection, handle) -> Progress:
        answer = await conn.http.get(conn.origin + "/v1/videos/" + handle["id"],
                                     headers={"authorization": "Bearer " + conn.secret})
        body = answer.json()
        if body["status"] == "done":
            return Progress("done", video_url=body["video"]["url"])
        return Progress("running", percent=body.get("progress"))


BACKEND = AcmeBackend()
'''


def write_plugin(home: Path, name: str = "acme", text: str = PLUGIN) -> None:
    folder = home / "plugins" / "video_gen" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(text), encoding="utf-8")


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    registry.invalidate_checks()


def call(args: dict[str, Any]) -> dict[str, Any]:
    tools = ToolSession(registry, ["video_generate"], SessionContext.from_settings(Settings.load(), session_id="p1"))
    result = json.loads(tools.dispatch("video_generate", args).text)
    assert isinstance(result, dict)
    return result


def test_a_plugin_in_hermes_home_is_found_and_used(home: Path, fakes: dict[str, Any],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    write_plugin(home)
    configure(home, f"video_gen:\n  provider: acme\n  poll_seconds: 0.001\n  acme:\n    base_url: {fakes['xai_url']}\n")
    found = find_backends(home / "plugins")
    assert found.sources["acme"] == "plugin:acme" and {"fal", "xai"} <= set(found.names())
    ok, why = registry.availability("video_generate")
    assert not ok and why is not None and "ACME_VIDEO_KEY is not set" in why
    monkeypatch.setenv("ACME_VIDEO_KEY", "xai-test")  # the fake checks this bearer
    registry.invalidate_checks()
    assert "'duration' must be 2 to 3 seconds for acme-1, got 9" in call({"prompt": "x", "duration": 9})["error"]
    assert fakes["xai"].requests == []
    result = call({"prompt": "an anvil falls", "duration": 2})
    assert result["success"] and result["backend"] == "acme" and result["model"] == "acme-1", result
    assert result["via"] == "the acme plugin" and result["cost_estimate_usd"] == pytest.approx(1.0)
    assert Path(result["path"]).parent == home / "media" / "p1"
    assert fakes["xai"].submits()[0]["json"] == {"model": "acme-1", "prompt": "an anvil falls"}


def test_missing_and_broken_plugins_say_why(home: Path) -> None:
    configure(home, "video_gen:\n  provider: nosuch\n")
    ok, why = registry.availability("video_generate")
    assert not ok and why is not None and "no video backend plugin of that name is installed" in why
    write_plugin(home, "broken", "raise RuntimeError('the acme SDK is missing')\n")
    configure(home, "video_gen:\n  provider: broken\n")
    ok, why = registry.availability("video_generate")
    assert not ok and why is not None and "RuntimeError: the acme SDK is missing" in why


def test_a_plugin_cannot_take_a_built_in_name(home: Path) -> None:
    write_plugin(home, "fal", PLUGIN.replace('name = "acme"', 'name = "fal"'))
    found = find_backends(home / "plugins")
    assert found.sources["fal"] == "builtin"
    assert "already taken by builtin" in found.errors["plugin:fal"]


def test_an_entry_point_backend_is_found(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    (site / "acme_video").mkdir(parents=True)
    (site / "acme_video" / "__init__.py").write_text(
        textwrap.dedent(PLUGIN).replace('name = "acme"', 'name = "acme-ep"'), encoding="utf-8")
    info = site / "acme_video-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-video\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[hermes.video_gen]\nacme-ep = acme_video:AcmeBackend\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    (home / "plugins").mkdir()  # a new folder: the cached scan of an earlier test is not reused
    found = find_backends(home / "plugins")
    assert found.sources.get("acme-ep") == "entrypoint:acme-ep", found.errors
    assert found.get("acme-ep") is not None and found.get("acme-ep").display == "Acme Video"  # type: ignore[union-attr]
