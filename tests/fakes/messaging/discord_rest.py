"""Discord's REST API on loopback (written from discord.com/developers/docs): the calls the platform
tools make, with ``Authorization: Bot TOKEN`` checked, 403 for what ``forbidden`` lists and the
application's flags (the privileged intents) as set."""

from __future__ import annotations

import json
import re
from typing import Any

from fakes.messaging.servers import JsonHttp

MESSAGES = [
    {"id": "11", "content": "first", "timestamp": "2026-12-01T10:00:00Z", "author": {"id": "1", "username": "alice"},
     "embeds": [], "attachments": []},
    {"id": "12", "content": "second", "timestamp": "2026-12-01T10:01:00Z", "author": {"id": "2", "username": "bob"},
     "embeds": [], "attachments": []},
]


class FakeDiscordRest:
    def __init__(self, token: str) -> None:
        self.token = token
        self.flags = 0
        self.forbidden: set[str] = set()  # path regexes answered 403
        self.calls: list[tuple[str, str, dict[str, Any] | None]] = []
        self.http = JsonHttp(lambda method, path, headers, raw: self.answer(
            method, path, headers.get("Authorization", ""), json.loads(raw) if raw else None))
        self.url = f"http://127.0.0.1:{self.http.port}/api/v10"

    def close(self) -> None:
        self.http.close()

    def answer(self, method: str, path: str, auth: str, body: Any) -> tuple[int, Any]:
        if auth != f"Bot {self.token}":
            return 401, {"message": "401: Unauthorized", "code": 0}
        path = path.removeprefix("/api/v10")
        self.calls.append((method, path, body))
        bare = path.split("?")[0]
        if any(re.fullmatch(p, bare) for p in self.forbidden):
            return 403, {"message": "Missing Permissions", "code": 50013}
        if bare == "/applications/@me":
            return 200, {"id": "999", "name": "hermes", "flags": self.flags}
        if bare == "/users/@me/guilds":
            return 200, [{"id": "500", "name": "Test server"}]
        if m := re.fullmatch(r"/channels/(\d+)/messages", bare):
            return 200, MESSAGES if m.group(1) == "700" else []
        if re.fullmatch(r"/guilds/500/members/search", bare):
            return 200, [{"user": {"id": "1", "username": "alice"}, "nick": "Al", "roles": ["r1"]}]
        if re.fullmatch(r"/guilds/500/members/(\d+)", bare):
            return 200, {"user": {"id": "1", "username": "alice"}, "roles": ["r1"]}
        if re.fullmatch(r"/channels/(\d+)/threads", bare) and method == "POST":
            return 201, {"id": "800", "type": 11, "name": body["name"]}
        if re.fullmatch(r"/channels/(\d+)/pins/(\d+)", bare) or re.fullmatch(
                r"/guilds/500/members/\d+/roles/\d+", bare):
            return 204, None
        if bare == "/guilds/500":
            return 200, {"id": "500", "name": "Test server", "approximate_member_count": 3}
        return 404, {"message": "Unknown", "code": 10003}
