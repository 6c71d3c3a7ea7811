"""OpenRouter video backend: its video API with the catalog and per-model limits fetched live.

The models and what each accepts (durations, aspect ratios, resolutions, first-frame images, audio) come
from ``GET /api/v1/videos/models`` (:meth:`OpenRouterVideoBackend.fetch_models`), cached by the tool under
``HERMES_HOME/cache/video_models/openrouter.json``; nothing here is a hard-coded model table. A job's
handle is its id; the result is downloaded from the signed ``urls[0]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes.plugins.video_gen.base import (
    Capabilities,
    Connection,
    Mode,
    ModelInfo,
    Progress,
    Submitted,
    VideoBackend,
    VideoRequest,
)
from hermes.vendors.base import Auth
from hermes.vendors.openrouter_video import OpenRouterVideoClient

_TERMINAL_FAILURES = ("failed", "cancelled", "expired")


def _strings(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def model_of(entry: Mapping[str, Any]) -> ModelInfo | None:
    """A catalog entry as a :class:`ModelInfo` (None when it has no id)."""
    model_id = entry.get("id")
    if not isinstance(model_id, str) or not model_id:
        return None
    durations = tuple(sorted(d for d in entry.get("supported_durations") or [] if isinstance(d, int)
                             and not isinstance(d, bool) and d > 0))
    modes: tuple[Mode, ...] = ("text", "image") if "first_frame" in _strings(entry.get("supported_frame_images")) \
        else ("text",)
    audio = entry.get("generate_audio") is True
    caps = Capabilities(modes=modes, aspect_ratios=_strings(entry.get("supported_aspect_ratios")),
                        resolutions=_strings(entry.get("supported_resolutions")), durations=durations,
                        min_duration=durations[0] if durations else 1, max_duration=durations[-1] if durations else 20,
                        default_duration=durations[0] if durations else None, audio=audio, audio_switch=audio)
    name = entry.get("name")
    return ModelInfo(model_id, name if isinstance(name, str) and name else model_id, caps, None,
                     {"seed": entry.get("seed") is not None})


class OpenRouterVideoBackend(VideoBackend):
    """OpenRouter's ``/api/v1/videos``."""

    name = "openrouter"
    display = "OpenRouter"
    env = ("OPENROUTER_API_KEY",)
    api_origin = "https://openrouter.ai/api"
    default_model = "google/veo-3.1"
    live_catalog = True

    def models(self) -> tuple[ModelInfo, ...]:
        return ()

    def _client(self, conn: Connection) -> OpenRouterVideoClient:
        return OpenRouterVideoClient(conn.http, conn.origin, Auth.bearer(conn.secret), allow_url=conn.allow_url)

    async def fetch_models(self, conn: Connection) -> tuple[ModelInfo, ...]:
        found = (model_of(entry) for entry in await self._client(conn).models())
        return tuple(m for m in found if m is not None)

    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        body: dict[str, Any] = {"model": model.id, "prompt": request.prompt}
        for key, value in (("duration", request.duration), ("resolution", request.resolution),
                           ("aspect_ratio", request.aspect_ratio), ("generate_audio", request.audio),
                           ("seed", request.seed)):
            if value is not None:
                body[key] = value
        if request.image_url is not None:
            body["frame_images"] = [{"type": "image_url", "image_url": {"url": request.image_url},
                                     "frame_type": "first_frame"}]
        job_id = await self._client(conn).submit(body)
        return Submitted(job_id, {"id": job_id})

    async def poll(self, conn: Connection, handle: Mapping[str, Any]) -> Progress:
        state = await self._client(conn).status(str(handle.get("id", "")))
        if state.status == "completed":
            if state.url is None:
                return Progress("failed", error="OpenRouter finished without a signed download URL (urls)")
            return Progress("done", video_url=state.url)
        if state.status in _TERMINAL_FAILURES:
            return Progress("failed", error=state.error or f"OpenRouter reported the job {state.status}")
        return Progress("queued" if state.status in ("pending", "queued") else "running", percent=state.progress)


BACKEND = OpenRouterVideoBackend()
