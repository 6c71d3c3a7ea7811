"""The portal's own image API on the shared origin: OpenAI Images, forwarded with the operator's key.

Our client (:class:`hermes.vendors.openai_images.OpenAIImagesClient`, ``Authorization: Bearer <gateway
token>``) sends, for an ``image_gen.model`` that is neither a Krea nor a FAL id::

    POST /v1/images/generations {"model", "prompt", "n", "size", …}            → {"data": [{"b64_json"|"url"}]}
    POST /v1/images/edits  multipart: model, prompt, n, size, image (or image[] …, mask)
                           or JSON {"model", "prompt", "n", "size", "images": [{"image_url"}], ["mask"]}

Only documented fields are forwarded (allow-lists below); ``n`` is 1–10 and is what the call is metered
in. An ``image_url`` that is one of this gateway's own uploads (``…/api/uploads/files/<id>?key=…``) is
read from disk rather than left for the backend to fetch — a self-hosted gateway is often not reachable
from the backend — and when every source is local the edit goes to the backend as multipart (the form
every OpenAI-compatible server takes); otherwise as JSON, local files inlined as ``data:`` URIs and other
URLs passed on for the backend to fetch. The answer is passed through (``b64_json`` or ``url``).
"""

from __future__ import annotations

import asyncio
import base64
import email.parser
import email.policy
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
from starlette.datastructures import Headers

from hermes.toolgateway.errors import GatewayHTTPError, json_object
from hermes.toolgateway.relays.base import RelayCall, RelayResult
from hermes.toolgateway.relays.vendor import operator_headers, raise_for_vendor, vendor_request
from hermes.toolgateway.storage.uploads import is_upload_id, sniff_image

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway
    from hermes.toolgateway.storage.uploads import UploadStore

GENERATE_FIELDS = frozenset({"model", "prompt", "n", "size", "quality", "style", "background", "moderation",
                             "output_format", "output_compression", "response_format"})
EDIT_FIELDS = frozenset({"model", "prompt", "n", "size", "quality", "background", "output_format",
                         "output_compression", "response_format", "input_fidelity"})
MAX_PROMPT = 32_000
MAX_N = 10
MAX_IMAGES = 16
FILES_MARK = "/api/uploads/files/"

Part = tuple[str, str | None, bytes]  # name, filename, bytes
_SMALL_NUMBER = re.compile(r"^[0-9]{1,3}$")


def _bad(message: str, code: str = "invalid_request") -> GatewayHTTPError:
    return GatewayHTTPError(400, code, message)


