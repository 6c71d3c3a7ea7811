"""The Feishu / Lark Open Platform (``open.feishu.cn``, ``open.larksuite.com``): app token and JSON calls.

Written from the Open Platform's server API docs and the lark-oapi SDK's request definitions. An app
(self-built, "custom app") calls the APIs with a tenant access token, got from its App ID and App
Secret (``POST /open-apis/auth/v3/tenant_access_token/internal``) and valid for ``expire`` seconds;
it is kept and renewed five minutes early. Every answer is JSON ``{"code": 0, "msg": "…", "data": …}``;
a non-zero ``code`` is an error whose ``msg`` says why (it becomes a :class:`FeishuError`). The long
connection's address comes from ``POST /callback/ws/endpoint`` with the App ID and Secret
(:meth:`FeishuApi.ws_endpoint`).

One :class:`FeishuApi` may be shared by several event loops (the gateway's and a tool's): it keeps no
connection of its own unless given one (``http``), only the token.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError

if TYPE_CHECKING:
    import httpx

FEISHU = "https://open.feishu.cn"
LARK = "https://open.larksuite.com"
#: renew the tenant token this long before it expires
RENEW_EARLY = 300.0


class FeishuError(HermesError):
    """The Feishu Open Platform refused or failed a call (its code and message, never a secret)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class WsEndpoint:
    url: str
    #: seconds between pings the server asks for (ClientConfig.PingInterval)
    ping_interval: float = 120.0


def text_content(text: str) -> str:
    """The ``content`` of a ``text`` message (a JSON string, as the message APIs want it)."""
    return json.dumps({"text": text}, ensure_ascii=False)


def rich_text(text: str) -> dict[str, Any]:
    """A comment reply's content: one text run (drive comment APIs)."""
    return {"elements": [{"type": "text_run", "text_run": {"text": text}}]}


def plain_of(content: Any) -> str:
    """The plain text of a comment reply's ``content`` (text runs, links and people joined)."""
    parts: list[str] = []
    for element in (content or {}).get("elements") or []:
        if not isinstance(element, dict):
            continue
        kind = element.get("type")
        if kind == "text_run":
            parts.append(str((element.get("text_run") or {}).get("text") or ""))
        elif kind == "docs_link":
            parts.append(str((element.get("docs_link") or {}).get("url") or ""))
        elif kind == "person":
            parts.append("@" + str((element.get("person") or {}).get("user_id") or ""))
    return "".join(parts)


class FeishuApi:
    """Calls the Open Platform as one app (module docstring)."""

    def __init__(self, app_id: str, app_secret: str, *, base_url: str = FEISHU,
                 http: httpx.AsyncClient | None = None, timeout: float = 30.0) -> None:
        self.app_id, self._secret = app_id, app_secret
        self.base_url = base_url.rstrip("/")
        self.http = http
        self.timeout = timeout
        self._token = ("", 0.0)

    async def _request(self, method: str, path: str, token: str | None, **kw: Any) -> httpx.Response:
        import httpx

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        url = f"{self.base_url}{path}"
        try:
            if self.http is not None:
                return await self.http.request(method, url, headers=headers, **kw)
            async with httpx.AsyncClient(timeout=self.timeout) as http:
                return await http.request(method, url, headers=headers, **kw)
        except httpx.HTTPError as exc:
            raise FeishuError(f"feishu {path}: {type(exc).__name__}") from exc

    async def _send(self, method: str, path: str, *, token: str | None, **kw: Any) -> Any:
        response = await self._request(method, path, token, **kw)
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise FeishuError(f"feishu {path}: HTTP {response.status_code} without a JSON answer")
        code = int(data.get("code") or 0)
        if code != 0 or response.status_code >= 400:
            raise FeishuError(f"feishu {path}: {data.get('msg') or 'failed'} (code {code}, HTTP "
                              f"{response.status_code})", code)
        return data

    async def token(self) -> str:
        """The tenant access token (asked for again when it is about to expire)."""
        token, until = self._token
        if token and time.monotonic() < until:
            return token
        data = await self._send("POST", "/open-apis/auth/v3/tenant_access_token/internal", token=None,
                                json={"app_id": self.app_id, "app_secret": self._secret})
        token = str(data.get("tenant_access_token") or "")
        if not token:
            raise FeishuError("feishu: no tenant_access_token in the answer")
        self._token = (token, time.monotonic() + float(data.get("expire") or 7200) - RENEW_EARLY)
        return token

    async def call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                   body: dict[str, Any] | None = None, files: dict[str, Any] | None = None,
                   form: dict[str, str] | None = None) -> dict[str, Any]:
        """One API call as the app; returns the answer's ``data`` (``{}`` when it has none)."""
        kw: dict[str, Any] = {}
        if params:
            kw["params"] = {k: str(v).lower() if isinstance(v, bool) else v for k, v in params.items()
                            if v is not None and v != ""}
        if files is not None:
            kw["files"], kw["data"] = files, form or {}
        elif body is not None:
            kw["json"] = body
        data = await self._send(method, path, token=await self.token(), **kw)
        found = data.get("data")
        if found is None:  # a few APIs answer at the top level (bot/v3/info)
            return {k: v for k, v in data.items() if k not in ("code", "msg")}
        return dict(found) if isinstance(found, dict) else {"value": found}

    async def download(self, path: str, *, params: dict[str, Any] | None = None,
                       max_bytes: int = 25 * 1024 * 1024) -> bytes:
        """The bytes of a resource (a message's file or audio); FeishuError on a JSON error answer."""
        response = await self._request("GET", path, await self.token(), params=params)
        if response.status_code >= 400 or response.headers.get("content-type", "").startswith("application/json"):
            raise FeishuError(f"feishu {path}: the resource could not be downloaded (HTTP {response.status_code})")
        if len(response.content) > max_bytes:
            raise FeishuError(f"feishu {path}: the resource is larger than {max_bytes} bytes")
        return bytes(response.content)

    async def ws_endpoint(self) -> WsEndpoint:
        """Where the long connection is opened, and how often to ping it."""
        data = await self._send("POST", "/callback/ws/endpoint", token=None,
                                json={"AppID": self.app_id, "AppSecret": self._secret})
        found = data.get("data") or {}
        url = str(found.get("URL") or "")
        if not url:
            raise FeishuError("feishu: the long-connection endpoint answer has no URL")
        config = found.get("ClientConfig") or {}
        return WsEndpoint(url, float(config.get("PingInterval") or 120))
