"""A server asking the model (MCP sampling), answered through the calling session's own model endpoint.

Only for servers whose entry says ``sampling: true`` (the capability is offered in the handshake then
and only then). Like a request for input (:mod:`.elicit`), the request goes to the session that made the
call in flight; that session's asker carries a ``sample`` function (built by the tool layer) which
first asks the person to approve this one request — the spec's human in the loop — and then sends the
messages to the session's model. The request is refused (an error the server sees) when nobody can
approve, the person declines, or the messages hold anything but text. ``max_tokens`` is capped by the
entry's ``sampling_max_tokens``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hermes.connectors.mcp.elicit import InFlight

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SampleRequest:
    """What a server wants the model to answer: chat messages (role, text), its system prompt, a cap."""

    server: str
    messages: tuple[tuple[str, str], ...]
    system: str | None
    max_tokens: int


@dataclass(frozen=True)
class SampleAnswer:
    text: str
    model: str


#: approve and run one request; None when it is declined or nobody can approve
Sampler = Callable[[SampleRequest], "SampleAnswer | str | None"]


def _texts(content: Any) -> list[str] | None:
    blocks = content if isinstance(content, list) else [content]
    texts = []
    for block in blocks:
        if getattr(block, "type", None) != "text":
            return None
        texts.append(str(getattr(block, "text", "")))
    return texts


async def answer(in_flight: InFlight, server: str, params: Any, cap: int) -> Any:
    """The SDK's reply to ``sampling/createMessage``: a ``CreateMessageResult`` or ``ErrorData``."""
    from mcp import types

    def refused(why: str) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"hermes refused the sampling request: {why}")

    asker, why = in_flight.only()
    sampler: Sampler | None = getattr(asker, "sample", None) if asker is not None else None
    if sampler is None:
        return refused(why or "nobody can approve it on this surface")
    messages: list[tuple[str, str]] = []
    for message in getattr(params, "messages", None) or ():
        texts = _texts(getattr(message, "content", None))
        if texts is None:
            return refused("only text messages can be sent to the model")
        messages.append((str(getattr(message, "role", "user")), "\n".join(texts)))
    if not messages:
        return refused("the request has no messages")
    wanted = int(getattr(params, "max_tokens", 0) or cap)
    request = SampleRequest(server, tuple(messages), getattr(params, "system_prompt", None), max(1, min(wanted, cap)))
    try:
        reply = await asyncio.to_thread(sampler, request)
    except Exception as exc:  # a broken surface or model refuses this request, never the connection
        logger.warning("MCP server %s: sampling failed: %s: %s", server, type(exc).__name__, exc)
        return refused(f"the model could not answer ({type(exc).__name__})")
    if not isinstance(reply, SampleAnswer):
        return refused(reply if isinstance(reply, str) else "nobody approved it")
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=reply.text),
                                     model=reply.model, stop_reason="endTurn")
