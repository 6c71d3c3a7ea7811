"""``yb_query_group_info``, ``yb_query_group_members``, ``yb_send_dm``, ``yb_search_sticker``, ``yb_send_sticker``.

Group queries and sends go over the gateway's connected Yuanbao adapter (``link``); the sticker
search reads the built-in catalog (``stickers``). Chats are written as the gateway writes them:
``direct:<user id>`` and ``group:<group code>``.

Each call is scoped to the chat the session answers in (``chat_origin``), on that chat's own bot: group
queries only about the group the session is in, direct messages only to the person of a direct chat or
to a member of the session's group, stickers only to those chats. Anyone admitted to one chat cannot
read another group's members or make the bot write to strangers.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from hermes.errors import HermesError, ToolError
from hermes.tools.context import chat_origin
from hermes.tools.registry import registry
from hermes.tools.yuanbao import stickers
from hermes.tools.yuanbao.link import YuanbaoLink, active

T = TypeVar("T")
TOOLSET = "yuanbao"
#: one Yuanbao message's text limit
MAX_TEXT = 4000
#: a member's type as the member list gives it
USER_TYPES = {0: "unknown", 1: "user", 2: "yuanbao_ai", 3: "bot"}


def _available() -> tuple[bool, str] | bool:
    return True if active() is not None else (False, "needs a connected Yuanbao platform (hermes gateway run "
                                                     "with a yuanbao table under gateway.platforms)")


def _link(kw: dict[str, Any]) -> YuanbaoLink:
    """The connected bot of the chat the session answers in."""
    platform, _ = _origin(kw)
    found = active(platform)
    if found is None:
        raise ToolError("Yuanbao is not connected: these tools work inside `hermes gateway run` while a "
                        "yuanbao platform is connected")
    return found


def _origin(kw: dict[str, Any]) -> tuple[str, str]:
    origin = chat_origin(kw)
    if origin is None or active(origin[0]) is None:
        raise ToolError("Yuanbao is not connected here, or this session is not one of its chats: these tools "
                        "answer only in a Yuanbao chat of `hermes gateway run`")
    return origin


def _own_group(args: dict[str, Any], kw: dict[str, Any]) -> str:
    """The group the arguments name, which must be the group the session answers in."""
    code = _group(args)
    _, chat = _origin(kw)
    if chat != f"group:{code}":
        raise ToolError("only the group this chat is in can be looked at" if chat.startswith("group:")
                        else "group information is available only inside that group's chat")
    return code


async def _may_write_to(user_id: str, kw: dict[str, Any]) -> None:
    """A direct message only to the person of this direct chat, or to a member of this group."""
    _, chat = _origin(kw)
    if chat == f"direct:{user_id}":
        return
    if chat.startswith("group:"):
        members = await _call(_link(kw).group_members(chat.removeprefix("group:")))
        if any(str(m.get("user_id")) == user_id for m in members):
            return
        raise ToolError(f"{user_id} is not a member of this group: direct messages go only to its members")
    raise ToolError("in a direct chat, direct messages go only to the person of that chat")


async def _call(waiting: Awaitable[T]) -> T:
    try:
        return await waiting
    except ToolError:
        raise
    except HermesError as exc:
        raise ToolError(str(exc)) from exc


def _group(args: dict[str, Any]) -> str:
    code = str(args.get("group_code") or "").strip().removeprefix("group:")
    if not code:
        raise ToolError("group_code is required (the group's code; a group chat is group:<code>)")
    return code


def _member(raw: dict[str, Any], mention: bool) -> dict[str, Any]:
    nickname = str(raw.get("name_card") or raw.get("nickname") or "")
    out = {"user_id": raw.get("user_id", ""), "nickname": nickname,
           "type": USER_TYPES.get(int(raw.get("user_type") or 0), "unknown")}
    if mention:
        out["mention"] = f"@{nickname}"
    return out


async def query_group_info(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    code = _own_group(args, kw)
    info = await _call(_link(kw).group_info(code))
    return {"group_code": code, "group_name": info.get("group_name", ""),
            "member_count": int(info.get("group_size") or 0),
            "owner": {"user_id": info.get("group_owner_user_id", ""),
                      "nickname": info.get("group_owner_nickname", "")}}


async def _members(code: str, kw: dict[str, Any]) -> list[dict[str, Any]]:
    return await _call(_link(kw).group_members(code))


async def query_group_members(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    code = _own_group(args, kw)
    action = str(args.get("action") or "list_all")
    if action not in ("find", "list_bots", "list_all"):
        raise ToolError("action must be find, list_bots or list_all")
    mention = bool(args.get("mention", False))
    members = [_member(m, mention) for m in await _members(code, kw)]
    if action == "find":
        name = str(args.get("name") or "").strip().lower()
        if not name:
            raise ToolError("action find needs a name to look for")
        members = [m for m in members if name in m["nickname"].lower()]
    elif action == "list_bots":
        members = [m for m in members if m["type"] in ("bot", "yuanbao_ai")]
    out: dict[str, Any] = {"group_code": code, "count": len(members), "members": members}
    if mention:
        out["mention_note"] = "the mention is plain text: write it with a space on either side"
    return out


async def send_dm(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    if args.get("media_files"):
        raise ToolError("media_files cannot be sent: hermes does not upload files to Yuanbao (its upload "
                        "goes through Tencent COS); send the text alone")
    message = str(args.get("message") or "").strip()
    if not message:
        raise ToolError("message is empty")
    if len(message) > MAX_TEXT:
        raise ToolError(f"message is {len(message)} characters; one Yuanbao message takes at most {MAX_TEXT}")
    user_id = str(args.get("user_id") or "").strip().removeprefix("direct:")
    group_code = str(args.get("group_code") or "").strip().removeprefix("group:")
    if not user_id:
        name = str(args.get("name") or "").strip().lower()
        if not (name and group_code):
            raise ToolError("give user_id, or group_code and the person's name in that group")
        group_code = _own_group({"group_code": group_code}, kw)
        members = [_member(m, False) for m in await _members(group_code, kw)]
        exact = [m for m in members if m["nickname"].lower() == name]
        close = exact or [m for m in members if name in m["nickname"].lower()]
        if len(close) != 1:
            named = ", ".join(f"{m['nickname']} ({m['user_id']})" for m in close[:10])
            raise ToolError(f"no member of group {group_code} is called {args.get('name')!r}" if not close
                            else f"{len(close)} members match {args.get('name')!r}: {named}; give user_id")
        user_id = str(close[0]["user_id"])  # a member of this session's own group (checked above)
    else:
        await _may_write_to(user_id, kw)
    sent = await _call(_link(kw).send_dm(user_id, message, group_code))
    return {"sent": True, "chat_id": f"direct:{user_id}", "message_id": sent}


async def search_sticker(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    limit = args.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
        raise ToolError("limit must be a whole number from 1 to 50")
    found = stickers.search(str(args.get("query") or ""), limit)
    return {"count": len(found), "stickers": [{k: s[k] for k in ("name", "sticker_id", "keywords")} for s in found]}


async def send_sticker(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    wanted = str(args.get("sticker") or "").strip()
    sticker = stickers.find(wanted) if wanted else None
    if sticker is None:
        raise ToolError(f"no sticker {wanted!r}: find one with yb_search_sticker (its name or sticker_id)"
                        if wanted else "sticker is required (a name or sticker_id from yb_search_sticker)")
    chat = str(args.get("chat_id") or "").strip()
    if not (chat.startswith("direct:") or chat.startswith("group:")) or len(chat.split(":", 1)[1]) == 0:
        raise ToolError("chat_id must be direct:<user id> or group:<group code>")
    if chat != _origin(kw)[1]:
        if not chat.startswith("direct:"):
            raise ToolError("stickers go only to this chat (or to a member of this group directly)")
        await _may_write_to(chat.removeprefix("direct:"), kw)
    sent = await _call(_link(kw).send_sticker(chat, sticker, str(args.get("reply_to") or "")))
    return {"sent": True, "chat_id": chat, "sticker": sticker["name"], "message_id": sent}


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


_GROUP = {"group_code": {"type": "string", "description": "the group's code (the chat id without group:)"}}

registry.register(name="yb_query_group_info", toolset=TOOLSET, handler=query_group_info, is_async=True,
                  check_fn=_available,
                  schema=_schema("yb_query_group_info", "A Yuanbao group's name, owner and member count.",
                                 _GROUP, ["group_code"]))
registry.register(name="yb_query_group_members", toolset=TOOLSET, handler=query_group_members, is_async=True,
                  check_fn=_available,
                  schema=_schema("yb_query_group_members", "Members of a Yuanbao group: find one by name, list "
                                 "the bots and Yuanbao AI, or list all.", {**_GROUP, "action": {
                                     "type": "string", "enum": ["find", "list_bots", "list_all"],
                                     "default": "list_all"},
                                     "name": {"type": "string", "description": "for find: part of a nickname"},
                                     "mention": {"type": "boolean", "default": False,
                                                 "description": "add each member's @-mention text"}},
                                 ["group_code"]))
registry.register(name="yb_send_dm", toolset=TOOLSET, handler=send_dm, is_async=True, check_fn=_available,
                  schema=_schema("yb_send_dm", "Send a Yuanbao direct message to a person, by user_id or by "
                                 "their name in a group.", {
                                     **_GROUP, "name": {"type": "string", "description": "their nickname in the group"},
                                     "user_id": {"type": "string"},
                                     "message": {"type": "string", "description": f"at most {MAX_TEXT} characters"},
                                     "media_files": {"type": "array", "description": "not supported (refused)",
                                                     "items": {"type": "object", "properties": {
                                                         "path": {"type": "string"},
                                                         "is_voice": {"type": "boolean"}}}}},
                                 ["message"]))
registry.register(name="yb_search_sticker", toolset=TOOLSET, handler=search_sticker, is_async=True, check_fn=_available,
                  schema=_schema("yb_search_sticker", "Search Yuanbao's stock stickers by meaning (English "
                                 "words) or name.", {"query": {"type": "string"},
                                                     "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                                                               "default": 10}}, []))
registry.register(name="yb_send_sticker", toolset=TOOLSET, handler=send_sticker, is_async=True, check_fn=_available,
                  schema=_schema("yb_send_sticker", "Send a Yuanbao sticker to a chat.", {
                      "sticker": {"type": "string", "description": "its name or sticker_id (yb_search_sticker)"},
                      "chat_id": {"type": "string", "description": "direct:<user id> or group:<group code>"},
                      "reply_to": {"type": "string", "description": "in a group: the message id to quote"}},
                                 ["sticker", "chat_id"]))
