"""The shared ``tool-gateway`` origin (label ``tool``): media uploads and the portal's own image API.

Clients reach it as ``tool-gateway.<domain>`` or, pinned by ``TOOL_GATEWAY_URL``, under ``/relay/tool``::

    POST   /api/uploads/{fal|krea|nous}   multipart, part "file" → 201 {"id", "url", "expires_at", …}
    GET    /api/uploads                   the caller's live uploads (never their URLs)
    DELETE /api/uploads/files/{id}        remove one of the caller's uploads → 204
    GET    /api/uploads/files/{id}?key=…  the bytes, no token needed: the URL is the capability
    POST   /v1/images/generations         OpenAI Images (:mod:`.tool_images`)
    POST   /v1/images/edits

The ``/api/{vendor}`` space is reserved for vendors the gateway hosts itself; any other path answers
404 JSON before a token is even looked at. Uploads are stored by :mod:`hermes.toolgateway.storage.uploads`.

**Authorization** follows the vendor that will use the file. The pipeline of :mod:`.base` authorizes
one coverage category per relay, so this relay is a front for three *sections*, each a :class:`Relay`
running the whole pipeline with its own category:

* ``fal`` — ``/api/uploads/fal``: any plan that covers FAL (the free tier included);
* ``krea`` — ``/api/uploads/krea``: paid plans only (as the ``krea`` relay);
* ``nous-images`` — the image API and ``/api/uploads/nous``: paid plans only (GW-11). ``krea`` and
  ``nous-images`` are not coverage categories, so :meth:`~hermes.toolgateway.config.PlanConfig.covers`
  grants them to ``paid_access`` plans alone and no configuration can give them to a free plan; the free
  tier gets 403 ``category_not_covered`` saying that these models need a paid plan.

Listing and deleting need a token whose plan covers at least one of the three; they are rate limited
but not metered. **Metering:** an upload is recorded as operation ``upload``, 0 units, backend
``local``, under its section's category (so it never uses up an allowance); a generation or an edit is
``n`` units (``generate``/``edit``, backend ``openai``). Cost keys: ``nous-images.generate`` etc.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.types import Receive, Scope, Send

from hermes.toolgateway.errors import GatewayHTTPError, json_response, refusal, too_many
from hermes.toolgateway.peers import PEER_HEADER, target_of
from hermes.toolgateway.portal.auth import Principal, extract_token
from hermes.toolgateway.relays.base import Operation, PreparedAnswer, Relay, RelayCall, RelayResult
from hermes.toolgateway.relays.openai_audio import parse_multipart
from hermes.toolgateway.relays.tool_images import ImagesAPI, edit_units, generation_units
from hermes.toolgateway.storage.base import StorageError
from hermes.toolgateway.storage.uploads import (
    ID_PATTERN,
    UPLOAD_VENDORS,
    StorageFull,
    UploadStore,
    clean_filename,
    iso_time,
    new_upload_id,
    sniff_image,
)

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

IMAGES_CATEGORY = "nous-images"
#: the category an upload is authorized and metered under, by the vendor it is meant for
UPLOAD_CATEGORIES = {"fal": "fal", "krea": "krea", "nous": IMAGES_CATEGORY}
UPLOADS = "/api/uploads"
_FILE = re.compile(rf"^{UPLOADS}/files/({ID_PATTERN})(?:\.[a-z]{{3,4}})?$")
_PAID_ONLY = {IMAGES_CATEGORY: "The portal's own image models", "krea": "Krea models"}
#: room for the multipart framing around the largest allowed file
_FRAMING = 64 * 1024


class _Section(Relay):
    """The operations of one coverage category; runs the :mod:`.base` pipeline with it."""

    def __init__(self, origin: ToolOriginRelay, category: str, operations: Sequence[Operation]) -> None:
        self.origin = origin
        self.label = origin.label
        self.category = category
        self._operations = tuple(operations)
        super().__init__(origin.gateway)

    def operations(self) -> Sequence[Operation]:
        return self._operations

    def backend(self, operation: str) -> str:
        return self.origin.backend(operation)

    def max_request_bytes(self) -> int:
        return self.origin.max_request_bytes()

    async def _handle(self, scope: Scope, receive: Receive) -> Response | PreparedAnswer:
        try:
            return await super()._handle(scope, receive)
        except GatewayHTTPError as exc:
            what = _PAID_ONLY.get(self.category)
            if exc.code != "category_not_covered" or what is None:
                raise
            portal = self.gateway.config.base_url()
            raise GatewayHTTPError(
                403, exc.code, f"{what} need a paid plan; the free tool tier covers FAL models only. Upgrade at "
                f"{portal}, or set image_gen.model to a FAL model (fal-ai/…)", extra=exc.extra) from None


class ToolOriginRelay(Relay):
    """Uploads and the image API of the shared origin (see the module docstring)."""

    label = "tool"
    category = IMAGES_CATEGORY

    def __init__(self, gateway: Gateway) -> None:
        cfg = gateway.config
        self.store = UploadStore(gateway.conn, cfg.uploads.directory or cfg.state_dir / "uploads")
        self.images = ImagesAPI(gateway, self.store)
        super().__init__(gateway)
        images = _Section(self, IMAGES_CATEGORY, (
            Operation("POST", "/v1/images/generations", "generate", self.images.generate, measure=generation_units),
            Operation("POST", "/v1/images/edits", "edit", self.images.edit, measure=edit_units),
            Operation("POST", f"{UPLOADS}/nous", "upload", self.upload, units=0)))
        self.sections: dict[str, _Section] = {
            "/v1/images/generations": images, "/v1/images/edits": images, f"{UPLOADS}/nous": images}
        for vendor in ("fal", "krea"):
            path = f"{UPLOADS}/{vendor}"
            self.sections[path] = _Section(self, UPLOAD_CATEGORIES[vendor],
                                           (Operation("POST", path, "upload", self.upload, units=0),))

    def operations(self) -> Sequence[Operation]:
        return ()  # served by the sections

    def backend(self, operation: str) -> str:
        if operation == "upload":
            return "local"
        return "openai" if self.gateway.config.tool.backend == "vendor" else "off"

    def max_request_bytes(self) -> int:
        cfg = self.gateway.config
        return cfg.tool.max_request_bytes or max(cfg.limits.max_request_bytes, cfg.uploads.max_bytes + _FRAMING)

    def describe(self) -> dict[str, Any]:
        sections = {id(s): s for s in self.sections.values()}.values()
        return {"label": self.label, "category": self.category,
                "operations": {f"{s.category}.{name}": backend for s in sections
                               for name, backend in s.describe()["operations"].items()}}

    # -- routing -------------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        section = self.sections.get(path)
        if section is not None:
            await section(scope, receive, send)
            return
        try:
            found = _FILE.match(path)
            if found and method in ("GET", "HEAD"):
                response = await self._serve(scope, found.group(1))
            elif found and method == "DELETE":
                response = await self._delete(scope, found.group(1))
            elif path == UPLOADS and method == "GET":
                response = await self._list(scope)
            elif found or path == UPLOADS:
                allow = "GET, HEAD, DELETE" if found else "GET"
                raise GatewayHTTPError(405, "method_not_allowed", f"use {allow} on {path}", headers={"allow": allow})
            elif path.startswith(UPLOADS + "/"):
                raise GatewayHTTPError(404, "not_found", f"this gateway stores uploads for {', '.join(UPLOAD_VENDORS)} "
                                       f"only: POST {UPLOADS}/{{vendor}}")
            else:
                raise GatewayHTTPError(404, "not_found", f"the shared origin has no {path} endpoint")
        except (GatewayHTTPError, StorageError) as exc:
            response = refusal(exc).response()
        await response(scope, receive, send)

    # -- uploads -------------------------------------------------------------------------------------
    async def upload(self, call: RelayCall) -> RelayResult:
        """Store the ``file`` part for the vendor named in the path; 201 with its capability URL."""
        vendor = call.path.rsplit("/", 1)[-1]
        limits = self.gateway.config.uploads
        parts = parse_multipart(call.headers.get("content-type", ""), call.body)
        part = parts.get("file")
        if part is None or not part[1]:
            raise GatewayHTTPError(400, "invalid_request", "send the file as the multipart part 'file'")
        filename, data, _declared = part
        if len(data) > limits.max_bytes:
            raise GatewayHTTPError(413, "upload_too_large", f"the file is larger than {limits.max_bytes} bytes")
        kind = sniff_image(data)
        if kind is None:
            raise GatewayHTTPError(415, "unsupported_content",
                                   "only PNG, JPEG, WebP and GIF images can be uploaded (checked by their first bytes)")
        now = self.gateway.clock()
        self.store.purge(now, max_age=limits.ttl + 60)
        try:  # the row first: it claims the room under the per-user cap before the file is written
            upload, key = self.store.add(user_id=call.principal.user.id, vendor=vendor,
                                         filename=clean_filename(filename), content_type=kind[0], ext=kind[1],
                                         data=data, now=now, ttl=limits.ttl, upload_id=new_upload_id(),
                                         cap=limits.user_bytes)
        except StorageFull as full:
            wait = max(1, int((full.first_expiry or now) - now) + 1)
            raise too_many("upload_storage_full", f"your uploads already hold {full.held} bytes (at most "
                           f"{limits.user_bytes}); delete some ({UPLOADS}) or wait until they expire", wait) from None
        write = asyncio.ensure_future(asyncio.to_thread(self.store.write_file, upload.id, data))
        try:
            await asyncio.shield(write)
        except BaseException:  # the write failed, or this request was cancelled: drop the row once it is over
            write.add_done_callback(lambda _: self.store.forget(upload.id))
            raise
        # the other processes forward this upload's reads and deletion here (unless upload_dir is shared)
        await self.gateway.peers.hold("upload", upload.id, str(upload.user_id), limits.ttl + 60)
        base = limits.files_url or call.base_url
        url = f"{base}{UPLOADS}/files/{upload.id}.{upload.ext}?key={key}"
        return RelayResult.of_json({**upload.public(), "url": url, "expires_in": limits.ttl}, status=201)

    async def _serve(self, scope: Scope, upload_id: str) -> Response:
        """The bytes of an upload, for whoever holds its URL (the vendor)."""
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        upload = self.store.unlock(upload_id, (query.get("key") or [""])[0])
        if upload is None:
            raise GatewayHTTPError(404, "upload_not_found", "there is no upload at this URL")
        remaining = upload.expires - self.gateway.clock()
        if remaining <= 0:
            raise GatewayHTTPError(410, "upload_expired", f"this upload expired at {iso_time(upload.expires)}")
        path = self.store.path_of(upload.id)
        try:  # streamed from the file in chunks (GET and HEAD alike): never held whole in memory
            found = await asyncio.to_thread(path.stat)
        except FileNotFoundError:
            peer = await self._holder(scope, upload.id, upload.user_id)
            if peer is not None:  # an upload may be larger than a vendor answer
                return await self.gateway.peers.forward(peer, scope, b"", "upload",
                                                        self.gateway.config.uploads.max_bytes + 1)
            raise GatewayHTTPError(404, "upload_not_found", "there is no upload at this URL") from None
        headers = {"cache-control": f"private, max-age={int(remaining)}", "x-content-type-options": "nosniff",
                   "content-security-policy": "default-src 'none'; sandbox"}
        return FileResponse(path, headers=headers, media_type=upload.content_type, stat_result=found)

    def _principal(self, scope: Scope) -> Principal:
        """Authenticate and authorize a management call: a plan covering any upload category, rate limited."""
        gw = self.gateway
        principal = gw.auth.authenticate(extract_token(Headers(scope=scope), self.token_sources))
        scope.setdefault("state", {})["gw_user"] = principal.user.uid
        covered = [c for c in dict.fromkeys(UPLOAD_CATEGORIES.values()) if principal.plan.covers(c)]
        gw.auth.authorize(principal, covered[0] if covered else IMAGES_CATEGORY)
        wait = gw.limiter.acquire(principal.rate_key)
        if wait > 0:
            raise too_many("rate_limited", "too many requests with this token; slow down", gw.limiter.retry_after(wait))
        return principal

    async def _list(self, scope: Scope) -> Response:
        principal = self._principal(scope)
        uploads = self.store.list_for(principal.user.id, self.gateway.clock())
        return json_response({"uploads": [u.public() for u in uploads]})

    async def _holder(self, scope: Scope, upload_id: str, user_id: int) -> str | None:
        """The other process whose ``upload_dir`` holds the file; None to answer here (a forwarded request is
        checked, 403 ``peer_refused`` unless a process of this gateway signed it, and answered here)."""
        peers = self.gateway.peers
        signed = Headers(scope=scope).get(PEER_HEADER)
        if signed is not None:
            peers.check(signed, str(scope["method"]), target_of(scope))
            return None
        return await peers.holder("upload", upload_id, str(user_id))

    async def _delete(self, scope: Scope, upload_id: str) -> Response:
        principal = self._principal(scope)
        found = self.store.get(upload_id)
        if found is not None and found.user_id == principal.user.id \
                and not await asyncio.to_thread(self.store.path_of(upload_id).exists):
            peer = await self._holder(scope, upload_id, found.user_id)
            if peer is not None:  # its holder removes the row and the file
                return await self.gateway.peers.forward(peer, scope, b"", "upload")
        if not self.store.delete(upload_id, principal.user.id):
            raise GatewayHTTPError(404, "upload_not_found", "you have no upload with this id")
        return Response(status_code=204)


def openapi_paths(errors: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """The shared origin's endpoints under ``/relay/tool`` for :mod:`hermes.toolgateway.openapi`."""
    def obj(**props: Any) -> dict[str, Any]:
        return {"type": "object", "properties": props}

    def ok(schema: dict[str, Any], status: str = "200") -> dict[str, Any]:
        return {status: {"description": "OK", "content": {"application/json": {"schema": schema}}}}

    text, integer = {"type": "string"}, {"type": "integer"}
    item = obj(id=text, vendor=text, filename=text, content_type=text, bytes=integer, sha256=text,
               created_at=text, expires_at=text)
    images = ok(obj(created=integer, data={"type": "array", "items": obj(b64_json=text, url=text,
                                                                           revised_prompt=text)}))
    secured: list[dict[str, list[str]]] = [{"gatewayToken": []}]
    root = "/relay/tool"
    upload_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
                 "description": "up_… with or without its file extension"}
    fields = obj(model=text, prompt=text, n={"type": "integer", "minimum": 1, "maximum": 10}, size=text)
    return {
        f"{root}{UPLOADS}/{{vendor}}": {"post": {
            "summary": "Store an image for a vendor to fetch (also on tool-gateway.<domain>); the url is a capability",
            "security": secured, "parameters": [{"name": "vendor", "in": "path", "required": True,
                                                 "schema": {"type": "string", "enum": list(UPLOAD_VENDORS)}}],
            "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
                "type": "object", "required": ["file"], "properties": {"file": {"type": "string",
                                                                               "format": "binary"}}}}}},
            "responses": {**ok({**item, "properties": {**item["properties"], "url": text, "expires_in": integer}},
                               "201"), **errors(400, 401, 402, 403, 404, 413, 415, 429)}}},
        f"{root}{UPLOADS}": {"get": {"summary": "Your uploads that have not expired", "security": secured,
                                     "responses": {**ok(obj(uploads={"type": "array", "items": item})),
                                                   **errors(401, 402, 403, 429)}}},
        f"{root}{UPLOADS}/files/{{id}}": {
            "get": {"summary": "An upload's bytes (no token: the key in the URL is the capability)",
                    "parameters": [upload_id, {"name": "key", "in": "query", "required": True,
                                               "schema": {"type": "string"}}],
                    "responses": {"200": {"description": "the image", "content": {"image/*": {}}},
                                  **errors(404, 410)}},
            "delete": {"summary": "Remove one of your uploads", "security": secured, "parameters": [upload_id],
                       "responses": {"204": {"description": "removed"}, **errors(401, 402, 403, 404, 429)}}},
        f"{root}/v1/images/generations": {"post": {
            "summary": "OpenAI Images generation with the operator's backend (paid plans)", "security": secured,
            "requestBody": {"required": True, "content": {"application/json": {"schema": fields}}},
            "responses": {**images, **errors(400, 401, 402, 403, 413, 429, 502, 503, 504)}}},
        f"{root}/v1/images/edits": {"post": {
            "summary": "OpenAI Images edit: multipart with image, or JSON with images[].image_url (paid plans)",
            "security": secured, "requestBody": {"required": True, "content": {
                "multipart/form-data": {"schema": fields},
                "application/json": {"schema": {**fields, "properties": {
                    **fields["properties"], "images": {"type": "array", "items": obj(image_url=text)}}}}}},
            "responses": {**images, **errors(400, 401, 402, 403, 413, 415, 429, 502, 503, 504)}}},
    }
