"""``discord`` and ``discord_admin``: read and manage a Discord server as the gateway's bot (TS-8).

``discord``: fetch_messages, search_members, create_thread. ``discord_admin``: list_guilds,
server_info, list_channels, channel_info, list_roles, member_info, list_pins, pin_message,
unpin_message, delete_message, add_role, remove_role. ``discord.server_actions`` in config.yaml narrows
the actions offered (the others are not in the schema's list and are refused); actions needing the
Server Members intent are refused when the application lacks it; a 403 names the missing permission.
"""

from __future__ import annotations

import os
from typing import Any

from hermes.errors import ToolError
from hermes.tools.discord.api import ADMIN_ACTIONS, API, USER_ACTIONS, call
from hermes.tools.paths import file_setting
from hermes.tools.registry import registry

TOKEN_ENV = "DISCORD_BOT_TOKEN"

_FIELDS: dict[str, Any] = {
    "guild_id": {"type": "string", "description": "server (guild) id"},
    "channel_id": {"type": "string", "description": "channel or thread id"},
    "user_id": {"type": "string", "description": "user id"},
    "role_id": {"type": "string", "description": "role id"},
    "message_id": {"type": "string", "description": "message id"},
    "query": {"type": "string", "description": "search_members: the start of a username or nickname"},
    "name": {"type": "string", "description": "create_thread: the thread's name"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 50, "description": "how many (1-100)"},
    "before": {"type": "string", "description": "fetch_messages: only messages before this id"},
    "after": {"type": "string", "description": "fetch_messages: only messages after this id"},
    "auto_archive_duration": {"type": "integer", "enum": [60, 1440, 4320, 10080],
                              "description": "create_thread: minutes of inactivity before it archives"},
}


def _schema(name: str, actions: tuple[str, ...], what: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"{what} as the hermes bot, on the Discord REST API. Actions: {', '.join(actions)}.",
        "parameters": {
            "type": "object",
            "properties": {"action": {"type": "string", "enum": list(actions)}, **_FIELDS},
            "required": ["action"],
        },
    }


def _available() -> tuple[bool, str] | bool:
    return True if os.environ.get(TOKEN_ENV) else (False, f"needs {TOKEN_ENV} (the Discord bot's token)")


def _handler(offered: tuple[str, ...]) -> Any:
    async def handle(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
        action = str(args.get("action"))
        narrowed = file_setting(kw, "discord.server_actions")
        if action not in offered or (isinstance(narrowed, list) and action not in narrowed):
            raise ToolError(f"action {action!r} is not offered here (discord.server_actions in config.yaml)")
        token = os.environ.get(TOKEN_ENV)
        if not token:
            raise ToolError(f"{TOKEN_ENV} is not set")
        base = str(file_setting(kw, "discord.api_base_url") or API)
        return await call(token, base, action, args)

    return handle


registry.register(
    name="discord", toolset="discord", schema=_schema("discord", USER_ACTIONS, "Read a Discord server's messages "
                                                      "and members, and start threads"),
    handler=_handler(USER_ACTIONS), check_fn=_available, requires_env=[TOKEN_ENV], is_async=True,
)
registry.register(
    name="discord_admin", toolset="discord_admin",
    schema=_schema("discord_admin", ADMIN_ACTIONS, "Inspect and administer a Discord server (pins, messages, roles)"),
    handler=_handler(ADMIN_ACTIONS), check_fn=_available, requires_env=[TOKEN_ENV], is_async=True,
)
