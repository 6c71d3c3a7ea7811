"""How the Yuanbao tools reach the gateway's live Yuanbao connection.

Yuanbao has no HTTP API for these calls: group queries and sends travel over the bot's WebSocket,
which the messaging gateway's Yuanbao adapter holds. The adapter attaches itself here while it is
connected (and detaches when the connection ends), so the tools work in the process that runs
``hermes gateway run`` and say so plainly anywhere else.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol


class YuanbaoLink(Protocol):
    """What a connected Yuanbao adapter offers the tools (callable from any thread's event loop)."""

    async def group_info(self, group_code: str) -> dict[str, Any]: ...

    async def group_members(self, group_code: str) -> list[dict[str, Any]]: ...

    async def send_dm(self, user_id: str, text: str, group_code: str = "") -> str: ...

    async def send_sticker(self, chat: str, sticker: dict[str, Any], reply_to: str = "") -> str: ...


_lock = threading.Lock()
_links: dict[str, YuanbaoLink] = {}


def attach(name: str, link: YuanbaoLink) -> None:
    with _lock:
        _links[name] = link


def detach(name: str, link: YuanbaoLink) -> None:
    with _lock:
        if _links.get(name) is link:
            del _links[name]


def active(name: str = "") -> YuanbaoLink | None:
    """The connected adapter called ``name`` (any one when ``name`` is empty), or None."""
    with _lock:
        if name:
            return _links.get(name)
        return next(iter(_links.values()), None)
