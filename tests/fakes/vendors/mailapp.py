"""A Gmail-like REST app on loopback and its OpenAPI document: what a gateway operator adds as a file.

Each bearer token is one mailbox (``tokens``: token → address). ``GET /mail/v1/messages?q=`` searches
it, ``GET /mail/v1/messages/{id}`` reads one, ``POST /mail/v1/messages`` sends, and
``GET /mail/v1/slow`` holds its answer until :attr:`MailApp.release` is set (the deadline tests).
Every request's token is recorded in :attr:`MailApp.seen_tokens`.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def document(base_url: str) -> dict[str, Any]:
    """The app's OpenAPI 3.1 document (operationIds become the connector's actions)."""
    message = {"type": "object", "properties": {"id": {"type": "string"}, "subject": {"type": "string"}}}
    return {
        "openapi": "3.1.0", "info": {"title": "Mail", "version": "1"}, "servers": [{"url": base_url}],
        "components": {"schemas": {"Message": message}},
        "paths": {
            "/mail/v1/messages": {
                "get": {"operationId": "search_messages", "summary": "Search the mailbox for messages",
                        "parameters": [{"name": "q", "in": "query", "required": True, "description": "words to find",
                                        "schema": {"type": "string"}},
                                       {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}],
                        "responses": {"200": {"description": "found"}}},
                "post": {"operationId": "send_message", "summary": "Send a message",
                         "requestBody": {"required": True, "content": {"application/json": {"schema": {
                             "type": "object", "required": ["to", "subject"],
                             "properties": {"to": {"type": "string"}, "subject": {"type": "string"},
                                            "body": {"type": "string"}}}}}},
                         "responses": {"200": {"description": "sent"}}},
            },
            "/mail/v1/messages/{id}": {
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "get": {"operationId": "get_message", "summary": "Read one message",
                        "responses": {"200": {"description": "the message",
                                              "content": {"application/json": {"schema": {
                                                  "$ref": "#/components/schemas/Message"}}}}}},
            },
            "/mail/v1/slow": {"get": {"operationId": "slow_report", "summary": "A report that takes long",
                                      "responses": {"200": {"description": "done"}}}},
            "/mail/v1/health": {"get": {"summary": "no operationId: not an action"}},
        },
    }


class MailApp:
    def __init__(self, tokens: dict[str, str]) -> None:
        self.tokens = dict(tokens)
        self.seen_tokens: list[str] = []
        self.sent: list[dict[str, Any]] = []
        self.release = threading.Event()

    def _mailbox(self, request: Request) -> str | None:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        self.seen_tokens.append(token)
        return self.tokens.get(token)

    async def search(self, request: Request) -> JSONResponse:
        box = self._mailbox(request)
        if box is None:
            return JSONResponse({"error": "invalid token"}, 401)
        q = request.query_params.get("q", "")
        return JSONResponse({"mailbox": box, "query": q,
                             "messages": [{"id": "m1", "subject": f"{q} for {box}"}]})

    async def get(self, request: Request) -> JSONResponse:
        box = self._mailbox(request)
        if box is None:
            return JSONResponse({"error": "invalid token"}, 401)
        ident = request.path_params["id"]
        if ident != "m1":
            return JSONResponse({"error": f"no message {ident}"}, 404)
        return JSONResponse({"id": ident, "subject": f"hello {box}"})

    async def send(self, request: Request) -> JSONResponse:
        box = self._mailbox(request)
        if box is None:
            return JSONResponse({"error": "invalid token"}, 401)
        sent = {"from": box, **(await request.json())}
        self.sent.append(sent)
        return JSONResponse({"id": f"s{len(self.sent)}", **sent})

    async def slow(self, request: Request) -> JSONResponse:
        self._mailbox(request)
        for _ in range(600):
            if self.release.is_set():
                break
            await asyncio.sleep(0.05)
        return JSONResponse({"report": "done"})

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/mail/v1/messages", self.search, methods=["GET"]),
            Route("/mail/v1/messages", self.send, methods=["POST"]),
            Route("/mail/v1/messages/{id}", self.get, methods=["GET"]),
            Route("/mail/v1/slow", self.slow, methods=["GET"]),
        ])
