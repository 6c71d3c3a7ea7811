"""Thin typed async HTTP clients, one per vendor protocol.

Every client is built from ``(http, origin, auth)`` — an ``httpx.AsyncClient``, the base URL and the
credential header — so a BYOK call (the vendor's own API and the user's key) and a managed call (a Tool
Gateway relay and the portal token) differ only in those two values. The clients hold no tool logic:
the gateway server's relays use them towards the real vendors too.

* :mod:`~hermes.vendors.base` — :class:`Auth`, :class:`VendorError`, URL guards, ``send`` (retries and
  size caps through :mod:`hermes.net.http`) and ``JsonApiClient``, the base of every HTTP client here;
* :mod:`~hermes.vendors.fal_queue` — FAL's queue (submit, status, result);
* :mod:`~hermes.vendors.krea` — Krea 2 image jobs;
* :mod:`~hermes.vendors.openai_images` — OpenAI Images (also the portal's own image API);
* :mod:`~hermes.vendors.openai_audio` — OpenAI speech and transcriptions;
* :mod:`~hermes.vendors.elevenlabs` — ElevenLabs speech;
* :mod:`~hermes.vendors.xai` — xAI Responses with the ``x_search`` tool;
* :mod:`~hermes.vendors.gateway_uploads` — media uploads to the gateway's shared origin.
"""

from __future__ import annotations

from hermes.vendors.base import (
    NO_RETRY,
    Auth,
    RetryPolicy,
    VendorError,
    VendorResponse,
    api_root,
    download,
    new_client,
    same_origin,
    send,
)
from hermes.vendors.elevenlabs import ElevenLabsClient, elevenlabs_auth
from hermes.vendors.fal_queue import FalQueueClient, QueueHandle, QueueStatus
from hermes.vendors.gateway_uploads import GatewayUploadsClient
from hermes.vendors.krea import KreaClient, KreaJob
from hermes.vendors.openai_audio import OpenAIAudioClient, Transcript
from hermes.vendors.openai_images import GeneratedImage, OpenAIImagesClient
from hermes.vendors.xai import Citation, XAIClient, XSearchAnswer

__all__ = [
    "NO_RETRY",
    "Auth",
    "Citation",
    "ElevenLabsClient",
    "FalQueueClient",
    "GatewayUploadsClient",
    "GeneratedImage",
    "KreaClient",
    "KreaJob",
    "OpenAIAudioClient",
    "OpenAIImagesClient",
    "QueueHandle",
    "QueueStatus",
    "RetryPolicy",
    "Transcript",
    "VendorError",
    "VendorResponse",
    "XAIClient",
    "XSearchAnswer",
    "api_root",
    "download",
    "elevenlabs_auth",
    "new_client",
    "same_origin",
    "send",
]
