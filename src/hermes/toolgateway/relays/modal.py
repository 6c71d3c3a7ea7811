"""The ``modal`` relay: sandboxes for the terminal tool, as the upstream client's managed Modal backend calls them.

The upstream client (``tools/environments/managed_modal.py``) sends ``Authorization: Bearer <gateway
token>`` and JSON::

    POST /v1/sandboxes                      (x-idempotency-key) {image, cwd, cpu, memoryMiB, timeoutMs,
                                            idleTimeoutMs, persistentFilesystem, logicalKey, [diskMiB]} → {id, …}
    POST /v1/sandboxes/{id}/execs           {execId, command, cwd, timeoutMs, [stdinData]}
                                            → {execId, status, output, returncode, …}
    GET  /v1/sandboxes/{id}/execs/{execId}  → the same fields (404: not found)
    POST /v1/sandboxes/{id}/execs/{execId}/cancel
    POST /v1/sandboxes/{id}/terminate       {snapshotBeforeTerminate}

``command`` is one shell command line (a string; the client has already wrapped it), run with
``/bin/sh -c``; ``output`` is stdout and stderr **merged in the order written** (the client shows one
text). ``status`` is ``running`` until the command ends, then ``completed`` (any exit status, in
``returncode``), ``timeout`` (124), ``cancelled`` (130) or ``failed`` (126: it could not start). An
exec answer waits up to ``exec_wait`` seconds, so quick commands come back finished at once. The output
of a finished exec may later be dropped (a memory budget, or the sandbox ended): ``output`` is then a
``[sandbox: …]`` line saying so, with ``"outputDropped": true``; status and returncode stay.

Backend (``[relays.modal]``): ``local`` — the self-hosted engine of :mod:`hermes.toolgateway.sandbox.engine`
(a private folder and child processes on the gateway host; **not an isolation boundary** beyond a Unix
user, resource limits and a folder); ``off`` (the default) — the relay does not exist. Fields other
than the documented ones are ignored; ``image`` is recorded (and checked against ``images`` when the
operator lists some) but commands run on the host's own system.

Metering (category ``modal``, backend ``local``): 1 unit per sandbox created and 1 per exec started;
polls, cancels and terminations cost 0 (still recorded). A retried request is charged again even when
it returns the same sandbox or exec. Cost keys ``modal.create``, ``modal.exec``.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.portal.auth import extract_token
from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult
from hermes.toolgateway.sandbox.config import SandboxConfig
from hermes.toolgateway.sandbox.engine import ExecSpec, SandboxEngine, SandboxSpec

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

CREATE = "/v1/sandboxes"
EXECS = "/v1/sandboxes/{id}/execs"
EXEC = "/v1/sandboxes/{id}/execs/{execId}"
CANCEL = "/v1/sandboxes/{id}/execs/{execId}/cancel"
TERMINATE = "/v1/sandboxes/{id}/terminate"
MAX_COMMAND = 128 * 1024
MAX_TEXT = 512
MIN_MEMORY_MIB = 64  # below this not even the shell starts
_ID_PART = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}"
_ID = re.compile(rf"^{_ID_PART}$")
_ROUTES = tuple((re.compile("^" + template.replace("{id}", _ID_PART).replace("{execId}", _ID_PART) + "/?$"), template)
                for template in (CREATE, EXECS, EXEC, CANCEL, TERMINATE))


def _bad(message: str, code: str = "invalid_request") -> GatewayHTTPError:
    return GatewayHTTPError(400, code, message)


def _number(data: Mapping[str, Any], key: str, default: float | None) -> float | None:
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise _bad(f"'{key}' must be a positive number")
    return float(value)


def _text(data: Mapping[str, Any], key: str, limit: int = MAX_TEXT) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit or "\x00" in value or not _encodable(value):
        raise _bad(f"'{key}' must be a string of at most {limit} characters (UTF-8, no NUL)")
    return value


def _encodable(value: str) -> bool:
    """False for text with lone surrogates, which JSON allows and UTF-8 (paths, argv) does not."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sandbox_spec(data: Mapping[str, Any], cfg: SandboxConfig) -> SandboxSpec:
    """A create body as the engine uses it: sizes and times clamped to the operator's limits (or 400)."""
    image = _text(data, "image") or ""
    if cfg.images and image not in cfg.images:
        raise _bad(f"image {image!r} is not offered here; this gateway runs commands on its own system and "
                   f"accepts the image names {', '.join(cfg.images)}", "image_not_allowed")
    persistent = data.get("persistentFilesystem", False)
    if not isinstance(persistent, bool):
        raise _bad("'persistentFilesystem' must be true or false")
    memory = _number(data, "memoryMiB", 5120) or 5120
    disk = _number(data, "diskMiB", None)
    lifetime = (_number(data, "timeoutMs", cfg.max_lifetime * 1000) or 0) / 1000
    idle = (_number(data, "idleTimeoutMs", 300_000) or 0) / 1000
    return SandboxSpec(
        image=image, cwd=_text(data, "cwd", 4096), cpu=min(_number(data, "cpu", 1.0) or 1.0, 1024.0),
        memory_mib=max(MIN_MEMORY_MIB, min(int(memory), cfg.max_memory_mib)),
        disk_mib=None if disk is None else max(1, min(int(disk), cfg.max_file_mib)),
        lifetime=max(1.0, min(lifetime, cfg.max_lifetime)), idle=max(1.0, min(idle, cfg.max_idle)),
        persistent=persistent, logical_key=_text(data, "logicalKey", 256) or "")