def _text(value: str, name: str) -> str:
    """``value`` unless it cannot be UTF-8 (a lone surrogate, which JSON's ``\\ud800`` escapes can carry): 400."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _bad(f"'{name}' is not valid Unicode text") from None
    return value


def _check(data: dict[str, Any]) -> int:
    """Validate model, prompt and n of a request (JSON values, or multipart strings); returns n."""
    model, prompt = data.get("model"), data.get("prompt")
    if not isinstance(model, str) or not model.strip() or len(model) > 200:
        raise _bad("'model' must be the name of an image model")
    if not isinstance(prompt, str) or not prompt.strip():
        raise _bad("'prompt' must be a non-empty string")
    if len(prompt) > MAX_PROMPT:
        raise _bad(f"'prompt' is longer than {MAX_PROMPT} characters")
    _text(model, "model")
    _text(prompt, "prompt")
    n = data.get("n", 1)
    if isinstance(n, str) and _SMALL_NUMBER.match(n.strip()):
        n = int(n.strip())
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_N:
        raise _bad(f"'n' must be a whole number from 1 to {MAX_N}")
    return n


def multipart_parts(content_type: str, body: bytes) -> list[Part]:
    """Every named part of a ``multipart/form-data`` body, in order (repeated names kept), or 400."""
    if not content_type.lower().startswith("multipart/form-data") or "boundary=" not in content_type:
        raise _bad("send the edit as multipart/form-data or as JSON")
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise _bad("the multipart body could not be read")
    parts: list[Part] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            parts.append((name, part.get_filename(), payload if isinstance(payload, bytes) else b""))
    return parts


def _is_json(headers: Headers) -> bool:
    return headers.get("content-type", "").lower().startswith("application/json")


def generation_units(body: bytes, headers: Headers) -> int:
    """Images asked for (``n``)."""
    return _check(json_object(body))


def edit_units(body: bytes, headers: Headers) -> int:
    """Images asked for (``n``), from either form of the edit request."""
    if _is_json(headers):
        return _check(json_object(body))
    fields = {name: data.decode("utf-8", "replace") for name, filename, data in
              multipart_parts(headers.get("content-type", ""), body) if filename is None}
    return _check(dict(fields))


@dataclass(frozen=True)
class Source:
    """An image of an edit: bytes (sent or inlined) or a URL the backend fetches."""

    data: bytes | None = None
    mime: str = "image/png"
    name: str = "image.png"
    url: str | None = None

    def as_url(self) -> str:
        if self.url is not None:
            return self.url
        return f"data:{self.mime};base64,{base64.b64encode(self.data or b'').decode('ascii')}"


def _count(images: int) -> None:
    """400 past :data:`MAX_IMAGES`, checked before any image is read."""
    if images > MAX_IMAGES:
        raise _bad(f"at most {MAX_IMAGES} images can be edited at once")


def _image_url(item: Any, what: str) -> str:
    """The ``image_url`` of an ``images[]`` item or of the ``mask`` (shape checked only; nothing is read)."""
    if isinstance(item, dict) and "file_id" in item:
        raise _bad("this gateway does not keep OpenAI file ids; upload the image and send its image_url")
    url = item.get("image_url") if isinstance(item, dict) else None
    if not isinstance(url, str) or not url.startswith(("http://", "https://", "data:")):
        raise _bad(f"each of {what} needs an 'image_url' (http(s) or data: URL)")
    return url


def _source_bytes(data: bytes, name: str | None, what: str) -> Source:
    kind = sniff_image(data)
    if kind is None:
        raise GatewayHTTPError(415, "unsupported_content", f"{what} is not a PNG, JPEG, WebP or GIF image")
    return Source(data=data, mime=kind[0], name=name or f"image.{kind[1]}")


class ImagesAPI:
    """``/v1/images/generations`` and ``/v1/images/edits`` in front of the ``[relays.tool]`` backend."""

    def __init__(self, gateway: Gateway, store: UploadStore) -> None:
        self.gateway = gateway
        self.store = store

    def require_backend(self) -> None:
        if self.gateway.config.tool.backend != "vendor":
            raise GatewayHTTPError(503, "backend_not_configured",
                                   "this gateway has no image backend (set relays.tool.url / api_key)")

    async def _forward(self, call: RelayCall, path: str, *, content: bytes, content_type: str) -> RelayResult:
        cfg = self.gateway.config.tool
        headers = operator_headers(cfg.api_key, "Bearer", call.headers,
                                   **{"content-type": content_type, "accept": "application/json"})
        resp = await vendor_request(self.gateway.vendor_client, "POST", cfg.url + path, vendor="openai",
                                    limits=self.gateway.config.limits, deadline=call.deadline, content=content,
                                    headers=headers)
        raise_for_vendor(resp, "openai", (cfg.api_key,))
        answer = resp.json("openai")
        if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
            raise GatewayHTTPError(502, "vendor_bad_response", "openai answered without a data list")
        return RelayResult(200, resp.body)

    async def generate(self, call: RelayCall) -> RelayResult:
        self.require_backend()
        data = json_object(call.body)
        _check(data)
        forwarded = {k: v for k, v in data.items() if k in GENERATE_FIELDS}
        return await self._forward(call, "/v1/images/generations", content=_dump(forwarded),
                                   content_type="application/json")

    async def edit(self, call: RelayCall) -> RelayResult:
        self.require_backend()
        if _is_json(call.headers):
            data = json_object(call.body)
            _check(data)
            fields = {k: v for k, v in data.items() if k in EDIT_FIELDS}
            images = data.get("images")
            if not isinstance(images, list) or not images:
                raise _bad("'images' must list at least one {\"image_url\": …}")
            _count(len(images))
            # every URL is checked before any upload is read, and each upload is read once
            urls = [_image_url(item, "images[]") for item in images]
            mask_url = _image_url(data["mask"], "mask") if data.get("mask") is not None else None
            read: dict[str, Source] = {}
            sources = [await self.resolve(url, read) for url in urls]
            mask = await self.resolve(mask_url, read) if mask_url is not None else None
        else:
            parts = multipart_parts(call.headers.get("content-type", ""), call.body)
            fields = {n: b.decode("utf-8", "replace") for n, f, b in parts if f is None and n in EDIT_FIELDS}
            _check(fields)
            files = [(f, b) for n, f, b in parts if n in ("image", "image[]")]
            if not files:
                raise _bad("'image' must be an image file")
            _count(len(files))
            sources = [_source_bytes(b, f, "the image") for f, b in files]
            masks = [_source_bytes(b, f, "the mask") for n, f, b in parts if n == "mask"]
            mask = masks[0] if masks else None
        if all(s.data is not None for s in [*sources, *([mask] if mask else [])]):
            parts_out = [("image" if len(sources) == 1 else "image[]", (s.name, s.data or b"", s.mime))
                         for s in sources]
            if mask is not None:
                parts_out.append(("mask", (mask.name, mask.data or b"", mask.mime)))
            form = {k: _text(v, k) if isinstance(v, str) else str(v) for k, v in fields.items()}
            request = httpx.Request("POST", "http://multipart.invalid/", files=parts_out, data=form)
            return await self._forward(call, "/v1/images/edits", content=request.read(),
                                       content_type=request.headers["content-type"])
        body: dict[str, Any] = {**fields, "images": [{"image_url": s.as_url()} for s in sources]}
        if mask is not None:
            body["mask"] = {"image_url": mask.as_url()}
        return await self._forward(call, "/v1/images/edits", content=_dump(body), content_type="application/json")

    async def _read_elsewhere(self, upload_id: str, user_id: int, key: str) -> bytes | None:
        """An upload's bytes from the gateway process holding its file (peers); None when none does."""
        peers = self.gateway.peers
        peer = await peers.holder("upload", upload_id, str(user_id))
        if peer is None:
            return None
        target = f"/relay/tool{FILES_MARK}{upload_id}?{urlencode({'key': key})}"
        status, _headers, data = await peers.request(peer, "GET", target, [], b"", "upload",
                                                     self.gateway.config.uploads.max_bytes + 1)
        return data if status == 200 else None

    async def resolve(self, url: str, read: dict[str, Source] | None = None) -> Source:
        """A local :class:`Source` for one of this gateway's own upload URLs; other URLs stay URLs.

        ``read`` holds the uploads already read for this request, by id: each is read from disk once."""
        if url.startswith("data:"):
            return Source(url=url)
        try:
            parts = urlsplit(url)
        except ValueError:
            raise _bad("an image_url is not a valid URL") from None
        mark = parts.path.rfind(FILES_MARK)
        if mark < 0:
            return Source(url=url)
        upload_id = parts.path[mark + len(FILES_MARK):].split(".", 1)[0]
        if not is_upload_id(upload_id) or self.store.get(upload_id) is None:
            return Source(url=url)  # not one of ours (another gateway's upload, say): the backend fetches it
        key = (parse_qs(parts.query).get("key") or [""])[0]
        upload = self.store.unlock(upload_id, key)
        if upload is None:
            raise _bad("the image_url names an upload of this gateway but its key is wrong", "invalid_upload")
        if upload.expires <= self.gateway.clock():
            raise _bad("the uploaded image has expired; upload it again", "upload_expired")
        known = read.get(upload.id) if read is not None else None
        if known is not None:
            return known
        data = await asyncio.to_thread(self.store.read, upload)
        if data is None:  # held in another process's upload_dir: read through it
            data = await self._read_elsewhere(upload.id, upload.user_id, key)
        if data is None:
            raise _bad("the uploaded image is no longer stored; upload it again", "upload_expired")
        source = Source(data=data, mime=upload.content_type, name=f"{upload.id}.{upload.ext}")
        if read is not None:
            read[upload.id] = source
        return source


def _dump(data: Any) -> bytes:
    """Compact JSON, ASCII only: anything the client sent (a lone surrogate included) can be written."""
    return json.dumps(data, separators=(",", ":")).encode("ascii")
