"""Validating a model's arguments against an MCP server's input schema, without trusting the schema.

The schema already has local references only (:func:`hermes.connectors.mcp.schema.safe_input_schema`);
the validator is built on a ``referencing`` registry that refuses every retrieval as well, so no
reference — whatever its spelling or base URI — makes hermes fetch an address or read a file.
``pattern`` is matched with the ``regex`` engine under a time limit: a pattern with catastrophic
backtracking (``^(a+)+$``) is skipped after :data:`PATTERN_TIME_LIMIT` seconds (the server still
checks its own input) instead of holding the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hermes.errors import ToolArgumentError

PATTERN_TIME_LIMIT = 0.05


def _refuse(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class; the stub omits its fields


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    import regex  # type: ignore[import-untyped]
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    try:
        found = regex.search(pattern, instance, timeout=PATTERN_TIME_LIMIT)
    except TimeoutError:
        return  # too slow to judge here: the server checks its own input
    except regex.error:
        return  # not a pattern this engine knows: left to the server
    if found is None:
        yield ValidationError(f"{instance!r:.200} does not match {pattern!r:.200}")


def argument_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for ``schema`` (its draft, else 2020-12) that never retrieves a reference."""
    import jsonschema
    from referencing import Registry

    base = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    cls = jsonschema.validators.extend(base, {"pattern": _pattern})
    return cls(schema, registry=Registry(retrieve=_refuse))  # type: ignore[call-arg]


def check_arguments(validator: Any, args: dict[str, Any]) -> None:
    """Raise :class:`ToolArgumentError` naming the first field that does not fit the schema."""
    from referencing.exceptions import Unresolvable

    try:
        errors = sorted(validator.iter_errors(args), key=lambda e: (len(e.path), str(e.message)))
    except Unresolvable as exc:
        ref = getattr(exc, "ref", "") or str(exc)
        raise ToolArgumentError(f"the server's input schema refers to {ref!s:.200}, which is not allowed "
                                "(hermes never fetches schema references)") from None
    if not errors:
        return
    first = errors[0]
    where = ".".join(str(p) for p in first.absolute_path) or "arguments"
    raise ToolArgumentError(f"'{where}': {first.message}")
