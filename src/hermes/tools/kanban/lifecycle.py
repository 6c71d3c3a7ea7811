"""The 9 lifecycle tools of the ``kanban`` toolset: what a worker does with its own task.

``task_id`` defaults to the worker's task (``HERMES_KANBAN_TASK``); a worker naming another task is
refused. An orchestrator (no ``HERMES_KANBAN_TASK``) has the same tools for any task and must name it.
"""

from __future__ import annotations

import base64
import binascii
import os
from typing import Any

from hermes.errors import HermesError, ToolError
from hermes.tools.kanban import author, open_board, role, target_task
from hermes.tools.registry import registry
from hermes.tools.untrusted import mark_untrusted

TOOLSET = "kanban"
_TASK_ID = {"type": "string", "maxLength": 64,
            "description": "The task (default: your own task when you are its worker)."}
#: what a worker may give as the kind of a block (``failed`` is the dispatcher's own)
WORKER_BLOCK_KINDS = ("dependency", "needs_input", "capability", "transient")
ATTACH_TYPES = (
    "text/plain", "text/markdown", "text/csv", "text/html", "application/json", "application/pdf",
    "application/xml", "text/xml", "application/octet-stream", "image/png", "image/jpeg", "image/gif", "image/webp",
)


def _schema(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {"task_id": _TASK_ID, **properties},
                       "required": list(required), "additionalProperties": False},
    }


def _marked(source: str, text: Any) -> Any:
    """``text`` (when it is text) between the untrusted-content lines naming who wrote it."""
    return mark_untrusted(source, text) if isinstance(text, str) and text else text


def _task_view(task: Any) -> dict[str, Any]:
    """A task for the model: the words its workers and blockers wrote are marked as data."""
    view: dict[str, Any] = task.to_dict()
    by = task.assignee or "its worker"
    view["result"] = _marked(f"kanban task {task.id} by {by}", view.get("result"))
    view["block_reason"] = _marked(f"kanban task {task.id} block reason", view.get("block_reason"))
    return view


