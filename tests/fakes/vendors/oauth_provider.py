"""An OAuth2 provider on loopback for the connector connect flow (authorization code + PKCE, refresh).

One registered client (``client_id``/``client_secret``, its one ``redirect_uri``). ``GET /authorize``
approves at once as :attr:`Provider.login` (the person "clicks allow") and sends the browser back with
a code; ``POST /token`` exchanges it (client secret in the body, S256 verifier checked, code single
use) or a refresh token (rotated: the old refresh and access tokens stop working); ``GET /userinfo``
answers ``{"email": …}``. Access tokens open mailboxes of the Gmail-like app: they are written into
``mailboxes`` (the :class:`MailApp`'s token table) and removed when they lapse (:meth:`expire_all`).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class Provider:
    def __init__(self, mailboxes: dict[str, str], *, client_id: str, client_secret: str, redirect_uri: str,
                 ttl: int = 3600) -> None:
        self.mailboxes = mailboxes
        self.client_id, self.client_secret, self.redirect_uri, self.ttl = client_id, client_secret, redirect_uri, ttl
        self.login = "alice@work.example"
        self.codes: dict[str, dict[str, str]] = {}
        self.refresh: dict[str, str] = {}  # refresh token -> mailbox
        self.access_of: dict[str, str] = {}  # refresh token -> its access token
        self.stats = {"codes": 0, "refreshes": 0, "refused": 0}
        self.authorize_queries: list[dict[str, str]] = []

    def expire_all(self) -> None:
        """Every access token lapses at the provider (and so at the app); refresh tokens stay good."""
        for token in list(self.access_of.values()):
            self.mailboxes.pop(token, None)

    def _issue(self, mailbox: str) -> dict[str, Any]:
        access, refresh = "at-" + secrets.token_hex(12), "rt-" + secrets.token_hex(12)
        self.mailboxes[access] = mailbox
        self.refresh[refresh] = mailbox
        self.access_of[refresh] = access
        return {"access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": self.ttl}

    def _refuse(self, error: str) -> JSONResponse:
        self.stats["refused"] += 1
        return JSONResponse({"error": error, "error_description": f"refused: {error}"}, 400)

    async def authorize(self, request: Request) -> Response:
        q = dict(request.query_params)
        self.authorize_queries.append(q)
        if q.get("client_id") != self.client_id or q.get("redirect_uri") != self.redirect_uri:
            return JSONResponse({"error": "unknown client or redirect_uri"}, 400)
        if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or not q.get("state"):
            return JSONResponse({"error": "PKCE S256 and state are required"}, 400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"challenge": q.get("code_challenge", ""), "mailbox": self.login,
                            "redirect_uri": q["redirect_uri"]}
        return RedirectResponse(f"{self.redirect_uri}?{urlencode({'code': code, 'state': q['state']})}", 302)

    async def token(self, request: Request) -> JSONResponse:
        form = dict(await request.form())
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return self._refuse("invalid_client")
        if form.get("grant_type") == "authorization_code":
            grant = self.codes.pop(str(form.get("code")), None)
            if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
                return self._refuse("invalid_grant")
            if _s256(str(form.get("code_verifier", ""))) != grant["challenge"]:
                return self._refuse("invalid_grant")
            self.stats["codes"] += 1
            return JSONResponse(self._issue(grant["mailbox"]))
        if form.get("grant_type") == "refresh_token":
            old = str(form.get("refresh_token"))
            mailbox = self.refresh.pop(old, None)
            if mailbox is None:
                return self._refuse("invalid_grant")
            self.mailboxes.pop(self.access_of.pop(old, ""), None)
            self.stats["refreshes"] += 1
            return JSONResponse(self._issue(mailbox))
        return self._refuse("unsupported_grant_type")

    async def userinfo(self, request: Request) -> JSONResponse:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        mailbox = self.mailboxes.get(token)
        if mailbox is None:
            return JSONResponse({"error": "invalid_token"}, 401)
        return JSONResponse({"email": mailbox, "sub": hashlib.sha256(mailbox.encode()).hexdigest()[:12]})

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/authorize", self.authorize), Route("/token", self.token, methods=["POST"]),
                                 Route("/userinfo", self.userinfo)])
