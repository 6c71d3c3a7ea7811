"""Microsoft Teams over the Bot Framework activity protocol (HTTPS), with httpx and PyJWT.

Written from the Bot Framework REST API and authentication docs. Teams posts each activity to the
bot's endpoint (``POST /api/messages`` here, served from the gateway's loop). Every request must carry
``Authorization: Bearer JWT`` signed by the Bot Framework: the keys come from the OpenID metadata
(``openid_url`` → ``jwks_uri``), the token must be RS256, for this app (``aud`` = the app id), from
``https://api.botframework.com``, and its ``serviceurl`` claim must equal the activity's ``serviceUrl``
— the only place replies (and the bot's own token) are ever sent. Anything else gets 401.

A ``message`` activity becomes a message: ``conversationType`` ``personal`` is a direct conversation;
an ``<at>`` mention of the bot addresses it (and is removed from the text); a channel's reply chain
has a conversation id of its own, so it is its own conversation. Buttons are a hero card of
``messageBack`` buttons (a press arrives as a message with the choice's text and a ``value``).
Replies: ``POST {serviceUrl}/v3/conversations/{id}/activities`` (text, typing), ``PUT …/{activityId}``
to edit, with an app token from ``token_url`` (client credentials). Files are not sent (Teams wants a
consent card flow for them).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hermes.surfaces.messaging.adapter import Deliver, Inbound, PlatformAdapter, PlatformError, close_connections
from hermes.surfaces.messaging.platforms.httpserve import AppServer

if TYPE_CHECKING:
    import httpx
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

logger = logging.getLogger(__name__)

OPENID_URL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
TOKEN_URL = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"
ISSUER = "https://api.botframework.com"
SCOPE = "https://api.botframework.com/.default"
KEYS_TTL = 24 * 3600.0


class TeamsAdapter(PlatformAdapter):
    name = "teams"
    max_text = 28000
    supports_buttons = True
    supports_files = False

    def __init__(self, app_id: str, app_password: str, *, host: str = "127.0.0.1", port: int = 3978,
                 openid_url: str = OPENID_URL, token_url: str = TOKEN_URL, name: str = "teams") -> None:
        super().__init__()
        self.name = name
        self.app_id, self._password = app_id, app_password
        self.openid_url, self.token_url = openid_url, token_url
        self._serving = AppServer(name, host, port)
        self._http: httpx.AsyncClient | None = None
        self._deliver: Deliver | None = None
        self._keys: dict[str, Any] = {}
        self._keys_at = 0.0
        self._token = ("", 0.0)
        #: conversation id → the serviceUrl its (verified) activities came from
        self._service: dict[str, str] = {}

    @property
    def port(self) -> int:
        return self._serving.port

    async def connect(self) -> None:
        import httpx
        from starlette.applications import Starlette
        from starlette.routing import Route

        self._http = httpx.AsyncClient(timeout=30.0)
        await self._signing_keys(refresh=True)  # fail now, not on the first message, when they cannot be read
        self._serving.start(Starlette(routes=[Route("/api/messages", self._activity, methods=["POST"])]))

    async def listen(self, deliver: Deliver) -> None:
        self._deliver = deliver
        await self._serving.serve()

    async def close(self) -> None:
        await self._serving.stop()
        http, self._http = self._http, None
        await close_connections(None, http)

    # -- inbound -------------------------------------------------------------------------------------

    async def _signing_keys(self, refresh: bool = False) -> dict[str, Any]:
        import jwt

        if self._keys and not refresh and time.monotonic() - self._keys_at < KEYS_TTL:
            return self._keys
        assert self._http is not None
        try:
            meta = (await self._http.get(self.openid_url)).json()
            found = (await self._http.get(str(meta["jwks_uri"]))).json()
            keys = {str(k["kid"]): jwt.PyJWK(k).key for k in found["keys"]}
        except Exception as exc:
            raise PlatformError(f"{self.name}: cannot read the Bot Framework signing keys: "
                                f"{type(exc).__name__}") from exc
        self._keys, self._keys_at = keys, time.monotonic()
        return keys

    async def _verified(self, request: HttpRequest, activity: dict[str, Any]) -> bool:
        import jwt

        header = request.headers.get("authorization", "")
        token = header[7:] if header[:7].lower() == "bearer " else ""
        if not token:
            return False
        try:
            kid = str(jwt.get_unverified_header(token).get("kid"))
            keys = await self._signing_keys()
            if kid not in keys:
                keys = await self._signing_keys(refresh=True)
            claims = jwt.decode(token, keys[kid], algorithms=["RS256"], audience=self.app_id, issuer=ISSUER)
        except (jwt.PyJWTError, KeyError, PlatformError) as exc:
            logger.warning("%s: refused an activity: %s", self.name, type(exc).__name__)
            return False
        return bool(claims.get("serviceurl")) and claims.get("serviceurl") == activity.get("serviceUrl")

    async def _activity(self, request: HttpRequest) -> Response:
        from starlette.responses import JSONResponse, Response

        try:
            activity = json.loads(await request.body())
            if not isinstance(activity, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self.malformed(str(exc), "")
            return JSONResponse({"error": "the body is not an activity"}, status_code=400)
        if not await self._verified(request, activity):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        try:
            msg = self._inbound(activity)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.malformed(f"{type(exc).__name__}: {exc}", activity)
            return JSONResponse({"error": "malformed activity"}, status_code=400)
        if msg is not None and self._deliver is not None:
            await self._deliver(msg)
        return Response(status_code=200)

    def _inbound(self, activity: dict[str, Any]) -> Inbound | None:
        if activity["type"] != "message":
            return None  # conversationUpdate, typing, invoke …
        conversation, sender = activity["conversation"], activity["from"]
        chat = str(conversation["id"])
        self._service[chat] = str(activity["serviceUrl"])
        text = str(activity.get("text") or "")
        bot = str((activity.get("recipient") or {}).get("id") or "")
        mentioned = any(e.get("type") == "mention" and str((e.get("mentioned") or {}).get("id")) == bot
                        for e in activity.get("entities") or [] if isinstance(e, dict))
        text = re.sub(r"<at>[^<]*</at>", "", text).strip() if mentioned else text.strip()
        value = activity.get("value")
        pressed = isinstance(value, dict) and "hc" in value
        direct = conversation.get("conversationType") == "personal"
        return Inbound(platform=self.name, chat=chat, user=str(sender.get("aadObjectId") or sender["id"]),
                       user_name=str(sender.get("name") or ""), text=text, direct=direct,
                       mentioned=direct or mentioned or pressed, button=pressed,
                       message_id=str(activity.get("id") or ""),
                       card=str(activity.get("replyToId") or "") if pressed else "")

    # -- outbound -------------------------------------------------------------------------------------

    async def _bearer(self) -> str:
        token, until = self._token
        if token and time.monotonic() < until:
            return token
        assert self._http is not None
        response = await self._http.post(self.token_url, data={
            "grant_type": "client_credentials", "client_id": self.app_id, "client_secret": self._password,
            "scope": SCOPE})
        data = response.json() if response.content else {}
        if response.status_code >= 400 or not data.get("access_token"):
            raise PlatformError(f"{self.name}: the app token was refused (HTTP {response.status_code})")
        self._token = (str(data["access_token"]), time.monotonic() + float(data.get("expires_in", 3600)) - 300)
        return self._token[0]

    async def _post(self, method: str, chat: str, suffix: str, activity: dict[str, Any]) -> dict[str, Any]:
        import httpx

        service = self._service.get(chat)
        if service is None or self._http is None:
            raise PlatformError(f"{self.name}: no verified conversation {chat!r} to answer in")
        url = f"{service.rstrip('/')}/v3/conversations/{chat}/activities{suffix}"
        try:
            response = await self._http.request(method, url, json=activity,
                                                headers={"Authorization": f"Bearer {await self._bearer()}"})
        except httpx.HTTPError as exc:
            raise PlatformError(f"{self.name}: {type(exc).__name__} sending to the conversation") from exc
        if response.status_code >= 400:
            raise PlatformError(f"{self.name}: the connector answered HTTP {response.status_code}")
        return dict(response.json()) if response.content else {}

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        sent = await self._post("POST", chat, "", {"type": "message", "text": text, "textFormat": "plain"})
        return str(sent.get("id") or "")

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        card = {"contentType": "application/vnd.microsoft.card.hero", "content": {"text": text, "buttons": [
            {"type": "messageBack", "title": c, "text": c, "displayText": c, "value": {"hc": i}}
            for i, c in enumerate(choices)]}}
        sent = await self._post("POST", chat, "", {"type": "message", "attachments": [card]})
        return str(sent.get("id") or "")

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        await self._post("PUT", chat, f"/{message_id}", {"type": "message", "id": message_id, "text": text,
                                                          "textFormat": "plain"})

    async def typing(self, chat: str, thread: str = "") -> None:
        await self._post("POST", chat, "", {"type": "typing"})