def exec_spec(data: Mapping[str, Any], cfg: SandboxConfig) -> ExecSpec:
    """An exec body as the engine uses it (or 400 naming the field)."""
    exec_id = data.get("execId")
    if exec_id is None:
        exec_id = str(uuid.uuid4())
    if not isinstance(exec_id, str) or not _ID.match(exec_id):
        raise _bad("'execId' must be 1-128 letters, digits, '_', '.', ':' or '-' (a UUID is usual)")
    command = data.get("command")
    if isinstance(command, list):
        raise _bad("'command' must be one shell command line (a string), not a list")
    if not isinstance(command, str) or not command.strip() or len(command) > MAX_COMMAND or "\x00" in command \
            or not _encodable(command):
        raise _bad(f"'command' must be a non-empty string of at most {MAX_COMMAND} characters (UTF-8, no NUL)")
    stdin = data.get("stdinData")
    if stdin is not None and not isinstance(stdin, str):
        raise _bad("'stdinData' must be a string")
    timeout = _number(data, "timeoutMs", cfg.default_exec_timeout * 1000) or 0
    return ExecSpec(exec_id=exec_id, command=command, cwd=_text(data, "cwd", 4096),
                    timeout=max(0.001, min(timeout / 1000, cfg.max_exec_timeout)),
                    stdin=stdin.encode("utf-8", errors="surrogatepass") if stdin is not None else None)


