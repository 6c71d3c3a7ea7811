"""The Discord REST calls behind the platform tools: one table of actions, a 403 turned into a hint.

Each action is a method, a path template and the fields it needs (:data:`ACTIONS`). Actions that need
the privileged Server Members intent (:data:`MEMBER_ACTIONS`) are refused without a request when the
application does not have it (``GET /applications/@me`` flags, asked once per token and process).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hermes.errors import ToolError

API = "https://discord.com/api/v10"
#: application flags: GATEWAY_GUILD_MEMBERS and GATEWAY_GUILD_MEMBERS_LIMITED
MEMBERS_INTENT_FLAGS = (1 << 14) | (1 << 15)
MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Action:
    method: str
    path: str
    needs: tuple[str, ...]
    #: the permission a 403 most likely means is missing
    permission: str
    query: tuple[str, ...] = ()


ACTIONS: dict[str, Action] = {
    # discord
    "fetch_messages": Action("GET", "/channels/{channel_id}/messages", ("channel_id",),
                             "View Channel and Read Message History", ("limit", "before", "after")),
    "search_members": Action("GET", "/guilds/{guild_id}/members/search", ("guild_id", "query"),
                             "View Channel (and the Server Members intent)", ("query", "limit")),
    "create_thread": Action("POST", "/channels/{channel_id}/threads", ("channel_id", "name"),
                            "Create Public Threads"),
    # discord_admin
    "list_guilds": Action("GET", "/users/@me/guilds", (), "none (the bot's own servers)", ("limit",)),
    "server_info": Action("GET", "/guilds/{guild_id}", ("guild_id",), "View Channel in that server"),
    "list_channels": Action("GET", "/guilds/{guild_id}/channels", ("guild_id",), "View Channel"),
    "channel_info": Action("GET", "/channels/{channel_id}", ("channel_id",), "View Channel"),
    "list_roles": Action("GET", "/guilds/{guild_id}/roles", ("guild_id",), "View Channel in that server"),
    "member_info": Action("GET", "/guilds/{guild_id}/members/{user_id}", ("guild_id", "user_id"),
                          "View Channel (and the Server Members intent)"),
    "list_pins": Action("GET", "/channels/{channel_id}/pins", ("channel_id",), "View Channel and Read Message History"),
    "pin_message": Action("PUT", "/channels/{channel_id}/pins/{message_id}", ("channel_id", "message_id"),
                          "Manage Messages (Pin Messages)"),
    "unpin_message": Action("DELETE", "/channels/{channel_id}/pins/{message_id}", ("channel_id", "message_id"),
                            "Manage Messages (Pin Messages)"),
    "delete_message": Action("DELETE", "/channels/{channel_id}/messages/{message_id}", ("channel_id", "message_id"),
                             "Manage Messages"),
    "add_role": Action("PUT", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}",
                       ("guild_id", "user_id", "role_id"), "Manage Roles, with the bot's role above that role"),
    "remove_role": Action("DELETE", "/guilds/{guild_id}/members/{user_id}/roles/{role_id}",
                          ("guild_id", "user_id", "role_id"), "Manage Roles, with the bot's role above that role"),
}
USER_ACTIONS = ("fetch_messages", "search_members", "create_thread")
ADMIN_ACTIONS = tuple(a for a in ACTIONS if a not in USER_ACTIONS)
MEMBER_ACTIONS = frozenset({"search_members", "member_info"})

_intents: dict[tuple[str, str], bool] = {}


def _body(action: str, args: dict[str, Any]) -> dict[str, Any] | None:
    if action == "create_thread":
        body: dict[str, Any] = {"name": args["name"], "type": 11,
                                "auto_archive_duration": int(args.get("auto_archive_duration") or 1440)}
        return body
    return None


def _shape(action: str, data: Any) -> Any:
    """Keep what the model needs of Discord's large objects."""
    if action in ("fetch_messages", "list_pins") and isinstance(data, list):
        return [{"id": m.get("id"), "author": (m.get("author") or {}).get("username"), "content": m.get("content"),
                 "timestamp": m.get("timestamp")} for m in data if isinstance(m, dict)]
    if action == "search_members" and isinstance(data, list):
        return [{"id": (m.get("user") or {}).get("id"), "username": (m.get("user") or {}).get("username"),
                 "nick": m.get("nick"), "roles": m.get("roles")} for m in data if isinstance(m, dict)]
    return data


async def call(token: str, base_url: str, action: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run ``action`` with ``args``; Discord's refusals come back as ToolError with a hint."""
    import httpx

    from hermes.net.http import send_request

    spec = ACTIONS[action]
    missing = [f for f in spec.needs if not str(args.get(f) or "").strip()]
    if missing:
        raise ToolError(f"{action} needs {', '.join(missing)}")
    headers = {"Authorization": f"Bot {token}", "User-Agent": "DiscordBot (hermes, 1)"}
    async with httpx.AsyncClient(timeout=30.0) as client:
        if action in MEMBER_ACTIONS and not await _has_members_intent(client, token, base_url, headers):
            raise ToolError(f"{action} is not available: the bot lacks the privileged Server Members intent "
                            "(Developer Portal → the application → Bot → Privileged Gateway Intents)")
        path = spec.path.format(**{f: str(args[f]) for f in spec.needs if "{" + f + "}" in spec.path})
        params = {q: str(args[q]) for q in spec.query if args.get(q) not in (None, "")}
        answer = await send_request(client, spec.method, base_url.rstrip("/") + path, max_bytes=MAX_BYTES,
                                    headers=headers, params=params or None, json=_body(action, args))
    data: Any = None
    if answer.body:
        try:
            data = json.loads(answer.body)
        except ValueError:
            data = answer.body[:500].decode(errors="replace")
    if answer.status == 403:
        said = data.get("message") if isinstance(data, dict) else "Forbidden"
        raise ToolError(f"Discord refused {action} (403 {said}): the bot needs {spec.permission} "
                        "(Server Settings → Roles, or the channel's permissions)")
    if answer.status == 404:
        raise ToolError(f"Discord found nothing for {action} (404): check the ids")
    if not answer.ok:
        said = data.get("message") if isinstance(data, dict) else data
        raise ToolError(f"Discord answered {answer.status} to {action}: {said}")
    return {"action": action, "result": _shape(action, data) if data is not None else "done"}


async def _has_members_intent(client: Any, token: str, base_url: str, headers: dict[str, str]) -> bool:
    from hermes.net.http import send_request

    key = (base_url, token[-8:])
    if key not in _intents:
        answer = await send_request(client, "GET", base_url.rstrip("/") + "/applications/@me",
                                    max_bytes=MAX_BYTES, headers=headers)
        flags = 0
        if answer.ok:
            try:
                flags = int(json.loads(answer.body).get("flags") or 0)
            except (ValueError, AttributeError):
                flags = 0
        _intents[key] = bool(flags & MEMBERS_INTENT_FLAGS)
    return _intents[key]
