"""What a server's tool listing may bring in: input schemas with local references only, descriptions
without control characters, bounded sizes (pure; no SDK import).

A server's input schema is used twice — shown to the model and used to validate the model's
arguments — so it is cleaned once, when the listing arrives (and when a cached listing is read back):

* every ``$ref``/``$dynamicRef``/``$recursiveRef`` that does not start with ``#`` is removed: a schema
  naming ``http://169.254.169.254/...`` or ``file:///etc/passwd`` would otherwise make the validator
  fetch it (the validator refuses every retrieval too, see :mod:`hermes.tools.mcp.schemas`);
* a schema of more than :data:`MAX_SCHEMA_BYTES` (as JSON) or nested deeper than :data:`MAX_DEPTH`
  is refused, and with it the tool;
* a description loses its control characters and is cut to :data:`MAX_DESCRIPTION_LINES` lines and
  :data:`MAX_DESCRIPTION` characters.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_SCHEMA_BYTES = 64 * 1024
MAX_DEPTH = 32
#: at most this many tools of one server are offered
MAX_TOOLS_PER_SERVER = 256
MAX_DESCRIPTION = 1024
MAX_DESCRIPTION_LINES = 8
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


class UnsafeSchema(ValueError):
    """An input schema hermes will not use (too large or too deep)."""


def _clean(node: Any, depth: int, dropped: list[str]) -> Any:
    if depth > MAX_DEPTH:
        raise UnsafeSchema(f"it is nested more than {MAX_DEPTH} levels deep")
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _REF_KEYS and not (isinstance(value, str) and value.startswith("#")):
                dropped.append(str(value)[:200])
                continue
            out[str(key)] = _clean(value, depth + 1, dropped)
        return out
    if isinstance(node, list):
        return [_clean(item, depth + 1, dropped) for item in node]
    return node


def safe_input_schema(schema: Any) -> tuple[dict[str, Any], list[str]]:
    """``(schema, dropped references)``: an object schema with only local references.

    Raises :class:`UnsafeSchema` for a schema too large or too deep to use."""
    if not isinstance(schema, dict):
        schema = {}
    size = len(json.dumps(schema, default=str))
    if size > MAX_SCHEMA_BYTES:
        raise UnsafeSchema(f"its input schema is {size} bytes (at most {MAX_SCHEMA_BYTES})")
    dropped: list[str] = []
    cleaned = _clean(schema, 0, dropped)
    return {"type": "object", **cleaned}, dropped


def safe_description(text: str) -> str:
    """A server's description without control characters, at most a few lines and 1024 characters."""
    lines = [_CONTROL.sub("", line).rstrip() for line in (text or "").replace("\r", "\n").split("\n")]
    lines = [line for line in lines if line.strip()]
    cut = len(lines) > MAX_DESCRIPTION_LINES
    out = "\n".join(lines[:MAX_DESCRIPTION_LINES]).strip()
    if len(out) > MAX_DESCRIPTION:
        out, cut = out[: MAX_DESCRIPTION - 1], True
    return out + "…" if cut else out
