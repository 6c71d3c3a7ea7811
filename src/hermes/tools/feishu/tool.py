"""``feishu_doc_read`` and ``feishu_drive_{list_comments,list_comment_replies,reply_comment,add_comment}``.

Written from the Open Platform docs (docx ``raw_content``, drive file comments and their replies):
``GET /open-apis/docx/v1/documents/{doc_token}/raw_content``;
``GET /open-apis/drive/v1/files/{file_token}/comments`` (``file_type``, ``is_whole``, ``page_size``,
``page_token``); ``GET …/comments/{comment_id}/replies``; ``POST …/comments/{comment_id}/replies``
(``content.elements`` of text runs); ``POST …/comments`` (a whole-document comment: ``reply_list``
with its first reply). Answers are returned as Feishu gave them, comment texts flattened to ``text``.
"""

from __future__ import annotations

from typing import Any

from hermes.errors import ToolError
from hermes.tools.context import session_of
from hermes.tools.registry import registry

STATE_KEY = "feishu"
#: Feishu refuses longer comment replies
MAX_REPLY = 10_000
FILE_TYPES = ["doc", "docx", "sheet", "file", "slides"]
_FILE_TYPE = {"type": "string", "enum": FILE_TYPES, "default": "docx", "description": "the file's type"}
_PAGE = {"page_size": {"type": "integer", "minimum": 1, "maximum": 100, "default": 100},
         "page_token": {"type": "string", "description": "from the previous page's page_token"}}


def _api(kw: dict[str, Any]) -> Any:
    session = session_of(kw)
    api = session.state.get(STATE_KEY) if session is not None else None
    if api is None:
        raise ToolError("Feishu client not available: these tools work only inside the Feishu "
                        "document-comment handler")
    return api


def _token(args: dict[str, Any], key: str) -> str:
    value = str(args.get(key) or "").strip()
    if not value or "/" in value or "?" in value:
        raise ToolError(f"{key} must be a Feishu token (the id in the document's URL)")
    return value


def _flatten(items: list[Any]) -> list[Any]:
    from hermes.vendors.feishu import plain_of

    out = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("content"), dict):
            item = {**item, "text": plain_of(item["content"])}
            item.pop("content")
        if isinstance(item, dict) and isinstance(item.get("reply_list"), dict):
            item = {**item, "replies": _flatten(list(item["reply_list"].get("replies") or []))}
            item.pop("reply_list")
        out.append(item)
    return out


async def _call(kw: dict[str, Any], method: str, path: str, **options: Any) -> dict[str, Any]:
    from hermes.vendors.feishu import FeishuError

    try:
        found: dict[str, Any] = await _api(kw).call(method, path, **options)
    except FeishuError as exc:
        raise ToolError(str(exc)) from exc
    return found


def _text(args: dict[str, Any]) -> str:
    text = str(args.get("content") or "").strip()
    if not text:
        raise ToolError("content is empty")
    if len(text) > MAX_REPLY:
        raise ToolError(f"content is {len(text)} characters; Feishu takes at most {MAX_REPLY}")
    return text


async def doc_read(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    doc = _token(args, "doc_token")
    found = await _call(kw, "GET", f"/open-apis/docx/v1/documents/{doc}/raw_content")
    return {"doc_token": doc, "content": str(found.get("content") or "")}


def _files(args: dict[str, Any]) -> str:
    return f"/open-apis/drive/v1/files/{_token(args, 'file_token')}/comments"


def _paging(args: dict[str, Any]) -> dict[str, Any]:
    return {"file_type": args.get("file_type") or "docx", "page_size": args.get("page_size") or 100,
            "page_token": args.get("page_token")}


async def list_comments(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    params = {**_paging(args), "is_whole": bool(args.get("is_whole", False))}
    found = await _call(kw, "GET", _files(args), params=params)
    return {"items": _flatten(list(found.get("items") or [])), "has_more": bool(found.get("has_more")),
            "page_token": found.get("page_token") or ""}


async def list_comment_replies(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    path = f"{_files(args)}/{_token(args, 'comment_id')}/replies"
    found = await _call(kw, "GET", path, params=_paging(args))
    return {"items": _flatten(list(found.get("items") or [])), "has_more": bool(found.get("has_more")),
            "page_token": found.get("page_token") or ""}


async def reply_comment(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    from hermes.vendors.feishu import rich_text

    path = f"{_files(args)}/{_token(args, 'comment_id')}/replies"
    found = await _call(kw, "POST", path, params={"file_type": args.get("file_type") or "docx"},
                        body={"content": rich_text(_text(args))})
    return {"reply_id": found.get("reply_id") or "", "comment_id": args["comment_id"]}


async def add_comment(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    from hermes.vendors.feishu import rich_text

    found = await _call(kw, "POST", _files(args), params={"file_type": args.get("file_type") or "docx"},
                        body={"reply_list": {"replies": [{"content": rich_text(_text(args))}]}})
    return {"comment_id": found.get("comment_id") or ""}


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


_FILE = {"file_token": {"type": "string", "description": "the document's token (from its URL)"},
         "file_type": _FILE_TYPE}
_COMMENT = {"comment_id": {"type": "string", "description": "the comment thread's id"}}
_CONTENT = {"content": {"type": "string", "description": f"plain text, at most {MAX_REPLY} characters"}}

_DOC = {"doc_token": {"type": "string", "description": "the docx document's token"}}
_WHOLE = {"is_whole": {"type": "boolean", "default": False, "description": "only whole-document comments"}}

registry.register(name="feishu_doc_read", toolset="feishu_doc", handler=doc_read, is_async=True, needs_session=True,
                  schema=_schema("feishu_doc_read", "Read a Feishu document's plain text.", _DOC, ["doc_token"]))
registry.register(name="feishu_drive_list_comments", toolset="feishu_drive", handler=list_comments, is_async=True,
                  needs_session=True, schema=_schema(
                      "feishu_drive_list_comments", "List the comments on a Feishu document (unsolved ones by "
                      "default).", {**_FILE, **_WHOLE, **_PAGE}, ["file_token"]))
registry.register(name="feishu_drive_list_comment_replies", toolset="feishu_drive", handler=list_comment_replies,
                  is_async=True, needs_session=True, schema=_schema(
                      "feishu_drive_list_comment_replies", "List the replies in one comment thread of a Feishu "
                      "document.", {**_FILE, **_COMMENT, **_PAGE}, ["file_token", "comment_id"]))
registry.register(name="feishu_drive_reply_comment", toolset="feishu_drive", handler=reply_comment, is_async=True,
                  needs_session=True, schema=_schema(
                      "feishu_drive_reply_comment", "Reply in a comment thread of a Feishu document.",
                      {**_FILE, **_COMMENT, **_CONTENT}, ["file_token", "comment_id", "content"]))
registry.register(name="feishu_drive_add_comment", toolset="feishu_drive", handler=add_comment, is_async=True,
                  needs_session=True, schema=_schema(
                      "feishu_drive_add_comment", "Add a whole-document comment to a Feishu document.",
                      {**_FILE, **_CONTENT}, ["file_token", "content"]))
