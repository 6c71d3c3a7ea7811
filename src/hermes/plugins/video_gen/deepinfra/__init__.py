"""DeepInfra video backend: the OpenAI-compatible ``/v1/openai/videos`` endpoint, models from its live list.

The catalog is DeepInfra's model list filtered to video models (:meth:`DeepInfraVideoBackend.fetch_models`,
cached by the tool). The list carries no per-model limits, so every model gets the same conservative ones
(:data:`LIMITS`: text-to-video, 1–10 seconds, 16:9 / 9:16 / 1:1); the vendor's own answer decides the rest.
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
from hermes.vendors.deepinfra_video import DeepInfraVideoClient, DeepInfraVideoStatus

LIMITS = Capabilities(modes=("text",), aspect_ratios=("16:9", "9:16", "1:1"), min_duration=1, max_duration=10,
                      default_duration=5, negative_prompt=True, max_prompt_chars=4000)


def _progress(state: DeepInfraVideoStatus) -> Progress:
    if state.status in ("succeeded", "completed"):
        if state.url is None:
            return Progress("failed", error="DeepInfra finished without a video URL")
        return Progress("done", video_url=state.url)
    if state.status in ("failed", "cancelled", "expired"):
        return Progress("failed", error=state.error or f"DeepInfra reported the job {state.status}")
    return Progress("queued" if state.status in ("queued", "pending") else "running")


class DeepInfraVideoBackend(VideoBackend):
    """DeepInfra's OpenAI-compatible videos endpoint."""

    name = "deepinfra"
    display = "DeepInfra"
    env = ("DEEPINFRA_API_KEY",)
    api_origin = "https://api.deepinfra.com"
    default_model = "Pixverse/Pixverse-T2V"
    live_catalog = True

    def models(self) -> tuple[ModelInfo, ...]:
        return ()

    def _client(self, conn: Connection) -> DeepInfraVideoClient:
        return DeepInfraVideoClient(conn.http, conn.origin, Auth.bearer(conn.secret), allow_url=conn.allow_url)

    async def fetch_models(self, conn: Connection) -> tuple[ModelInfo, ...]:
        out: list[ModelInfo] = []
        for entry in await self._client(conn).video_models():
            name = entry.get("model_name")
            if isinstance(name, str) and name:
                out.append(ModelInfo(name, name, LIMITS, None))
        return tuple(out)

    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        body: dict[str, Any] = {"model": model.id, "prompt": request.prompt}
        for key, value in (("seconds", request.duration), ("aspect_ratio", request.aspect_ratio),
                           ("seed", request.seed), ("negative_prompt", request.negative_prompt)):
            if value is not None:
                body[key] = value
        job_id, _first = await self._client(conn).submit(body)
        return Submitted(job_id, {"id": job_id})

    async def poll(self, conn: Connection, handle: Mapping[str, Any]) -> Progress:
        return _progress(await self._client(conn).status(str(handle.get("id", ""))))


BACKEND = DeepInfraVideoBackend()
