"""Microsoft Teams on loopback (written from the Bot Framework docs): the OpenID metadata and signing
keys, the token endpoint, the connector's conversation activities API — and the connector's side of
the webhook: each person's message is a signed activity POSTed to the bot's ``/api/messages``."""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

import httpx

from fakes.messaging import Driver, Posted
from fakes.messaging.servers import JsonHttp

APP_ID = "00000000-aaaa-bbbb-cccc-000000000001"
APP_PASSWORD = "teams-fake-app-password-do-not-log"
CHANNEL = "19:channel@thread.tacv2"
ISSUER = "https://api.botframework.com"


class TeamsDriver(Driver):
    name = "teams"
    group = CHANNEL
    supports_files = False
    secrets = (APP_PASSWORD,)
    thread_note = "a Teams reply chain has a conversation id of its own, so it is its own conversation already"
    reconnect_note = "Teams posts to the bot's webhook: there is no connection to drop"

    def __init__(self) -> None:
        super().__init__()
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ids = itertools.count(1)
        self.users: dict[str, str] = {}
        self.http = JsonHttp(self._answer)
        self.url = f"http://127.0.0.1:{self.http.port}"
        self.bot: Any = None
        self.tokens_issued = 0

    def _answer(self, method: str, path: str, headers: Any, raw: bytes) -> tuple[int, Any]:
        import jwt

        if path == "/openid":
            return 200, {"issuer": ISSUER, "jwks_uri": f"{self.url}/keys"}
        if path == "/keys":
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            return 200, {"keys": [{**jwk, "kid": "k1", "use": "sig"}]}
        if path == "/token":
            form = dict(p.split("=", 1) for p in raw.decode().split("&"))
            if form.get("client_secret") != APP_PASSWORD or form.get("client_id") != APP_ID:
                return 401, {"error": "invalid_client"}
            self.tokens_issued += 1
            return 200, {"access_token": "connector-token", "expires_in": 3600, "token_type": "Bearer"}
        if headers.get("Authorization") != "Bearer connector-token":
            return 401, {"message": "Authorization has been denied"}
        if m := re.fullmatch(r"/v3/conversations/([^/]+)/activities(?:/([^/]+))?", path):
            chat, activity_id = m.group(1), m.group(2)
            body = json.loads(raw)
            if body["type"] == "typing":
                return 200, {}
            if activity_id:
                self.record(Posted("edit", chat, str(body.get("text")), "", activity_id))
                return 200, {"id": activity_id}
            new_id = str(next(self.ids))
            if body.get("attachments"):
                card = body["attachments"][0]["content"]
                self.record(Posted("buttons", chat, card["text"], "", new_id, card["buttons"]))
            else:
                self.record(Posted("text", chat, str(body.get("text")), "", new_id))
            return 201, {"id": new_id}
        return 404, {"message": "not found"}

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.teams import TeamsAdapter

        self.bot = TeamsAdapter(APP_ID, APP_PASSWORD, port=0, openid_url=f"{self.url}/openid",
                                token_url=f"{self.url}/token")
        return self.bot

    def signed(self, service_url: str | None = None, **claims: Any) -> str:
        import jwt

        now = int(time.time())
        payload = {"iss": ISSUER, "aud": APP_ID, "serviceurl": service_url or self.url, "nbf": now - 5,
                   "exp": now + 600, **claims}
        return jwt.encode(payload, self.key, algorithm="RS256", headers={"kid": "k1"})

    def post(self, activity: dict[str, Any] | bytes, token: str | None = None) -> httpx.Response:
        content = activity if isinstance(activity, bytes) else json.dumps(activity).encode()
        return httpx.post(f"http://127.0.0.1:{self.bot.port}/api/messages", content=content,
                          headers={"Authorization": f"Bearer {token or self.signed()}",
                                   "Content-Type": "application/json"})

    def _user(self, name: str) -> dict[str, Any]:
        uid = self.users.setdefault(name, f"29:{name}-id")
        return {"id": uid, "name": name.title(), "aadObjectId": f"aad-{name}"}

    def dm_chat(self, user: str) -> str:
        return f"a:personal-{user}"

    def allowed(self, users: list[str]) -> list[str]:
        return [f"aad-{u}" for u in users]

    def activity(self, user: str, text: str, *, direct: bool, mention: bool) -> dict[str, Any]:
        conversation = ({"id": self.dm_chat(user), "conversationType": "personal"} if direct
                        else {"id": CHANNEL, "conversationType": "channel"})
        body: dict[str, Any] = {"type": "message", "id": str(next(self.ids)), "serviceUrl": self.url,
                                "from": self._user(user), "conversation": conversation,
                                "recipient": {"id": f"28:{APP_ID}", "name": "hermes"}, "text": text}
        if mention and not direct:
            body["text"] = f"<at>hermes</at> {text}"
            body["entities"] = [{"type": "mention", "mentioned": {"id": f"28:{APP_ID}", "name": "hermes"},
                                 "text": "<at>hermes</at>"}]
        return body

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        answer = self.post(self.activity(user, text, direct=direct, mention=mention))
        assert answer.status_code == 200, answer.text

    def press(self, user: str, post: Posted, choice: str) -> None:
        button = next(b for b in post.extra if b["title"] == choice)
        body = self.activity(user, button["text"], direct=post.chat.startswith("a:"), mention=False)
        body["conversation"]["id"] = post.chat
        body["value"] = button["value"]
        assert self.post(body).status_code == 200

    def malformed(self) -> None:
        assert self.post(b"{not json").status_code == 400
        assert self.post({"type": "message", "serviceUrl": self.url, "text": "no conversation"}).status_code == 400

    def close(self) -> None:
        self.http.close()
