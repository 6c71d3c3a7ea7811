"""Configuration of ``execute_code`` and the set of tools a script may call.

Config keys (``config.yaml``, all optional):

``code_execution.allowed_tools``
    tools the generated ``hermes_tools`` module may expose (default :data:`DEFAULT_ALLOWED_TOOLS`).
    The list is always intersected with the tools enabled in the calling session and with the
    registered, available tools; :data:`NEVER_ALLOWED` tools and interactive tools are removed even
    when listed.
``code_execution.max_tool_calls``
    tool calls one run may make (default 50); further calls get an error value in the script.
``code_execution.timeout``
    wall-clock seconds when the model gives no ``timeout`` (default 120, at most 600).
``code_execution.max_output_chars`` / ``code_execution.max_stderr_chars``
    characters of stdout / stderr returned (default 50,000 / 10,000; head and tail are kept).
``code_execution.env_passthrough``
    extra environment variable names copied into the child (secret-looking names never are).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hermes.config.schema import SCHEMA
from hermes.errors import ConfigError
from hermes.tools.code import DEFAULT_ALLOWED_TOOLS, TOOL_NAME
from hermes.tools.registry import ToolRegistry

#: never callable from a script: execute_code itself (no recursion) and tools that talk to the person;
#: tools that need the session's state (``needs_session``) and ``interactive`` ones are left out too
NEVER_ALLOWED: frozenset[str] = frozenset({TOOL_NAME, "clarify"})

DEFAULT_TIMEOUT = 120
DEFAULT_MAX_TOOL_CALLS = 50
DEFAULT_MAX_OUTPUT_CHARS = 50_000
DEFAULT_MAX_STDERR_CHARS = 10_000
#: the largest RPC message (request or reply) in bytes
MAX_MESSAGE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class CodeLimits:
    """The limits and lists one run works with (read from config, or the defaults)."""

    allowed_tools: tuple[str, ...] = DEFAULT_ALLOWED_TOOLS
    max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS
    default_timeout: int = DEFAULT_TIMEOUT
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    max_stderr_chars: int = DEFAULT_MAX_STDERR_CHARS
    max_message_bytes: int = MAX_MESSAGE_BYTES
    env_passthrough: tuple[str, ...] = ()


def _setting(settings: Any, key: str) -> Any:
    getter = getattr(settings, "get", None)
    if settings is None or not callable(getter):
        return None
    return getter(f"code_execution.{key}", None)


def _int_setting(settings: Any, key: str, default: int) -> int:
    """``code_execution.<key>`` checked against the config schema (its range), else ``default``."""
    if _setting(settings, key) is None:
        return default
    return int(SCHEMA.read(settings, f"code_execution.{key}"))


def _names_setting(settings: Any, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = _setting(settings, key)
    if value is None:
        return default
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"code_execution.{key} must be a list of names, got {value!r}")
    return tuple(v for v in value if v)


def load_limits(settings: Any) -> CodeLimits:
    """Read ``code_execution.*`` from ``settings`` (anything with ``get(key, default)``; None: defaults).

    Raises :class:`~hermes.errors.ConfigError` naming the key when a value is malformed.
    """
    return CodeLimits(
        allowed_tools=_names_setting(settings, "allowed_tools", DEFAULT_ALLOWED_TOOLS),
        max_tool_calls=_int_setting(settings, "max_tool_calls", DEFAULT_MAX_TOOL_CALLS),
        default_timeout=_int_setting(settings, "timeout", DEFAULT_TIMEOUT),
        max_output_chars=_int_setting(settings, "max_output_chars", DEFAULT_MAX_OUTPUT_CHARS),
        max_stderr_chars=_int_setting(settings, "max_stderr_chars", DEFAULT_MAX_STDERR_CHARS),
        env_passthrough=_names_setting(settings, "env_passthrough", ()),
    )


def allowed_tools(reg: ToolRegistry, configured: Iterable[str], session_tools: Iterable[str] | None) -> tuple[str, ...]:
    """The tools a script may call, in a stable order.

    ``configured`` (the allow-list) ∩ ``session_tools`` (the tools enabled in the calling session; None
    when there is no session) ∩ registered and available tools, minus :data:`NEVER_ALLOWED` and tools
    registered as ``interactive`` or ``needs_session``.
    """
    enabled = None if session_tools is None else set(session_tools)
    out: list[str] = []
    for name in configured:
        if name in out or name in NEVER_ALLOWED:
            continue
        if enabled is not None and name not in enabled:
            continue
        entry = reg.get(name)
        if entry is None or entry.interactive or entry.needs_session or not reg.is_available(name):
            continue
        out.append(name)
    return tuple(out)
