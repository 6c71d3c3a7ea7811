"""FAL video backend: Veo 3.1, Pixverse v6 and Kling 3.0 / O3 through FAL's queue (docs/tools/video.md).

Each model is a pair of FAL applications — text-to-video and image-to-video — chosen by whether the request
has an image. ``video_gen.model`` holds the pair's id (its text-to-video path, e.g. ``fal-ai/veo3.1``);
another valid FAL path is accepted too, with only ``prompt`` (and ``image_url``) sent.

The queue protocol is :class:`hermes.vendors.fal_queue.FalQueueClient`: the same on ``queue.fal.run`` with
``FAL_KEY`` and on the Tool Gateway's ``fal-queue`` relay with the portal token (both ``Authorization:
Key``). A job's handle is the four queue URLs, so any process can poll it. The result is
``{"video": {"url"}}``.
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
from hermes.vendors.base import Auth, VendorError
from hermes.vendors.fal_queue import FalQueueClient, QueueHandle, QueueStatus, valid_model_path

_VEO = Capabilities(modes=("text", "image"), aspect_ratios=("16:9", "9:16"), resolutions=("720p", "1080p"),
                    durations=(4, 6, 8), min_duration=4, max_duration=8, default_duration=8, audio=True,
                    audio_switch=True, negative_prompt=True, max_prompt_chars=4000)
_PIXVERSE = Capabilities(modes=("text", "image"), aspect_ratios=("16:9", "4:3", "1:1", "3:4", "9:16"),
                         resolutions=("360p", "540p", "720p", "1080p"), durations=(5, 8), min_duration=5,
                         max_duration=8, default_duration=5, audio=True, audio_switch=True, negative_prompt=True,
                         max_prompt_chars=2048)
_KLING = Capabilities(modes=("text", "image"), aspect_ratios=("16:9", "9:16", "1:1"), min_duration=3,
                      max_duration=15, default_duration=5, audio=True, audio_switch=True, negative_prompt=True,
                      max_prompt_chars=2500)
#: a FAL path this table does not know: prompt (and image) only
_GENERIC = Capabilities(modes=("text", "image"), min_duration=1, max_duration=60)


def _model(model_id: str, display: str, caps: Capabilities, price: float | None, *, image_path: str,
           duration: str, image_field: str = "image_url", audio_field: str = "generate_audio") -> ModelInfo:
    return ModelInfo(model_id, display, caps, price,
                     {"image_path": image_path, "duration": duration, "image_field": image_field,
                      "audio_field": audio_field})


MODELS: tuple[ModelInfo, ...] = (
    _model("fal-ai/veo3.1", "Veo 3.1 (Google)", _VEO, 0.40, image_path="fal-ai/veo3.1/image-to-video",
           duration="seconds_suffix"),
    _model("fal-ai/veo3.1/fast", "Veo 3.1 Fast (Google)", _VEO, 0.15,
           image_path="fal-ai/veo3.1/fast/image-to-video", duration="seconds_suffix"),
    _model("fal-ai/pixverse/v6/text-to-video", "Pixverse v6", _PIXVERSE, 0.09,
           image_path="fal-ai/pixverse/v6/image-to-video", duration="integer", audio_field="generate_audio_switch"),
    _model("fal-ai/kling-video/v3/pro/text-to-video", "Kling 3.0 Pro", _KLING, 0.14,
           image_path="fal-ai/kling-video/v3/pro/image-to-video", duration="string", image_field="start_image_url"),
    _model("fal-ai/kling-video/o3/pro/text-to-video", "Kling O3 Pro", _KLING, 0.14,
           image_path="fal-ai/kling-video/o3/pro/image-to-video", duration="string", image_field="start_image_url"),
)


def _duration_value(style: str, seconds: int) -> Any:
    if style == "seconds_suffix":
        return f"{seconds}s"
    if style == "string":
        return str(seconds)
    return seconds


def fal_arguments(model: ModelInfo, request: VideoRequest) -> tuple[str, dict[str, Any]]:
    """(FAL application path, arguments) for ``request`` on ``model``."""
    extra = model.extra
    path = str(extra.get("image_path") or model.id) if request.image_url is not None else model.id
    args: dict[str, Any] = {"prompt": request.prompt}
    if request.image_url is not None:
        args[str(extra.get("image_field", "image_url"))] = request.image_url
    if not extra:  # a path the table does not know: only what every FAL video app takes
        return path, args
    if request.duration is not None:
        args["duration"] = _duration_value(str(extra["duration"]), request.duration)
    if request.aspect_ratio is not None:
        args["aspect_ratio"] = request.aspect_ratio
    if request.resolution is not None:
        args["resolution"] = request.resolution
    if request.audio is not None:
        args[str(extra["audio_field"])] = request.audio
    if request.negative_prompt is not None:
        args["negative_prompt"] = request.negative_prompt
    if request.seed is not None:
        args["seed"] = request.seed
    return path, args


def _handle(data: Mapping[str, Any]) -> QueueHandle:
    try:
        return QueueHandle(*(str(data[k]) for k in ("request_id", "status_url", "response_url", "cancel_url")))
    except KeyError as exc:
        raise VendorError("FAL", f"the stored FAL job lacks {exc.args[0]!r}", kind="bad_response") from None


def video_url_of(result: Mapping[str, Any]) -> str | None:
    """``video.url`` of a FAL result (``videos[0].url`` for the apps that answer a list)."""
    video = result.get("video")
    if isinstance(video, Mapping) and isinstance(video.get("url"), str) and video["url"]:
        return str(video["url"])
    videos = result.get("videos")
    first = videos[0] if isinstance(videos, list) and videos else None
    if isinstance(first, Mapping) and isinstance(first.get("url"), str) and first["url"]:
        return str(first["url"])
    return None


def _last_log(state: QueueStatus) -> str | None:
    for entry in reversed(state.logs or []):
        if isinstance(entry, Mapping) and isinstance(entry.get("message"), str):
            return str(entry["message"])[:200]
    return None


class FalVideoBackend(VideoBackend):
    """FAL's queue (``queue.fal.run``), or the gateway's ``fal-queue`` relay."""

    name = "fal"
    display = "FAL"
    env = ("FAL_KEY",)
    api_origin = "https://queue.fal.run"
    default_model = "fal-ai/veo3.1"

    def models(self) -> tuple[ModelInfo, ...]:
        return MODELS

    def model(self, model_id: str) -> ModelInfo | None:
        known = super().model(model_id)
        if known is not None:
            return known
        if valid_model_path(model_id):
            return ModelInfo(model_id, model_id, _GENERIC)
        return None

    def _client(self, conn: Connection) -> FalQueueClient:
        return FalQueueClient(conn.http, conn.origin, Auth.key(conn.secret), allow_url=conn.allow_url)

    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        path, args = fal_arguments(model, request)
        handle = await self._client(conn).submit(path, args)
        return Submitted(handle.request_id, {"request_id": handle.request_id, "status_url": handle.status_url,
                                             "response_url": handle.response_url, "cancel_url": handle.cancel_url})

    async def poll(self, conn: Connection, handle: Mapping[str, Any]) -> Progress:
        client = self._client(conn)
        queue = _handle(handle)
        state = await client.status(queue)
        if state.status == "IN_QUEUE":
            return Progress("queued", queue_position=state.queue_position)
        if state.status == "IN_PROGRESS":
            return Progress("running", message=_last_log(state))
        if state.error is not None:
            return Progress("failed", error=state.error)
        try:
            result = await client.result(queue)
        except VendorError as exc:
            if exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 403, 408, 429):
                return Progress("failed", error=str(exc))
            raise
        url = video_url_of(result)
        if url is None:
            return Progress("failed", error="FAL finished without a video in its result")
        return Progress("done", video_url=url, extra={"seed": result.get("seed")} if "seed" in result else {})


BACKEND = FalVideoBackend()
