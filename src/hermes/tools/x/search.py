"""``x_search`` at execution time: validate the filters, ask xAI, shape the answer.

The search runs on xAI's side (the Responses API with the built-in ``x_search`` tool,
:mod:`hermes.vendors.xai`) with the user's ``XAI_API_KEY``. Dates are checked before any call (strict
``YYYY-MM-DD``, ``from_date`` not after ``to_date`` nor after today, UTC), because the API accepts nonsense
ranges and answers from the model's memory. For the same reason a result is flagged ``degraded`` when a
narrowing filter was set but nothing was cited: the answer is then not backed by posts.

Config: ``x_search.model`` (default ``grok-4-1-fast``), ``x_search.timeout_seconds`` (default 120),
``x_search.base_url`` or ``XAI_BASE_URL`` (another xAI-compatible endpoint).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from hermes.errors import ConfigError, SelectionError, ToolError
from hermes.tools.routed.context import RoutedContext, http_client, text_arg
from hermes.vendors.base import Auth, VendorError
from hermes.vendors.xai import DEFAULT_ORIGIN, XAIClient

DEFAULT_MODEL = "grok-4-1-fast"
KEY_ENV = "XAI_API_KEY"
MAX_HANDLES = 10
_HANDLE = re.compile(r"^@?([A-Za-z0-9_]{1,15})$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _handles(args: dict[str, Any], field: str) -> list[str]:
    raw = args.get(field) or []
    if not isinstance(raw, list) or len(raw) > MAX_HANDLES:
        raise ToolError(f"'{field}' must be a list of at most {MAX_HANDLES} X handles")
    handles: list[str] = []
    for item in raw:
        match = _HANDLE.match(item.strip()) if isinstance(item, str) else None
        if match is None:
            raise ToolError(f"'{field}' holds {str(item)[:40]!r}, which is not an X handle (letters, digits, _)")
        handles.append(match.group(1))
    return handles


def _date(args: dict[str, Any], field: str) -> date | None:
    raw = args.get(field)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str) or not _DATE.match(raw):
        raise ToolError(f"'{field}' must be a date written YYYY-MM-DD")
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise ToolError(f"'{field}' is not a real date: {raw}") from None


def check_dates(start: date | None, end: date | None, today: date) -> None:
    """Refuse ranges that cannot hold any post (inverted, or starting in the future)."""
    if start is not None and end is not None and start > end:
        raise ToolError("'from_date' is after 'to_date'")
    if start is not None and start > today:
        raise ToolError(f"'from_date' {start.isoformat()} is in the future (today is {today.isoformat()} UTC)")


def _origin(ctx: RoutedContext) -> str:
    from hermes.routing.endpoints import parse_origin

    custom = ctx.get_str("x_search.base_url") or ctx.env.get("XAI_BASE_URL", "").strip() or None
    if custom is None:
        return DEFAULT_ORIGIN
    if parse_origin(custom) is None:
        raise ConfigError("x_search.base_url (or XAI_BASE_URL) must be a plain http(s) URL")
    return custom.rstrip("/")


async def x_search(args: dict[str, Any], ctx: RoutedContext) -> dict[str, Any]:
    """Run one ``x_search`` call; returns the result object."""
    query = text_arg(args, "query", "what to look for on X") or ""
    allowed, excluded = _handles(args, "allowed_x_handles"), _handles(args, "excluded_x_handles")
    if allowed and excluded:
        raise ToolError("use either 'allowed_x_handles' or 'excluded_x_handles', not both")
    start, end = _date(args, "from_date"), _date(args, "to_date")
    check_dates(start, end, datetime.now(UTC).date())
    key = ctx.env.get(KEY_ENV, "").strip()
    if not key:
        raise SelectionError(f"x_search is configured to use xai (set via hermes tools), but {KEY_ENV} is not set. "
                             "Run 'hermes tools' to change it.")
    model = ctx.get_str("x_search.model", DEFAULT_MODEL) or DEFAULT_MODEL
    timeout = ctx.get_number("x_search.timeout_seconds", 120.0, low=10.0, high=900.0)
    async with http_client(timeout) as http:
        client = XAIClient(http, _origin(ctx), Auth.bearer(key), timeout=timeout)
        try:
            answer = await client.x_search(
                query, model=model, allowed_x_handles=allowed, excluded_x_handles=excluded,
                from_date=start.isoformat() if start else None, to_date=end.isoformat() if end else None,
                enable_image_understanding=args.get("enable_image_understanding") is True,
                enable_video_understanding=args.get("enable_video_understanding") is True,
            )
        except VendorError as exc:
            hint = f" Check {KEY_ENV} in ~/.hermes/.env." if exc.status in (401, 403) else ""
            raise ToolError(f"X search failed: {exc}.{hint}") from None
    filtered = bool(allowed or excluded or start or end)
    result: dict[str, Any] = {
        "success": True, "query": query, "answer": answer.text,
        "citations": [{"url": c.url, "title": c.title} for c in answer.citations],
        "model": answer.model or model, "degraded": filtered and not answer.citations,
    }
    if result["degraded"]:
        result["degraded_reason"] = ("filters were set but no post was cited: the answer is not backed by matching "
                                     "posts (try a wider date range or other handles)")
    return result
