"""A server's request for input (MCP elicitation) put to the person through the surface's ``clarify`` engine.

:func:`asker_for` builds the :data:`~hermes.connectors.mcp.elicit.Asker` of one call from the calling
session: each field of the server's flat schema becomes one clarify question (an ``enum`` or a
boolean offers its values as choices, an array of enum values is multi-select), sent as a plain
``clarify`` request through the session's sink, so every surface that answers ``clarify`` answers
these too. The person's answers are typed back by the schema (``integer``, ``number``, ``boolean``):

* every required field answered and every answer of the right type → ``accept`` with the content;
* the person cancelled → ``cancel``; a required field skipped or an answer of the wrong type →
  ``decline``;
* nobody answered (timed out, undelivered) → the request is refused.

A session without a person (a one-shot run, a batch, cron) gets no asker: the server's request is
refused. The wait is ``clarify.timeout_seconds`` but never longer than the server's call ``timeout``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes.connectors.mcp.elicit import Asker, ElicitAnswer, Elicitation
from hermes.connectors.mcp.schema import safe_description

if TYPE_CHECKING:
    from hermes.connectors.mcp.config import McpServerConfig

_YES = frozenset({"yes", "y", "true", "1"})
_NO = frozenset({"no", "n", "false", "0"})
DEFAULT_WAIT = 300.0


def _choices(prop: Mapping[str, Any]) -> tuple[list[str], bool]:
    if prop.get("type") == "boolean":
        return ["yes", "no"], False
    if isinstance(prop.get("enum"), list):
        return [str(v) for v in prop["enum"]], False
    one_of = prop.get("oneOf") or prop.get("anyOf")
    if isinstance(one_of, list) and all(isinstance(o, Mapping) and "const" in o for o in one_of):
        return [str(o["const"]) for o in one_of], False
    items = prop.get("items")
    if prop.get("type") == "array" and isinstance(items, Mapping):
        inner = items.get("enum") or [o.get("const") for o in items.get("anyOf") or () if isinstance(o, Mapping)]
        return [str(v) for v in inner if v is not None], True
    return [], False


OPENED, NOT_OPENED = "I opened it", "decline"
ALLOW, DENY = "allow", "deny"


def _url_question(request: Elicitation) -> dict[str, Any]:
    from urllib.parse import urlsplit

    host = urlsplit(str(request.url)).hostname or "?"
    return {"question": f"MCP server '{request.server}' asks you to open an address: "
                        f"{safe_description(request.message) or 'no reason given'}\n{request.url}\n"
                        f"(it goes to {host}; hermes does not open it — open it yourself if you trust it)",
            "choices": [OPENED, NOT_OPENED], "multi_select": False}


def questions_of(request: Elicitation) -> list[tuple[str, dict[str, Any]]]:
    """``(field, clarify question payload)`` per field of the request's schema, the server's message first
    (a URL-mode request: one question, the address shown)."""
    if request.url is not None:
        return [("", _url_question(request))]
    props = request.schema.get("properties")
    out: list[tuple[str, dict[str, Any]]] = []
    head = f"MCP server '{request.server}' asks: {safe_description(request.message) or 'some input'}"
    for index, (name, prop) in enumerate((props or {}).items() if isinstance(props, Mapping) else ()):
        prop = prop if isinstance(prop, Mapping) else {}
        label = safe_description(str(prop.get("title") or name))
        about = safe_description(str(prop.get("description") or ""))
        text = f"{label} — {about}" if about else label
        choices, multi = _choices(prop)
        out.append((str(name), {"question": f"{head}\n{text}" if index == 0 else text,
                                "choices": choices[:10], "multi_select": multi}))
    return out


def _typed(prop: Mapping[str, Any], answer: Any) -> tuple[bool, Any]:
    kind = prop.get("type")
    if kind == "array":
        return True, [str(a) for a in answer] if isinstance(answer, list) else [str(answer)]
    text = " ".join(answer) if isinstance(answer, list) else str(answer)
    try:
        if kind == "integer":
            return True, int(text.strip())
        if kind == "number":
            return True, float(text.strip())
    except ValueError:
        return False, None
    if kind == "boolean":
        word = text.strip().lower()
        return (word in _YES or word in _NO), word in _YES
    return True, text


def answer_of(request: Elicitation, fields: list[str], reply: Any) -> ElicitAnswer | None:
    """The server's answer from the clarify result the surface gave (None: nobody answered)."""
    if hasattr(reply, "result"):
        reply = reply.result()
    if not isinstance(reply, Mapping):
        return None
    outcome = reply.get("outcome")
    if outcome == "cancelled":
        return ElicitAnswer("cancel")
    if outcome != "submitted":
        return None
    if request.url is not None:  # URL mode: accepted only when the person says they opened it
        first = (reply.get("responses") or [{}])[0]
        said = first.get("user_response") if isinstance(first, Mapping) else None
        said = said[0] if isinstance(said, list) and said else said
        return ElicitAnswer("accept" if said == OPENED else "decline")
    props = request.schema.get("properties") or {}
    required = set(request.schema.get("required") or ())
    responses = reply.get("responses") or []
    content: dict[str, Any] = {}
    for name, response in zip(fields, responses, strict=False):
        if not isinstance(response, Mapping) or response.get("status") != "answered":
            continue
        ok, value = _typed(props.get(name) or {}, response.get("user_response"))
        if not ok:
            return ElicitAnswer("decline")
        content[name] = value
    if not required <= set(content):
        return ElicitAnswer("decline")
    return ElicitAnswer("accept", content)


