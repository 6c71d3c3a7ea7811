"""xAI's Responses API with the built-in ``x_search`` tool (``api.x.ai``).

``POST {origin}/v1/responses`` with ``Authorization: Bearer <XAI_API_KEY>`` and JSON::

    {"model": "grok-4-1-fast", "input": [{"role": "user", "content": "<query>"}], "store": false,
     "tools": [{"type": "x_search", "allowed_x_handles": [...], "excluded_x_handles": [...],
                "from_date": "YYYY-MM-DD", "to_date": "YYYY-MM-DD",
                "enable_image_understanding": true, "enable_video_understanding": true}]}

Grok runs the search on the server and answers with ``output[]`` items; the ``message`` item holds
``content[]`` parts of type ``output_text`` whose ``annotations`` are ``url_citation`` objects
(``url``, ``title``, ``start_index``, ``end_index``). A top-level ``citations`` list of URLs may come too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.vendors.base import JsonApiClient, RetryPolicy, VendorError

VENDOR = "xAI"
DEFAULT_ORIGIN = "https://api.x.ai"
XAI_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=5.0, statuses=frozenset({429, 500, 502, 503, 504}))


@dataclass(frozen=True)
class Citation:
    """One cited post or page."""

    url: str
    title: str | None = None


@dataclass(frozen=True)
class XSearchAnswer:
    """Grok's synthesised answer and what it cited."""

    text: str
    citations: tuple[Citation, ...] = ()
    model: str | None = None
    usage: Mapping[str, Any] = field(default_factory=dict)


class XAIClient(JsonApiClient):
    """Calls to xAI at ``origin`` with ``auth`` (``Auth.bearer(key)``)."""

    vendor = VENDOR
    default_retry = XAI_RETRY
    default_timeout = 120.0
    default_max_bytes = 8 * 1024 * 1024
    strip_v1 = True

    async def responses(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One raw ``/v1/responses`` call."""
        return await self._post_json("v1/responses", dict(body))

    async def x_search(
        self, query: str, *, model: str, allowed_x_handles: Sequence[str] = (),
        excluded_x_handles: Sequence[str] = (), from_date: str | None = None, to_date: str | None = None,
        enable_image_understanding: bool = False, enable_video_understanding: bool = False,
    ) -> XSearchAnswer:
        """Search X for ``query`` and return Grok's answer with its citations."""
        tool: dict[str, Any] = {"type": "x_search"}
        if allowed_x_handles:
            tool["allowed_x_handles"] = list(allowed_x_handles)
        if excluded_x_handles:
            tool["excluded_x_handles"] = list(excluded_x_handles)
        if from_date:
            tool["from_date"] = from_date
        if to_date:
            tool["to_date"] = to_date
        if enable_image_understanding:
            tool["enable_image_understanding"] = True
        if enable_video_understanding:
            tool["enable_video_understanding"] = True
        body = {"model": model, "input": [{"role": "user", "content": query}], "tools": [tool], "store": False}
        return parse_answer(await self.responses(body))


def parse_answer(body: Mapping[str, Any]) -> XSearchAnswer:
    """Read the text and the citations out of a Responses answer."""
    texts: list[str] = []
    cited: dict[str, Citation] = {}
    output = body.get("output")
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, Mapping) or item.get("type") != "message":
            continue
        content = item.get("content")
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, Mapping) or part.get("type") != "output_text":
                continue
            text = part.get("text")
            if isinstance(text, str):
                texts.append(text)
            annotations = part.get("annotations")
            for note in annotations if isinstance(annotations, list) else []:
                if isinstance(note, Mapping) and isinstance(note.get("url"), str) and note["url"]:
                    title = note.get("title")
                    cited.setdefault(note["url"], Citation(note["url"], title if isinstance(title, str) else None))
    top = body.get("citations")
    for url in top if isinstance(top, list) else []:
        if isinstance(url, str) and url:
            cited.setdefault(url, Citation(url))
    if not texts and isinstance(body.get("output_text"), str):
        texts.append(body["output_text"])
    if not texts:
        raise VendorError(VENDOR, f"{VENDOR} answered without any text", kind="bad_response")
    usage = body.get("usage")
    model = body.get("model")
    return XSearchAnswer("\n\n".join(texts).strip(), tuple(cited.values()),
                         model if isinstance(model, str) else None, usage if isinstance(usage, Mapping) else {})