def _show(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """The task and what surrounds it. Everything another agent or person wrote — comments, parents'
    results, runs' summaries, block reasons, event notes — is marked untrusted, naming its author: a
    worker reads it as data, never as instructions (its own task is given in its prompt)."""
    task_id = target_task("kanban_show", args)
    with open_board(kw) as board:
        task = board.get(task_id)
        comments = [c.to_dict() | {"body": _marked(f"kanban comment by {c.author}", c.body)}
                    for c in board.comments(task_id)]
        runs = [r.to_dict() | {"summary": _marked(f"kanban run {r.id} by {r.profile or 'a worker'}", r.summary),
                               "error": _marked(f"kanban run {r.id} error", r.error)}
                for r in board.runs(task_id)]
        events = [e.to_dict() | {"payload": {k: _marked(f"kanban event by {e.author}", v)
                                             for k, v in e.payload.items()}}
                  for e in board.events(task_id, limit=50)]
        return {
            "task": _task_view(task) | {"body": task.body},
            "parents": [_task_view(board.get(p)) | {"body": None} for p in board.parents(task_id)],
            "children": board.children(task_id),
            "comments": comments,
            "attachments": [a.to_dict() for a in board.attachments(task_id)],
            "runs": runs,
            "events": events,
        }


def _complete(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_complete", args)
    with open_board(kw) as board:
        task = board.finish(task_id, "done", actor=role(), author=author(), summary=args["summary"],
                            result=args.get("result"), cost_usd=args.get("cost_usd"))
        return {"ok": True, "task_id": task_id, "status": task.status}


def _request_review(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_request_review", args)
    with open_board(kw) as board:
        task = board.finish(task_id, "review", actor=role(), author=author(), summary=args["summary"],
                            result=args.get("result"), cost_usd=args.get("cost_usd"))
        return {"ok": True, "task_id": task_id, "status": task.status}


def _block(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_block", args)
    with open_board(kw) as board:
        task = board.block(task_id, args["reason"], kind=args.get("kind", "needs_input"), actor=role(),
                           author=author())
        return {"ok": True, "task_id": task_id, "status": task.status, "block_kind": task.block_kind}


def _heartbeat(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_heartbeat", args)
    with open_board(kw) as board:
        task = board.heartbeat(task_id, author=author(), note=args.get("note"))
        return {"ok": True, "task_id": task_id, "last_heartbeat_at": task.last_heartbeat_at}


def _comment(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_comment", args)
    with open_board(kw) as board:
        return {"ok": True, "task_id": task_id,
                "comment_id": board.comment(task_id, args["body"], author=author(), actor=role())}


def _attach(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_attach", args)
    try:
        data = base64.b64decode(args["content_base64"], validate=True)
    except (binascii.Error, ValueError):
        raise ToolError("'content_base64' is not valid base64") from None
    with open_board(kw) as board:
        att = board.attach(task_id, args["filename"], data, uploaded_by=author(), actor=role(),
                           content_type=args.get("content_type", "application/octet-stream"))
        return {"ok": True, "task_id": task_id, "attachment_id": att.id, "filename": att.filename, "size": att.size}


def _allow_private(kw: dict[str, Any]) -> bool:
    from hermes.config.reader import ConfigReader, truth
    from hermes.tools.context import session_of

    session = session_of(kw)
    settings = session.settings if session is not None else None
    configured = ConfigReader(settings.config.data).flag("security.allow_private_urls", False) if settings else False
    return configured or truth(os.environ.get("HERMES_ALLOW_PRIVATE_URLS", "")) is True


async def _attach_url(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    from urllib.parse import urlsplit

    from hermes.net.address_policy import FetchPolicy
    from hermes.net.safefetch import safe_fetch
    from hermes.vendors.base import new_client

    task_id = target_task("kanban_attach_url", args)
    url = args["url"]
    with open_board(kw) as board:
        board.get(task_id)
        cap = board.attachment_max_bytes
        allow = _allow_private(kw)
        policy = FetchPolicy(allow_loopback=allow, allow_private=allow, timeout=60.0, max_bytes=cap,
                             user_agent="hermes-agent (kanban attachment)", content_types=ATTACH_TYPES)
        async with new_client(60.0) as http:
            try:
                page = await safe_fetch(http, url, policy)
            except HermesError as exc:
                raise ToolError(f"{url} was not fetched: {exc}") from None
        if not 200 <= page.status < 300:
            raise ToolError(f"{url} answered HTTP {page.status}")
        body = page.body or page.text.encode()
        name = args.get("filename") or urlsplit(page.url).path.rsplit("/", 1)[-1] or "download"
        att = board.attach(task_id, name, body, uploaded_by=author(), actor=role(),
                           content_type=args.get("content_type") or page.content_type, source_url=url)
        return {"ok": True, "task_id": task_id, "attachment_id": att.id, "filename": att.filename, "size": att.size}


def _attachments(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    task_id = target_task("kanban_attachments", args)
    with open_board(kw) as board:
        return {"task_id": task_id, "attachments": [a.to_dict() for a in board.attachments(task_id)]}


_SUMMARY = {"type": "string", "minLength": 1, "maxLength": 20_000, "description": "What was done, for the person."}
_RESULT = {"type": "string", "maxLength": 100_000, "description": "The result itself, when it is text (optional)."}
_COST = {"type": "number", "minimum": 0, "description": "What the attempt cost in US dollars, when known."}

SHOW_SCHEMA = _schema("kanban_show", "Show a kanban task: its fields, parents, children, comments, attachments, "
                      "runs and latest events.", {})
COMPLETE_SCHEMA = _schema("kanban_complete", "Mark your running task done, with a summary of what you did. "
                          "Ends the current run as completed.",
                          {"summary": _SUMMARY, "result": _RESULT, "cost_usd": _COST}, ("summary",))
REVIEW_REQUEST_SCHEMA = _schema(
    "kanban_request_review", "Hand your running task to review instead of finishing it: an orchestrator or "
    "the person then approves it (done) or requests changes (ready again). Ends the current run as review.",
    {"summary": _SUMMARY, "result": _RESULT, "cost_usd": _COST}, ("summary",))
BLOCK_SCHEMA = _schema("kanban_block", "Stop working on your task because something is missing; say what. "
                       "Ends the current run as blocked.",
                       {"reason": {"type": "string", "minLength": 1, "maxLength": 5000,
                                   "description": "What is needed to continue."},
                        "kind": {"type": "string", "enum": list(WORKER_BLOCK_KINDS),
                                 "description": "dependency (another task), needs_input (a person's answer, the "
                                                "default), capability (a tool or access you lack), transient "
                                                "(try again later)."}}, ("reason",))
HEARTBEAT_SCHEMA = _schema("kanban_heartbeat", "Tell the board you are still working on your task (call it "
                           "during long work, or the task is taken back after the heartbeat timeout).",
                           {"note": {"type": "string", "maxLength": 2000, "description": "Progress so far."}})
COMMENT_SCHEMA = _schema("kanban_comment", "Add a comment to a task (signed with your profile name).",
                         {"body": {"type": "string", "minLength": 1, "maxLength": 100_000,
                                   "description": "The comment."}}, ("body",))
ATTACH_SCHEMA = _schema("kanban_attach", "Attach a file to a task, given as base64 (size cap: "
                        "kanban.attachment_max_bytes, 25 MB by default).",
                        {"filename": {"type": "string", "minLength": 1, "maxLength": 200,
                                      "description": "The file's name (no folders)."},
                         "content_base64": {"type": "string", "description": "The file's bytes, base64."},
                         "content_type": {"type": "string", "maxLength": 200,
                                          "description": "MIME type (default application/octet-stream)."}},
                        ("filename", "content_base64"))
ATTACH_URL_SCHEMA = _schema(
    "kanban_attach_url", "Download an http(s) URL and attach it to a task. Public addresses only (no local "
    "network), at most 5 redirects, same size cap as kanban_attach.",
    {"url": {"type": "string", "minLength": 8, "maxLength": 4000, "description": "http:// or https:// URL."},
     "filename": {"type": "string", "maxLength": 200, "description": "Name to store it under (default: from the URL)."},
     "content_type": {"type": "string", "maxLength": 200, "description": "MIME type (default: the server's)."}},
    ("url",))
ATTACHMENTS_SCHEMA = _schema("kanban_attachments", "List a task's attachments (name, type, size, stored path).", {})

registry.register(name="kanban_show", toolset=TOOLSET, schema=SHOW_SCHEMA, handler=_show)
registry.register(name="kanban_complete", toolset=TOOLSET, schema=COMPLETE_SCHEMA, handler=_complete)
registry.register(name="kanban_request_review", toolset=TOOLSET, schema=REVIEW_REQUEST_SCHEMA, handler=_request_review)
registry.register(name="kanban_block", toolset=TOOLSET, schema=BLOCK_SCHEMA, handler=_block)
registry.register(name="kanban_heartbeat", toolset=TOOLSET, schema=HEARTBEAT_SCHEMA, handler=_heartbeat)
registry.register(name="kanban_comment", toolset=TOOLSET, schema=COMMENT_SCHEMA, handler=_comment)
registry.register(name="kanban_attach", toolset=TOOLSET, schema=ATTACH_SCHEMA, handler=_attach)
registry.register(name="kanban_attach_url", toolset=TOOLSET, schema=ATTACH_URL_SCHEMA, handler=_attach_url,
                  is_async=True)
registry.register(name="kanban_attachments", toolset=TOOLSET, schema=ATTACHMENTS_SCHEMA, handler=_attachments)
