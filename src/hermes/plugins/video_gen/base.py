"""The interface of a video generation backend (docs/video-gen-plugins.md).

A backend is an object of a :class:`VideoBackend` subclass. It says which models it has and what each
can do (:class:`Capabilities`: modes, aspect ratios, resolutions, durations, reference images, audio),
turns one :class:`VideoRequest` into a paid job on its vendor (:meth:`VideoBackend.submit`) and reads
that job's state (:meth:`VideoBackend.poll`). Everything else — routing, credentials, checking the
request against the model's limits before any paid call, storing the job before polling, progress
events, downloading and saving the result — is done by the ``video_generate`` tool, once for all
backends.

A job must be resumable by another process: :attr:`Submitted.handle` is plain JSON (it is stored) and
:meth:`VideoBackend.poll` needs nothing but that handle and a :class:`Connection`.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from hermes.errors import ToolError

if TYPE_CHECKING:
    import httpx

Mode = Literal["text", "image"]
JobState = Literal["queued", "running", "done", "failed"]


class LimitError(ToolError):
    """A request that the active model cannot take; raised before anything is sent or paid."""


@dataclass(frozen=True)
class Capabilities:
    """What one model can do. Empty ``aspect_ratios``/``resolutions`` mean the model takes no such choice.

    ``durations`` lists the exact lengths the model accepts (Veo: 4, 6, 8); when it is empty any whole
    number of seconds from ``min_duration`` to ``max_duration`` is accepted. ``audio`` says whether the
    model makes sound; ``audio_switch`` whether it can be turned on and off per request.
    """

    modes: tuple[Mode, ...] = ("text",)
    aspect_ratios: tuple[str, ...] = ()
    resolutions: tuple[str, ...] = ()
    durations: tuple[int, ...] = ()
    min_duration: int = 1
    max_duration: int = 10
    default_duration: int | None = None
    max_reference_images: int = 0
    audio: bool = False
    audio_switch: bool = False
    negative_prompt: bool = False
    max_prompt_chars: int = 4000

    def duration_words(self) -> str:
        if self.durations:
            return ", ".join(str(d) for d in self.durations) + " seconds"
        return f"{self.min_duration} to {self.max_duration} seconds"

    def summary(self) -> str:
        """One paragraph for the tool description: what the model does and what it accepts."""
        modes = " and ".join({"text": "text-to-video", "image": "image-to-video (image_url)"}[m] for m in self.modes)
        parts = [f"Modes: {modes}.", f"Duration: {self.duration_words()}."]
        if self.aspect_ratios:
            parts.append(f"Aspect ratios: {', '.join(self.aspect_ratios)}.")
        if self.resolutions:
            parts.append(f"Resolutions: {', '.join(self.resolutions)}.")
        if self.max_reference_images:
            parts.append(f"Up to {self.max_reference_images} reference images.")
        if self.audio:
            parts.append("Makes sound" + (" (audio: true/false)." if self.audio_switch else " (always on)."))
        else:
            parts.append("No sound.")
        return " ".join(parts)

    def check(self, request: VideoRequest, model: str) -> None:
        """Raise :class:`LimitError` naming the field when ``request`` is outside these limits."""
        if request.mode not in self.modes:
            raise LimitError(f"{model} does only {' and '.join(self.modes)}-to-video; "
                             + ("'image_url' is not accepted" if request.mode == "image" else "it needs 'image_url'"))
        if len(request.prompt) > self.max_prompt_chars:
            raise LimitError(f"'prompt' is longer than the {self.max_prompt_chars} characters {model} accepts")
        if request.duration is not None:
            fits = request.duration in self.durations if self.durations else \
                self.min_duration <= request.duration <= self.max_duration
            if not fits:
                raise LimitError(f"'duration' must be {self.duration_words()} for {model}, got {request.duration}")
        _one_of("aspect_ratio", request.aspect_ratio, self.aspect_ratios, model)
        _one_of("resolution", request.resolution, self.resolutions, model)
        if len(request.reference_image_urls) > self.max_reference_images:
            allowed = self.max_reference_images
            raise LimitError(f"{model} takes {'no' if not allowed else f'at most {allowed}'} reference images, "
                             f"got {len(request.reference_image_urls)}")
        if request.audio is not None and not self.audio_switch and request.audio != self.audio:
            raise LimitError(f"{model} cannot turn sound {'on' if request.audio else 'off'}")
        if request.negative_prompt is not None and not self.negative_prompt:
            raise LimitError(f"{model} takes no 'negative_prompt'")


def _one_of(field_name: str, value: str | None, allowed: tuple[str, ...], model: str) -> None:
    if value is None:
        return
    if not allowed:
        raise LimitError(f"{model} takes no '{field_name}' choice")
    if value not in allowed:
        raise LimitError(f"'{field_name}' must be one of {', '.join(allowed)} for {model}, got {value!r}")


@dataclass(frozen=True)
class VideoRequest:
    """What to make. ``image_url`` (an http(s) URL or a ``data:`` URI) makes it image-to-video."""

    prompt: str
    image_url: str | None = None
    reference_image_urls: tuple[str, ...] = ()
    duration: int | None = None
    aspect_ratio: str | None = None
    resolution: str | None = None
    audio: bool | None = None
    negative_prompt: str | None = None
    seed: int | None = None

    @property
    def mode(self) -> Mode:
        return "image" if self.image_url is not None else "text"

    def to_data(self) -> dict[str, Any]:
        data = asdict(self)
        data["reference_image_urls"] = list(self.reference_image_urls)
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> VideoRequest:
        values = dict(data)
        values["reference_image_urls"] = tuple(values.get("reference_image_urls") or ())
        return cls(**values)

    def fingerprint(self, *parts: str) -> str:
        """A stable hash of this request and ``parts`` (backend, model, kind): the same call twice is the same job."""
        text = json.dumps([list(parts), self.to_data()], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class ModelInfo:
    """A model of a backend: its id (what ``video_gen.model`` holds), a name, its limits and a price guess."""

    id: str
    display: str
    capabilities: Capabilities
    #: US dollars per second of video, for the stored cost estimate (None: unknown)
    price_per_second: float | None = None
    #: backend-specific details (endpoints, field names), never shown to the model
    extra: Mapping[str, Any] = field(default_factory=dict)


def model_to_data(model: ModelInfo) -> dict[str, Any]:
    """``model`` as JSON (for the catalog cache)."""
    return {"id": model.id, "display": model.display, "capabilities": asdict(model.capabilities),
            "price_per_second": model.price_per_second, "extra": dict(model.extra)}


def model_from_data(data: Mapping[str, Any]) -> ModelInfo:
    """The inverse of :func:`model_to_data` (TypeError/KeyError/ValueError on a malformed entry)."""
    caps = dict(data["capabilities"])
    for key in ("modes", "aspect_ratios", "resolutions", "durations"):
        caps[key] = tuple(caps.get(key) or ())
    price = data.get("price_per_second")
    return ModelInfo(str(data["id"]), str(data.get("display") or data["id"]), Capabilities(**caps),
                     float(price) if isinstance(price, int | float) else None, dict(data.get("extra") or {}))


@dataclass(frozen=True)
class Connection:
    """Where a backend calls and with which secret: the vendor's API and the user's key, or a gateway relay
    and the portal token (``gateway``). ``allow_url`` says which URLs may receive the secret."""

    http: httpx.AsyncClient
    origin: str
    secret: str = field(repr=False)
    allow_url: Callable[[str], bool] = field(repr=False)
    gateway: bool = False


@dataclass(frozen=True)
class Submitted:
    """A job the vendor accepted: its id and the JSON a later :meth:`VideoBackend.poll` needs."""

    job_id: str
    handle: Mapping[str, Any]


@dataclass(frozen=True)
class Progress:
    """One look at a job. ``done`` carries ``video_url``; ``failed`` carries ``error``."""

    state: JobState
    queue_position: int | None = None
    percent: int | None = None
    message: str | None = None
    video_url: str | None = None
    error: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


class VideoBackend(ABC):
    """One video generation service. Subclasses set the class attributes and implement three methods.

    * ``name`` — what ``video_gen.provider`` holds (lower case, ``[a-z0-9_-]``);
    * ``display`` — the human name; ``env`` — the variables holding its key (any one of them);
    * ``api_origin`` — its API (``video_gen.<name>.base_url`` in config.yaml overrides it);
    * ``default_model`` — used when ``video_gen.model`` is unset;
    * ``live_catalog`` — set with :meth:`fetch_models` when the vendor lists its models and their limits:
      the list is cached (``HERMES_HOME/cache/video_models/<name>.json``) and read offline from there.
    """

    name: ClassVar[str] = ""
    display: ClassVar[str] = ""
    env: ClassVar[tuple[str, ...]] = ()
    api_origin: ClassVar[str | None] = None
    default_model: ClassVar[str] = ""
    #: the vendor publishes its catalog: :meth:`fetch_models` reads it (cached under HERMES_HOME/cache/)
    live_catalog: ClassVar[bool] = False

    @abstractmethod
    def models(self) -> tuple[ModelInfo, ...]:
        """The models this backend knows (offline: no network)."""

    def model(self, model_id: str) -> ModelInfo | None:
        """The model ``model_id``, or None when this backend cannot run it."""
        return next((m for m in self.models() if m.id == model_id), None)

    async def fetch_models(self, conn: Connection) -> tuple[ModelInfo, ...]:
        """The vendor's catalog, read now (network); backends with ``live_catalog`` override it."""
        return self.models()

    def estimate_cost(self, model: ModelInfo, request: VideoRequest) -> float | None:
        """US dollars this request will probably cost (None: unknown)."""
        if model.price_per_second is None:
            return None
        seconds = request.duration or model.capabilities.default_duration or model.capabilities.min_duration
        return round(model.price_per_second * seconds, 4)

    @abstractmethod
    async def submit(self, conn: Connection, model: ModelInfo, request: VideoRequest) -> Submitted:
        """Start one paid job; raise :class:`hermes.vendors.base.VendorError` when the vendor refuses."""

    @abstractmethod
    async def poll(self, conn: Connection, handle: Mapping[str, Any]) -> Progress:
        """The job's state now (one request or two; never waits)."""
