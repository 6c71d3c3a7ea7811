"""Deriving a tool's schema from a typed Python function.

``@registry.tool(toolset="weather")`` on a function with annotated parameters and a docstring builds
the same :class:`~hermes.tools.registry.ToolEntry` that an explicit ``registry.register(...)`` call
would: the name is the function's name, the description the docstring's summary, each parameter's
description comes from an ``Args:`` section (Google style) or ``:param name:`` lines, ``Literal``
becomes ``enum``, defaults become ``default`` and parameters without a default are ``required``.
A parameter named ``task_id`` (or a ``**kw`` catch-all) receives the session's keyword arguments
instead of appearing in the schema.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
_INJECTED = frozenset({"task_id", "session_id", "events"})


def json_type(annotation: Any) -> dict[str, Any]:
    """JSON schema for one annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = get_origin(annotation)
    if origin is Literal:
        values = list(get_args(annotation))
        schema: dict[str, Any] = {"enum": values}
        kinds = {json_type(type(v)).get("type") for v in values}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:
            return json_type(members[0])
        return {"anyOf": [json_type(m) for m in members]}
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        args = get_args(annotation)
        out: dict[str, Any] = {"type": "array"}
        if args and args[0] is not Ellipsis:
            out["items"] = json_type(args[0])
        return out
    if origin is dict:
        return {"type": "object"}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    return {}


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions."""
    doc = inspect.cleandoc(doc or "")
    params: dict[str, str] = {}
    lines = doc.splitlines()
    description: list[str] = []
    section: str | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        m_param = re.match(r":param\s+(?:\w+\s+)?(\w+):\s*(.*)", stripped)
        if m_param:
            current = m_param.group(1)
            params[current] = m_param.group(2).strip()
            section = "param"
            continue
        if re.match(r"^(Args|Arguments|Parameters):\s*$", stripped):
            section, current = "args", None
            continue
        if re.match(r"^(Returns?|Raises|Yields|Examples?|Notes?):\s*$", stripped):
            section, current = "other", None
            continue
        if section == "args":
            m_arg = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if m_arg and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 4:
                current = m_arg.group(1)
                params[current] = m_arg.group(2).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
            continue
        if section == "param":
            if current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
            continue
        if section is None:
            description.append(line)
    return "\n".join(description).strip(), params


def schema_from_function(func: Callable[..., Any], name: str | None = None) -> dict[str, Any]:
    """Build the tool schema (``name``, ``description``, ``parameters``) for ``func``."""
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=False)
    description, param_docs = _doc_parts(func.__doc__ or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in sig.parameters.items():
        if pname in _INJECTED or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
            continue
        prop = json_type(hints.get(pname, param.annotation))
        if pname in param_docs:
            prop["description"] = param_docs[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif param.default is not None:
            try:
                json.dumps(param.default)
                prop["default"] = param.default
            except TypeError:
                pass
        properties[pname] = prop
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    return {"name": name or func.__name__, "description": description, "parameters": parameters}


def entry_kwargs_from_function(
    func: Callable[..., Any], *, toolset: str, name: str | None = None, **register_options: Any
) -> dict[str, Any]:
    """The keyword arguments for ``registry.register`` that describe ``func``."""
    schema = schema_from_function(func, name)
    sig = inspect.signature(func)
    accepts_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    injected = [p for p in sig.parameters if p in _INJECTED]
    declared = [
        p for p, v in sig.parameters.items()
        if p not in _INJECTED and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)
    ]

    def handler(args: dict[str, Any], **kw: Any) -> Any:
        call = {k: args[k] for k in declared if k in args}
        if accepts_kw:
            call.update({k: v for k, v in kw.items() if k not in call})
        else:
            call.update({k: kw[k] for k in injected if k in kw})
        return func(**call)

    handler.__name__ = f"{func.__name__}_handler"
    is_async = inspect.iscoroutinefunction(func)
    return {
        "name": schema["name"],
        "toolset": toolset,
        "schema": schema,
        "handler": handler,
        "is_async": register_options.pop("is_async", is_async),
        **register_options,
    }
