"""xAI Grok Imagine video backend: text and image to video, and the edit and extend jobs (docs/tools/video.md).

Speaks :class:`hermes.vendors.xai_video.XaiVideoClient` with ``XAI_API_KEY`` (``Authorization: Bearer``).
A job's handle is its request id. Status ``pending`` is running, ``done`` carries ``video.url``, ``failed``
and ``expired`` end the job.

Input limits of edit and extend (:data:`EDIT_MAX_INPUT_SECONDS`, :data:`EXTEND_INPUT_SECONDS`,
:data:`EXTEND_ADD_SECONDS`) are checked by the tools before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes.plugins.video_gen.base import (
    Capabilities,
    Connection,
    ModelInfo,
    Progress,
    Submitted,
    VideoBackend,
    VideoRequest,
)
from hermes.vendors.base import Auth
from hermes.vendors.xai_video import XaiVideoClient

DEFAULT_MODEL = "grok-imagine-video"
#: the longest source video an edit takes, in seconds
EDIT_MAX_INPUT_SECONDS = 8.7
#: the source length an extension takes, and the seconds it may add
EXTEND_INPUT_SECONDS = (2.0, 15.0)
EXTEND_ADD_SECONDS = (2, 10)

_GROK = Capabilities(modes=("text", "image"), aspect_ratios=("16:9", "9:16", "1:1", "4:3", "3:4", "3:2", "2:3"),
                     resolutions=("480p", "720p"), min_duration=1, max_duration=15, default_duration=6, audio=True,
                     audio_switch=False, max_prompt_chars=4096)

MODELS: tuple[ModelInfo, ...] = (ModelInfo(DEFAULT_MODEL, "Grok Imagine Video", _GROK, 0.05),)


def generation_body(model: ModelInfo, request: VideoRequest) -> dict[str, Any]:
    """The JSON of ``POST /v1/videos/generations`` for ``request``."""
    body: dict[str, Any] = {"model": model.id, "prompt": request.prompt}
    if request.duration is not None:
        body["duration"] = request.duration
    if request.aspect_ratio is not None:
        body["aspect_ratio"] = request.aspect_ratio
    if request.resolution is not None:
        body["resolution"] = request.resolution
    if request.image_url is not None:
        body["image"] = {"url": request.image_url}
    return body


class XaiVideoBackend(VideoBackend):
    """Grok Imagine on ``api.x.ai``."""

    name = "xai"
    display = "xAI Grok Imagine"
    env = ("XAI_API_KEY",)
    api_origin = "https://api.x.ai"
    default_model = DEFAULT_MODEL

    def models(self) -> tuple[ModelInfo, ...]:
        return MODELS

    def _client(self, conn: Connection) -> XaiVideoClient:
        return XaiVideoClient(conn.http, conn.origin, Auth.bearer(conn.secret), allow_url=conn.allow_url)

    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        request_id = await self._client(conn).generate(generation_body(model, request))
        return Submitted(request_id, {"request_id": request_id})

    async def submit_edit(self, conn: Connection, model: str, prompt: str, video_url: str) -> Submitted:
        """Start an edit of the video at ``video_url`` (an http(s) URL or a ``data:`` URI)."""
        request_id = await self._client(conn).edit({"model": model, "prompt": prompt, "video": {"url": video_url}})
        return Submitted(request_id, {"request_id": request_id})

    async def submit_extend(self, conn: Connection, model: str, prompt: str, video_url: str,
                            seconds: int) -> Submitted:
        """Start an extension adding ``seconds`` to the video at ``video_url``."""
        request_id = await self._client(conn).extend({"model": model, "prompt": prompt, "video": {"url": video_url},
                                                     "duration": seconds})
        return Submitted(request_id, {"request_id": request_id})

    async def poll(self, conn: Connection, handle: Mapping[str, Any]) -> Progress:
        state = await self._client(conn).status(str(handle.get("request_id", "")))
        if state.status == "done":
            if state.video_url is None:
                return Progress("failed", error="xAI finished without a video URL")
            return Progress("done", video_url=state.video_url,
                            extra={"duration": state.duration} if state.duration is not None else {})
        if state.status in ("failed", "expired"):
            return Progress("failed", error=state.error or f"xAI reported the request {state.status}")
        return Progress("running", percent=state.progress)


BACKEND = XaiVideoBackend()
