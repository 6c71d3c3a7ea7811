"""Servers asking the person for input mid-call (MCP elicitation), routed to whoever made the call.

A server may send ``elicitation/create`` while one of its tool calls runs. The connection answers it
with the :data:`Asker` of the call in flight (the tool layer builds one from the calling session: it
puts the server's form to the person through the surface's ``clarify`` engine). The request is
refused — an error the server sees, never a made-up answer — when nobody can answer: no call is in
flight, the call's session has no person, or several sessions' calls are in flight on the server and
hermes cannot tell which one asked. A URL-mode request (open this address) is put to the person the
same way — the address shown, never opened by hermes — and accepted only when they say they opened it;
an address that is not plain ``http(s)://`` is refused. ``mcp_servers.<name>.elicitation: false``
stops the server asking at all (the capability is then not offered in the handshake).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

ACTIONS = ("accept", "decline", "cancel")
#: an address a URL-mode request may show: http(s), no spaces or control characters, at most 2 kB
_URL = re.compile(r"^https?://[^\s\x00-\x1f\x7f]{1,2040}$")


@dataclass(frozen=True)
class Elicitation:
    """One server's question: its message and the flat JSON schema of the answer it wants."""

    server: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    #: URL mode: the address the server asks the person to open (None: a form)
    url: str | None = None


@dataclass(frozen=True)
class ElicitAnswer:
    """The person's reply: ``accept`` with ``content``, ``decline`` or ``cancel``."""

    action: str
    content: dict[str, Any] | None = None


#: asks the person; None when nobody can answer. An ``owner`` attribute (the calling session) tells
#: the calls of one session apart from another's.
Asker = Callable[[Elicitation], "ElicitAnswer | None"]


#: the asker of the call this task runs: a 2026-07-28 server's ``input_required`` round is answered
#: inside the call itself, so its question reaches exactly the session that made the call
_CALLER: contextvars.ContextVar[tuple[Asker | None] | None] = contextvars.ContextVar("mcp_caller", default=None)


class InFlight:
    """The askers of a server's calls in flight. ``elicitation/create`` from an older server arrives
    outside any call's task: it goes to the one session with calls in flight, else it is refused."""

    def __init__(self) -> None:
        self._askers: dict[int, Asker | None] = {}
        self._ids = itertools.count()

    @contextlib.contextmanager
    def during(self, asker: Asker | None) -> Iterator[None]:
        key = next(self._ids)
        self._askers[key] = asker
        token = _CALLER.set((asker,))
        try:
            yield
        finally:
            _CALLER.reset(token)
            self._askers.pop(key, None)

    def only(self) -> tuple[Asker | None, str]:
        """The one asker that may answer now, else None and why not."""
        caller = _CALLER.get()
        if caller is not None:
            return caller[0], "" if caller[0] is not None else "nobody can answer on this surface"
        askers = list(self._askers.values())
        if not askers:
            return None, "no call of this server is in flight"
        distinct = {id(getattr(a, "owner", a)) for a in askers}  # one session's calls share an owner
        if len(distinct) > 1:
            return None, "several calls are in flight and hermes cannot tell which one asks"
        if askers[0] is None:
            return None, "nobody can answer on this surface"
        return askers[0], ""


async def answer(in_flight: InFlight, server: str, params: Any) -> Any:
    """The SDK's reply to ``elicitation/create``: an ``ElicitResult`` from the person, or ``ErrorData``."""
    from mcp import types

    def refused(why: str) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"hermes refused the request for input: {why}")

    url: str | None = None
    if getattr(params, "mode", "form") == "url":
        url = str(getattr(params, "url", "") or "")
        if not _URL.match(url):
            return refused("only a plain http(s) address can be shown to the person (URL mode)")
    elif getattr(params, "mode", "form") != "form":
        return refused(f"unknown elicitation mode {str(getattr(params, 'mode', ''))[:20]!r}")
    asker, why = in_flight.only()
    if asker is None:
        return refused(why)
    schema = getattr(params, "requested_schema", None)
    schema = schema if isinstance(schema, dict) else (schema.model_dump() if schema is not None else {})
    question = Elicitation(server=server, message=str(getattr(params, "message", "")), schema=schema, url=url)
    try:
        reply = await asyncio.to_thread(asker, question)
    except Exception as exc:  # a broken surface refuses this request; it never breaks the connection
        logger.warning("MCP server %s: asking the person failed: %s: %s", server, type(exc).__name__, exc)
        return refused("asking the person failed")
    if reply is None:
        return refused("nobody answered")
    if reply.action not in ACTIONS:
        return refused(f"unknown answer {reply.action!r}")
    return types.ElicitResult(action=reply.action,  # type: ignore[arg-type]
                              content=reply.content if reply.action == "accept" else None)