class ModalRelay(Relay):
    """Sandboxes and their commands on the gateway host (the ``local`` engine)."""

    label = "modal"
    category = "modal"
    token_sources = ("bearer",)

    def __init__(self, gateway: Gateway) -> None:
        cfg = gateway.config.modal
        self.settings = cfg
        self.engine = SandboxEngine(cfg, cfg.root or gateway.config.state_dir / "sandboxes")
        super().__init__(gateway)

    def operations(self) -> Sequence[Operation]:
        return (Operation("POST", CREATE, "create", self.create),
                Operation("POST", EXECS, "exec", self.start_exec),
                Operation("GET", EXEC, "exec_status", self.exec_status, units=0),
                Operation("POST", CANCEL, "cancel", self.cancel, units=0),
                Operation("POST", TERMINATE, "terminate", self.terminate, units=0))

    def match(self, path: str, method: str) -> Operation:
        for pattern, template in _ROUTES:
            if pattern.match(path):
                return super().match(template, method)
        raise GatewayHTTPError(404, "not_found", f"the {self.label} relay has no {path} endpoint")

    def backend(self, operation: str) -> str:
        return self.settings.backend

    async def aclose(self) -> None:
        await self.engine.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a sandbox held here; forward a request for one another process holds (peers)."""
        gw = self.gateway

        async def holder() -> str | None:
            parts = str(scope["path"]).strip("/").split("/")
            if len(parts) < 3 or parts[:2] != ["v1", "sandboxes"] or self.engine.store.knows(parts[2]):
                return None
            principal = await gw.auth.authenticate_async(extract_token(Headers(scope=scope), self.token_sources))
            return await gw.peers.holder("sandbox", parts[2], principal.user.uid)

        await gw.peers.serve(scope, receive, send, super().__call__, find=holder, what="sandbox",
                             limit=self.max_request_bytes())

    # -- operations ----------------------------------------------------------------------------------
    @staticmethod
    def _ids(call: RelayCall) -> list[str]:
        return call.path.strip("/").split("/")

    async def create(self, call: RelayCall) -> RelayResult:
        spec = sandbox_spec(call.json(), self.settings)
        key = call.headers.get("x-idempotency-key", "").strip()
        if len(key) > 200:
            raise _bad("'x-idempotency-key' must be at most 200 characters")
        sandbox = await self.engine.create(call.principal.user.uid, spec, key or None)
        await self.gateway.peers.hold("sandbox", sandbox.id, call.principal.user.uid,
                                      sandbox.spec.lifetime + self.settings.tombstone_seconds)
        return RelayResult.of_json(sandbox.view())

    async def start_exec(self, call: RelayCall) -> RelayResult:
        sandbox_id = self._ids(call)[2]
        spec = exec_spec(call.json(), self.settings)
        ex = await self.engine.start_exec(call.principal.user.uid, sandbox_id, spec)
        await self.engine.wait(ex, min(self.settings.exec_wait, call.deadline - time.monotonic() - 1.0))
        return RelayResult.of_json({"sandboxId": sandbox_id, **ex.view()})

    async def exec_status(self, call: RelayCall) -> RelayResult:
        parts = self._ids(call)
        ex = self.engine.exec(call.principal.user.uid, parts[2], parts[4])
        self.engine.sandbox(call.principal.user.uid, parts[2]).touch()
        return RelayResult.of_json({"sandboxId": parts[2], **ex.view()})

    async def cancel(self, call: RelayCall) -> RelayResult:
        parts = self._ids(call)
        ex = await self.engine.cancel(call.principal.user.uid, parts[2], parts[4])
        return RelayResult.of_json({"sandboxId": parts[2], **ex.view()})

    async def terminate(self, call: RelayCall) -> RelayResult:
        snapshot = call.json().get("snapshotBeforeTerminate")
        if snapshot is not None and not isinstance(snapshot, bool):
            raise _bad("'snapshotBeforeTerminate' must be true or false")
        sandbox = await self.engine.terminate(call.principal.user.uid, self._ids(call)[2], snapshot)
        return RelayResult.of_json(sandbox.view())


def openapi_paths(errors: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """The relay's endpoints under ``/relay/modal`` for the OpenAPI document."""
    def ok(schema: dict[str, Any]) -> dict[str, Any]:
        return {"description": "OK", "content": {"application/json": {"schema": schema}}}

    def body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {"required": bool(required), "content": {"application/json": {"schema": {
            "type": "object", "required": required, "properties": properties}}}}

    num, text = {"type": "number", "exclusiveMinimum": 0}, {"type": "string"}
    sandbox = {"type": "object", "required": ["id", "status"], "properties": {
        "id": text, "status": {"type": "string", "enum": ["running", "terminated"]}, "image": text, "cwd": text,
        "logicalKey": text, "persistentFilesystem": {"type": "boolean"}, "persisted": {"type": "boolean"},
        "cpu": num, "memoryMiB": num, "diskMiB": num, "timeoutMs": num, "idleTimeoutMs": num, "createdAt": text}}
    execution = {"type": "object", "required": ["execId", "status", "output"], "properties": {
        "sandboxId": text, "execId": text, "output": text, "truncated": {"type": "boolean"},
        "outputDropped": {"type": "boolean"},
        "status": {"type": "string", "enum": ["running", "completed", "failed", "cancelled", "timeout"]},
        "returncode": {"type": ["integer", "null"]}, "startedAt": text, "finishedAt": {"type": ["string", "null"]}}}
    sid = {"name": "id", "in": "path", "required": True, "schema": {"type": "string", "pattern": _ID.pattern}}
    eid = {**sid, "name": "execId"}
    secured: dict[str, Any] = {"security": [{"gatewayToken": []}]}
    fails = errors(400, 401, 402, 403, 404, 409, 413, 429, 503)
    return {
        "/relay/modal/v1/sandboxes": {"post": {
            **secured, "summary": "Create a sandbox (also on modal-gateway.<domain>)",
            "parameters": [{"name": "x-idempotency-key", "in": "header",
                            "schema": {"type": "string", "maxLength": 200}}],
            "requestBody": body({"image": text, "cwd": text, "cpu": num, "memoryMiB": num, "diskMiB": num,
                                 "timeoutMs": num, "idleTimeoutMs": num, "persistentFilesystem": {"type": "boolean"},
                                 "logicalKey": text}, []),
            "responses": {"200": ok(sandbox), **fails}}},
        "/relay/modal/v1/sandboxes/{id}/execs": {"post": {
            **secured, "summary": "Run a shell command line in the sandbox", "parameters": [sid],
            "requestBody": body({"execId": text, "command": text, "cwd": text, "timeoutMs": num,
                                 "stdinData": text}, ["command"]),
            "responses": {"200": ok(execution), **fails}}},
        "/relay/modal/v1/sandboxes/{id}/execs/{execId}": {"get": {
            **secured, "summary": "An exec's status and output", "parameters": [sid, eid],
            "responses": {"200": ok(execution), **fails}}},
        "/relay/modal/v1/sandboxes/{id}/execs/{execId}/cancel": {"post": {
            **secured, "summary": "Kill a running exec", "parameters": [sid, eid],
            "responses": {"200": ok(execution), **fails}}},
        "/relay/modal/v1/sandboxes/{id}/terminate": {"post": {
            **secured, "summary": "End the sandbox: kill its processes, delete (or keep) its folder",
            "parameters": [sid], "requestBody": body({"snapshotBeforeTerminate": {"type": "boolean"}}, []),
            "responses": {"200": ok(sandbox), **fails}}},
    }


__all__ = ["ModalRelay", "exec_spec", "openapi_paths", "sandbox_spec"]
