"""The ``modal`` backend: a sandbox behind the Tool Gateway's ``modal`` relay (managed Modal, or a
self-hosted gateway's engine), spoken exactly as the upstream client speaks it.

Where it calls and with which token is decided like every gateway route
(:func:`hermes.routing.terminal.modal_access`: ``MODAL_GATEWAY_URL`` or the advertised or derived
``modal-gateway`` origin, the entitlement for ``modal``, the token-origin guard) at the first request of
the task; no direct Modal SDK path exists (it cannot be exercised here).

One sandbox per task: created on the first command (``POST /v1/sandboxes``, with an idempotency key),
reused by every later command and file request, terminated when the session ends unless
``terminal.keep_sandbox`` is true. A command is ``POST …/execs`` and, while it runs, ``GET …/execs/ID``
polls. Settings (``terminal.modal.*``): ``image`` (``python:3.11``), ``cpu`` (1), ``memory_mib`` (2048),
``lifetime`` (3600 s), ``idle_timeout`` (300 s), ``cwd``. Files go through the sandbox's shell
(:mod:`.shellfs`): the relay has no file API.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes.tools.asyncbridge import run_sync
from hermes.tools.backends.base import CLIENT_GRACE, DEFAULT_MAX_CHARS, BackendError, ByteCap, ExecResult, shell_line
from hermes.tools.backends.shellfs import ShellFilesBackend

if TYPE_CHECKING:
    from pathlib import Path

    import httpx

#: the most bytes of one relay answer read
MAX_ANSWER = 64 * 1024 * 1024
DEFAULT_IMAGE = "python:3.11"


class ModalBackend(ShellFilesBackend):
    """Commands and files in one gateway sandbox (see the module docstring)."""

    name = "modal"
    isolated = True

    def __init__(self, settings: Mapping[str, Any]) -> None:
        super().__init__(settings)
        self.origin: str | None = None
        self._where: tuple[Mapping[str, Any], dict[str, str], Path] | None = None  # config, env, auth.json
        self.sandbox_id: str | None = None
        self._client: httpx.AsyncClient | None = None

    def describe(self) -> str:
        where = self.origin or "the Tool Gateway"
        return f"modal sandbox {self.sandbox_id or '(not started)'} via {where}"

    # -- the gateway -------------------------------------------------------------------------------------
    def _access(self) -> tuple[str, str]:
        """The relay's origin and the token to send, read again for every request: a portal login expires
        (hourly on our gateway) during a long session, and :func:`fresh_credentials` renews it before use —
        under the auth.json lock, so parallel tasks renew it once."""
        from hermes.errors import GatewayError
        from hermes.routing.portal_auth import fresh_credentials
        from hermes.routing.terminal import modal_access

        if self._where is None:
            from hermes.config.settings import Settings

            settings = Settings.load()
            self._where = (settings.config.data, settings.env.as_dict(), settings.paths.auth)
        config, env, auth = self._where
        try:
            self.origin, token = modal_access(config, env, fresh_credentials(auth, env))
        except GatewayError as exc:
            raise BackendError(str(exc)) from None
        return self.origin, token

    async def _request(self, method: str, path: str, body: Any = None, timeout: float = 60.0,
                       headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        import httpx

        from hermes.net.http import send_request

        origin, token = self._access()
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        try:
            answer = await send_request(self._client, method, f"{origin}{path}", max_bytes=MAX_ANSWER, timeout=timeout,
                                        json=body, headers={"authorization": f"Bearer {token}", **(headers or {})})
        except httpx.HTTPError as exc:
            raise BackendError(f"the modal relay at {origin} cannot be reached: {exc}") from None
        import json

        try:
            data = json.loads(answer.body or b"{}")
        except ValueError:
            data = {}
        if not answer.ok:
            detail = data.get("error") if isinstance(data, dict) else None
            if isinstance(detail, dict):
                detail = detail.get("message") or detail.get("code")
            raise BackendError(f"the modal relay at {origin} answered {answer.status}: {detail or 'no detail'}")
        if not isinstance(data, dict):
            raise BackendError(f"the modal relay at {origin} sent an answer that is not a JSON object")
        return data

    async def _sandbox(self) -> str:
        if self.sandbox_id is None:
            s = self.settings
            body = {"image": str(s.get("image") or DEFAULT_IMAGE), "cpu": float(s.get("cpu") or 1.0),
                    "memoryMiB": float(s.get("memory_mib") or 2048),
                    "timeoutMs": float(s.get("lifetime") or 3600) * 1000,
                    "idleTimeoutMs": float(s.get("idle_timeout") or 300) * 1000,
                    "persistentFilesystem": False, "logicalKey": "hermes-terminal"}
            if s.get("cwd"):
                body["cwd"] = str(s["cwd"])
            made = await self._request("POST", "/v1/sandboxes", body, headers={"x-idempotency-key": str(uuid.uuid4())})
            sandbox = made.get("id")
            if not isinstance(sandbox, str):
                raise BackendError("the modal relay created no sandbox id")
            self.sandbox_id = sandbox
        return self.sandbox_id

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True

        async def shut() -> None:
            try:
                if self.sandbox_id is not None and not self.keep:
                    await self._request("POST", f"/v1/sandboxes/{self.sandbox_id}/terminate",
                                        {"snapshotBeforeTerminate": False}, timeout=30)
            finally:
                if self._client is not None:
                    await self._client.aclose()
                    self._client = None

        try:
            run_sync(asyncio.wait_for(shut(), 40.0), 45.0)
        except (TimeoutError, BackendError):
            return

    # -- commands ------------------------------------------------------------------------------------------
    def exec(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, max_bytes: int = 4 * DEFAULT_MAX_CHARS) -> ExecResult:
        if self.closed:
            raise BackendError(f"{self.describe()}: this session's sandbox was closed")
        started = time.monotonic()
        line = shell_line(command, cwd, env or {}, timeout)

        async def go() -> dict[str, Any]:
            sandbox = await self._sandbox()
            body: dict[str, Any] = {"execId": str(uuid.uuid4()), "command": line,
                                    "timeoutMs": (timeout + 5) * 1000}
            if cwd:
                body["cwd"] = cwd
            if stdin:
                body["stdinData"] = stdin.decode("utf-8")
            answer = await self._request("POST", f"/v1/sandboxes/{sandbox}/execs", body, timeout=timeout + 30)
            delay = 0.05
            while answer.get("status") == "running":
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                answer = await self._request("GET", f"/v1/sandboxes/{sandbox}/execs/{body['execId']}")
            return answer

        answer = run_sync(asyncio.wait_for(go(), timeout + CLIENT_GRACE + 30), timeout + CLIENT_GRACE + 31)
        raw = str(answer.get("output") or "").encode("utf-8", "replace")
        cap = ByteCap(max_bytes)
        cap.add(raw)
        status = answer.get("status")
        code = answer.get("returncode")
        exit_code = code if isinstance(code, int) else None
        timed_out = status == "timeout" or (exit_code == 124 and time.monotonic() - started >= timeout - 0.5)
        if status == "failed" and not raw:
            raise BackendError(f"{self.describe()}: the command could not start")
        return ExecResult(cap.value(), cap.total + (1 if answer.get("truncated") else 0), exit_code,
                          time.monotonic() - started, timed_out=timed_out)