def asker_for(kw: dict[str, Any], config: McpServerConfig) -> Asker | None:
    """The asker of one call made by the session in ``kw``; None when that session has no person."""
    from hermes.tools.context import session_of
    from hermes.tools.requests import Request
    from hermes.tools.toolsets import Surface

    session = session_of(kw)
    if session is None or not (config.elicitation or config.sampling):
        return None
    try:
        if not Surface(session.surface).has_person:
            return None
    except ValueError:
        return None
    settings = session.settings
    wait = float(settings.get("clarify.timeout_seconds", DEFAULT_WAIT) or DEFAULT_WAIT) if settings else DEFAULT_WAIT
    wait = min(wait, config.timeout)

    def ask(request: Elicitation) -> ElicitAnswer | None:
        asked = questions_of(request)
        if not asked:
            return None
        payload = {"questions": [q for _, q in asked], "timeout_seconds": wait}
        reply = session.sink.ask(Request(kind="clarify", payload=payload))
        return answer_of(request, [name for name, _ in asked], reply)

    ask.owner = session  # type: ignore[attr-defined]
    if config.sampling:
        ask.sample = _sampler(kw, session, wait)  # type: ignore[attr-defined]
    return ask


def _sampler(kw: dict[str, Any], session: Any, wait: float) -> Any:
    """Approve one sampling request with the person (clarify: allow / deny), then ask the session's model."""
    from hermes.connectors.mcp.sampling import SampleAnswer, SampleRequest
    from hermes.tools.requests import Request
    from hermes.tools.session import ToolSession

    owner = kw.get("session")
    model = owner.context.sample if isinstance(owner, ToolSession) else None

    def sample(request: SampleRequest) -> SampleAnswer | str | None:
        if model is None:
            return "this session has no model to ask"
        last = safe_description(request.messages[-1][1])
        preview = last if len(last) <= 600 else last[:599] + "…"
        question = (f"MCP server '{request.server}' wants to ask the model ({len(request.messages)} message(s), "
                    f"up to {request.max_tokens} tokens). The last one:\n{preview}\nAllow this once?")
        reply = session.sink.ask(Request(kind="clarify", payload={
            "questions": [{"question": question, "choices": [ALLOW, DENY], "multi_select": False}],
            "timeout_seconds": wait}))
        if hasattr(reply, "result"):
            reply = reply.result()
        first = (reply.get("responses") or [{}])[0] if isinstance(reply, Mapping) else {}
        said = first.get("user_response") if isinstance(first, Mapping) else None
        said = said[0] if isinstance(said, list) and said else said
        if not isinstance(reply, Mapping) or reply.get("outcome") != "submitted" or said != ALLOW:
            return "the person did not allow it"
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages += [{"role": role if role in ("user", "assistant") else "user", "content": text}
                     for role, text in request.messages]
        text, name = model(messages, request.max_tokens)
        return SampleAnswer(text, name)

    return sample
