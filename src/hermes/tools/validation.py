"""Checking a model's tool arguments against the tool's JSON schema.

A small, fast validator for the subset of JSON Schema that tool schemas use: ``type`` (one or a
list), ``properties``, ``required``, ``enum``, ``items``, ``minimum``/``maximum``,
``minItems``/``maxItems``, ``minLength``/``maxLength`` and ``additionalProperties: false``. Every
message names the offending field, so the model can correct itself.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.errors import ToolArgumentError

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}
_NUMBER = (int, float)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Turn what the model sent (a JSON string, a dict or nothing) into an argument dict."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolArgumentError("arguments are not valid UTF-8 text; send a JSON object") from None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolArgumentError(
                f"arguments are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                "send a JSON object"
            ) from None
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ToolArgumentError(f"arguments must be a JSON object, got {_kind(value)}")
        return value
    raise ToolArgumentError(f"arguments must be a JSON object, got {_kind(raw)}")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def _matches(value: Any, type_name: str) -> bool:
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, _NUMBER) and not isinstance(value, bool)
    py = _PY_TYPES.get(type_name)
    return True if py is None else isinstance(value, py)



def check_value(value: Any, schema: dict[str, Any], path: str) -> None:
    """Raise :class:`ToolArgumentError` naming ``path`` when ``value`` does not fit ``schema``."""
    declared = schema.get("type")
    if declared is not None:
        many = isinstance(declared, list)
        if not (any(_matches(value, t) for t in declared) if many else _matches(value, declared)):
            types = declared if many else [declared]
            want = " or ".join(str(t) for t in types)
            raise ToolArgumentError(f"'{path}' must be {want}, got {_kind(value)}")
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        allowed = ", ".join(json.dumps(e) for e in enum)
        raise ToolArgumentError(f"'{path}' must be one of {allowed}, got {json.dumps(value, default=str)}")
    # the kinds below exclude each other, so testing the common ones first changes no message
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise ToolArgumentError(f"'{path}' must have at least {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise ToolArgumentError(f"'{path}' must have at most {schema['maxLength']} characters")
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise ToolArgumentError(f"'{path}' must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise ToolArgumentError(f"'{path}' must have at most {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                check_value(item, items, f"{path}[{i}]")
    elif isinstance(value, dict):
        if "properties" in schema or "required" in schema:
            check_object(value, schema, path)
    elif isinstance(value, _NUMBER) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ToolArgumentError(f"'{path}' must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ToolArgumentError(f"'{path}' must be at most {schema['maximum']}, got {value}")


def check_object(args: dict[str, Any], schema: dict[str, Any], path: str = "") -> None:
    props: dict[str, Any] = schema.get("properties") or {}
    required = schema.get("required") or []
    for key in required:
        if key not in args or args[key] is None:
            where = f"{path}.{key}" if path else key
            raise ToolArgumentError(f"missing required argument '{where}'")
    for key, value in args.items():
        sub = props.get(key)
        if sub is None:
            if schema.get("additionalProperties") is False:
                where = f"{path}.{key}" if path else key
                allowed = ", ".join(props) or "none"
                raise ToolArgumentError(f"unknown argument '{where}' (allowed: {allowed})")
            continue
        if value is None and key not in required:
            continue  # an explicit null for an optional argument means "not given"
        check_value(value, sub, f"{path}.{key}" if path else key)


def validate_arguments(args: dict[str, Any], parameters: dict[str, Any]) -> None:
    """Validate tool arguments against the ``parameters`` object of a tool schema."""
    check_object(args, parameters)
