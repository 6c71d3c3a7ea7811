"""The ``krea`` relay: Krea 2 image generation (submit a job, poll it), as both Hermes clients call it.

The upstream client and ours (:class:`hermes.vendors.krea.KreaClient`) send ``Authorization: Bearer
<gateway token>`` and::

    POST /generate/image/krea/krea-2/{medium|large|medium-turbo}
         {"prompt", "aspect_ratio", "resolution", "creativity", ["seed"], ["image_style_references"]}
         → {"job_id", "status", …}
    GET  /jobs/{job_id}
         → {"job_id", "status", "created_at", "completed_at", "result": {"urls": […]} | {"error": …}}

Only those fields are forwarded (the request is rebuilt from them; at most :data:`MAX_REFERENCES` style
references). ``styles`` and ``moodboards`` are refused, as the upstream client itself refuses them in
managed mode; any other unknown field is refused too rather than silently dropped.

Jobs belong to the user who started them (a :class:`~hermes.toolgateway.storage.jobs.JobTable`): polling a job
another user started, or one the gateway does not know, answers 404 ``unknown_job``. A client's
``x-idempotency-key`` is passed on bound to the user (a UUID derived from the user and the key), so two
users can never be handed the same vendor job; without one the relay makes one per request, so its own
retries cannot start a second job. Job answers are rebuilt from the documented keys, so no vendor API
address ever reaches the client: the only URLs handed back are the finished images (``result.urls``,
the vendor's image storage, downloaded without credentials — as with ``fal-queue``).

**Authorization.** Krea has no coverage category in the upstream protocol, and Krea models need a paid
plan (GW-11: "the free tier covers FAL models only"). The relay's category is therefore ``krea``, which
is not a coverage category: :meth:`~hermes.toolgateway.config.PlanConfig.covers` grants it to paid
plans only, the free tier gets 403 ``category_not_covered`` naming Krea and the upgrade address, and no
configuration can put it into a free plan's ``coverage``.

Backend (``[relays.krea]``): ``vendor`` forwards to a Krea-compatible API at ``url`` with the operator's
``api_key`` (``Authorization: Bearer …``, never shown to clients); ``off`` answers 503.

Metering (category ``krea``): a submit is 1 unit — one image per job; polls are free (0 units, still
recorded). Cost keys: ``krea.generate[.krea]``, ``krea.job``.
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers

from hermes.toolgateway.errors import GatewayHTTPError, json_object
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import raise_for_vendor, vendor_request
from hermes.toolgateway.storage.jobs import JobTable

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

GENERATE_PREFIX = "/generate/image/krea/krea-2/"
GENERATE = GENERATE_PREFIX + "{variant}"
JOBS_PREFIX = "/jobs/"
JOB = JOBS_PREFIX + "{job_id}"
VARIANTS = ("medium", "large", "medium-turbo")
CREATIVITY = ("raw", "low", "medium", "high")
RESOLUTIONS = ("1K", "2K", "4K")
MAX_REFERENCES = 10
MAX_PROMPT = 10_000
MAX_URL = 2048
MAX_RESULT_URLS = 16
REFUSED = ("styles", "moodboards")
_FIELDS = frozenset({"prompt", "aspect_ratio", "resolution", "creativity", "seed", "image_style_references"})
_JOB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_ASPECT = re.compile(r"^[1-9][0-9]?:[1-9][0-9]?$")


def _bad(message: str) -> GatewayHTTPError:
    return GatewayHTTPError(400, "invalid_request", message)


def _reference(item: Any, index: int) -> dict[str, Any]:
    where = f"image_style_references[{index}]"
    if not isinstance(item, dict):
        raise _bad(f"'{where}' must be an object with 'url' and 'strength'")
    url = item.get("url")
    web = isinstance(url, str) and url.startswith(("https://", "http://")) and len(url) <= MAX_URL
    if not isinstance(url, str) or not (web or url.startswith("data:image/")):
        raise _bad(f"'{where}.url' must be an http(s) URL (at most {MAX_URL} characters) or a data:image/ URI")
    reference: dict[str, Any] = {"url": url}
    strength = item.get("strength")
    if strength is not None:
        if isinstance(strength, bool) or not isinstance(strength, int | float) or not math.isfinite(strength) \
                or abs(strength) > 2:
            raise _bad(f"'{where}.strength' must be a number from -2 to 2")
        reference["strength"] = strength
    return reference


def arguments(body: bytes) -> dict[str, Any]:
    """The submit body as it is forwarded, or 400 (``invalid_json``/``invalid_request``) naming the field."""
    data = json_object(body)
    for name in REFUSED:
        if name in data:
            raise _bad(f"'{name}' is not available through the gateway; use a style reference "
                       "(image_style_references) instead")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise _bad(f"unknown field '{unknown[0]}'; the krea relay accepts {', '.join(sorted(_FIELDS))}")
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT:
        raise _bad(f"'prompt' must be a non-empty string of at most {MAX_PROMPT} characters")
    out: dict[str, Any] = {"prompt": prompt}
    for name, allowed in (("resolution", RESOLUTIONS), ("creativity", CREATIVITY)):
        value = data.get(name)
        if value is not None:
            if value not in allowed:
                raise _bad(f"'{name}' must be one of {', '.join(allowed)}")
            out[name] = value
    aspect = data.get("aspect_ratio")
    if aspect is not None:
        if not isinstance(aspect, str) or not _ASPECT.match(aspect):
            raise _bad("'aspect_ratio' must look like 16:9, 1:1 or 9:16")
        out["aspect_ratio"] = aspect
    seed = data.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
            raise _bad("'seed' must be a non-negative integer")
        out["seed"] = seed
    references = data.get("image_style_references")
    if references is not None:
        if not isinstance(references, list) or len(references) > MAX_REFERENCES:
            raise _bad(f"'image_style_references' must be a list of at most {MAX_REFERENCES} references")
        out["image_style_references"] = [_reference(item, i) for i, item in enumerate(references)]
    return out


def generate_units(body: bytes, headers: Headers) -> int:
    """One unit per submit (a Krea 2 job makes one image); 400 for a body the relay would not forward."""
    arguments(body)
    return 1


def _scrub(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret and len(secret) >= 4 else text


def _image_urls(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [u for u in items if isinstance(u, str) and u.startswith(("https://", "http://"))
            and len(u) <= MAX_URL][:MAX_RESULT_URLS]


def public_job(job_id: str, data: Mapping[str, Any], secret: str | None = None) -> dict[str, Any]:
    """A job answer rebuilt from the keys clients read (nothing else the vendor said is passed on)."""
    out: dict[str, Any] = {"job_id": job_id}
    status = data.get("status")
    if isinstance(status, str) and status:
        out["status"] = status[:40]
    for key in ("created_at", "completed_at"):
        value = data.get(key)
        if key not in data:
            continue
        if value is None or (isinstance(value, str) and len(value) <= 64) or \
                (isinstance(value, int | float) and not isinstance(value, bool)):
            out[key] = value
    result = data.get("result")
    if isinstance(result, Mapping):
        clean: dict[str, Any] = {}
        urls = _image_urls(result.get("urls"))
        if urls:
            clean["urls"] = urls
        single = _image_urls(result.get("url"))
        if single:
            clean["url"] = single[0]
        error = result.get("error")
        if isinstance(error, Mapping):
            error = error.get("message")
        if isinstance(error, str) and error.strip():
            clean["error"] = _scrub(error.strip()[:500], secret)
        out["result"] = clean
    return out


class KreaRelay(Relay):
    """Krea 2 generate + job polling, paid plans only, jobs bound to the user who started them."""

    label = "krea"
    category = "krea"
    token_sources = ("bearer",)

    def __init__(self, gateway: Gateway) -> None:
        self.jobs = JobTable(lambda: gateway.conn, self.label)
        super().__init__(gateway)

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", GENERATE, "generate", self.generate, measure=generate_units),
                Operation("GET", JOB, "job", self.job, units=0))

    def match(self, path: str, method: str) -> Operation:
        if path.startswith(GENERATE_PREFIX) and path[len(GENERATE_PREFIX):] in VARIANTS:
            return super().match(GENERATE, method)
        if path.startswith(JOBS_PREFIX) and _JOB_ID.match(path[len(JOBS_PREFIX):]):
            return super().match(JOB, method)
        raise GatewayHTTPError(404, "not_found", f"the {self.label} relay has no {path} endpoint "
                               f"(models: {', '.join('krea-2-' + v for v in VARIANTS)})")

    def backend(self, operation: str) -> str:
        return "krea" if self.gateway.config.krea.backend == "vendor" else "off"

    # -- helpers -------------------------------------------------------------------------------------
    def _require_backend(self) -> None:
        if self.gateway.config.krea.backend != "vendor":
            raise GatewayHTTPError(503, "backend_not_configured",
                                   "this gateway has no Krea backend (set relays.krea.url / api_key)")

    def _headers(self, idempotency: str | None = None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        key = self.gateway.config.krea.api_key
        if key:
            headers["authorization"] = f"Bearer {key}"
        if idempotency is not None:
            headers["x-idempotency-key"] = idempotency
        return headers

    @staticmethod
    def _idempotency(call: RelayCall) -> str:
        """The client's key bound to the user (a UUID), or a fresh one for this request."""
        given = call.headers.get("x-idempotency-key", "").strip()
        if not given or len(given) > 200:
            return str(uuid.uuid4())
        digest = hashlib.sha256(f"{call.principal.user.uid}\n{given}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16]))

    async def _call(self, call: RelayCall, method: str, path: str, *, json_body: Any = None,
                    idempotency: str | None = None) -> dict[str, Any]:
        cfg = self.gateway.config.krea
        resp = await vendor_request(self.gateway.vendor_client, method, f"{cfg.url}{path}", vendor="krea",
                                    limits=self.gateway.config.limits, deadline=call.deadline,
                                    json_body=json_body, headers=self._headers(idempotency))
        raise_for_vendor(resp, "krea", (cfg.api_key,))
        return resp.json_object("krea")

    # -- operations ----------------------------------------------------------------------------------
    async def generate(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        variant = call.path[len(GENERATE_PREFIX):]
        body = arguments(call.body)
        data = await self._call(call, "POST", f"{GENERATE_PREFIX}{variant}", json_body=body,
                                idempotency=self._idempotency(call))
        job_id = data.get("job_id")
        if not isinstance(job_id, str) or not _JOB_ID.match(job_id):
            raise GatewayHTTPError(502, "vendor_bad_response", "krea answered without a usable job_id")
        if not await self.jobs.remember(job_id, call.principal.user.uid, {"model": f"krea-2-{variant}"}):
            raise GatewayHTTPError(502, "vendor_bad_response", "krea answered with a job id already in use")
        return RelayResult.of_json(public_job(job_id, data, self.gateway.config.krea.api_key))

    async def job(self, call: RelayCall) -> RelayResult:
        self._require_backend()
        job_id = call.path[len(JOBS_PREFIX):]
        if await self.jobs.get(job_id, call.principal.user.uid) is None:
            raise GatewayHTTPError(404, "unknown_job", f"no Krea job {job_id} for this token")
        data = await self._call(call, "GET", f"{JOBS_PREFIX}{job_id}")
        return RelayResult.of_json(public_job(job_id, data, self.gateway.config.krea.api_key))


__all__ = ["KreaRelay", "arguments", "generate_units", "public_job"]
