"""The tool registry: the public contract every tool is written against (SPEC REG-1…REG-7).

A tool module registers itself at import time::

    from hermes.tools.registry import registry

    registry.register(
        name="weather", toolset="weather", schema=WEATHER_SCHEMA,
        handler=lambda args, **kw: weather_tool(args.get("location", "")),
        check_fn=check_weather_requirements, requires_env=["WEATHER_API_KEY"],
    )

``dispatch(name, args, **kw)`` always returns a JSON string; any failure (unknown tool, bad
arguments, unavailable tool, an exception in the handler) comes back as ``{"error": ...}``. Async
handlers (``is_async=True``) are bridged by the registry. Discovery of built-in tool modules and of
plugins lives in :mod:`hermes.tools.discovery`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hermes.errors import HermesError, ToolError
from hermes.redact import redact, secret_values
from hermes.tools.asyncbridge import run_sync
from hermes.tools.results import error_json, fit_result, to_json_text
from hermes.tools.validation import parse_arguments, validate_arguments

logger = logging.getLogger(__name__)

Handler = Callable[..., Any]
CheckFn = Callable[[], bool]

#: Tools that need the agent loop's per-session state (SPEC REG-7). The loop answers them itself.
INTERCEPTED_TOOLS = frozenset({"todo_list", "memory", "session_search", "delegate_task"})

_CHECK_TTL = 5.0


@dataclass
class ToolEntry:
    """Everything the registry knows about one tool."""

    name: str
    toolset: str
    schema: dict[str, Any]
    handler: Handler
    check_fn: CheckFn | None = None
    requires_env: tuple[str, ...] = ()
    is_async: bool = False
    #: never run beside other calls of the same turn (it talks to the person, e.g. clarify)
    interactive: bool = False
    #: this tool's own result budget in characters (None: the session's budget)
    max_result_chars: int | None = None
    #: "builtin", "plugin:<name>" or "entrypoint:<name>"
    source: str = "builtin"
    #: further options given to register(); kept so later features need no new signature
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def description(self) -> str:
        return str(self.schema.get("description", ""))

    def definition(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this tool."""
        return {"type": "function", "function": self.schema}


class ConnectorHook(Protocol):
    """How tools registered with ``connector=APP`` look and run (:mod:`hermes.tools.connectors` installs one):
    ``schema`` is what the model sees (``connector_alias``), ``bind`` checks a call and returns the entry
    and arguments to run it with."""

    def schema(self, entry: ToolEntry) -> dict[str, Any]: ...

    def bind(self, entry: ToolEntry, args: dict[str, Any]) -> tuple[ToolEntry, dict[str, Any]]: ...


def _normalise_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise TypeError(f"schema for tool {name!r} must be a dict")
    if "function" in schema and schema.get("type") == "function":
        schema = dict(schema["function"])
    out = dict(schema)
    out.setdefault("name", name)
    if out["name"] != name:
        raise ValueError(f"schema name {out['name']!r} does not match tool name {name!r}")
    out.setdefault("description", "")
    params = out.get("parameters") or {"type": "object", "properties": {}}
    if params.get("type") != "object":
        raise ValueError(f"parameters of tool {name!r} must be a JSON schema object")
    out["parameters"] = params
    return out


class ToolRegistry:
    """Holds every registered tool and dispatches calls to them."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self._check_cache: dict[str, tuple[float, bool, str | None]] = {}
        #: modules or plugins that failed to load, with the reason (shown by `hermes tools list`)
        self.load_errors: dict[str, str] = {}
        #: where the current registration comes from; set by discovery while importing a plugin
        self.current_source = "builtin"
        self.result_budget = 50_000
        self.spill_dir: Path | None = None
        self.env_lookup: Callable[[str], str | None] | None = None
        #: adapts the tools of connectors (``register(..., connector="gmail")``); None: shown as registered
        self.connector_hook: ConnectorHook | None = None

    # -- registration ----------------------------------------------------------------------------
    def register(
        self,
        *,
        name: str,
        toolset: str,
        schema: dict[str, Any],
        handler: Handler,
        check_fn: CheckFn | None = None,
        requires_env: Iterable[str] | None = None,
        is_async: bool = False,
        interactive: bool = False,
        max_result_chars: int | None = None,
        **options: Any,
    ) -> ToolEntry:
        """Register a tool. See the module docstring; unknown keyword options are kept on the entry."""
        if not name or not isinstance(name, str):
            raise ValueError("tool name must be a non-empty string")
        if not callable(handler):
            raise TypeError(f"handler of tool {name!r} is not callable")
        existing = self._tools.get(name)
        if existing is not None and existing.source == "builtin" and self.current_source != "builtin":
            raise ValueError(f"{self.current_source} tried to replace the built-in tool {name!r}")
        entry = ToolEntry(
            name=name,
            toolset=toolset,
            schema=_normalise_schema(name, schema),
            handler=handler,
            check_fn=check_fn,
            requires_env=tuple(requires_env or ()),
            is_async=is_async,
            interactive=interactive,
            max_result_chars=max_result_chars,
            source=self.current_source,
            options=dict(options),
        )
        if existing is not None:
            logger.warning("tool %r registered again by %s; the new definition wins", name, entry.source)
        self._tools[name] = entry
        self._check_cache.pop(name, None)
        return entry

    def tool(self, **register_options: Any) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`; the schema comes from the typed signature and docstring."""
        from hermes.tools.decorator import entry_kwargs_from_function

        def wrap(func: Handler) -> Handler:
            self.register(**entry_kwargs_from_function(func, **register_options))
            return func

        return wrap

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._check_cache.pop(name, None)

    # -- lookup ---------------------------------------------------------------------------------
    def get(self, name: str) -> ToolEntry | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return sorted(self._tools)

    def entries(self) -> list[ToolEntry]:
        return [self._tools[n] for n in sorted(self._tools)]

    def toolsets(self) -> dict[str, list[str]]:
        """Registered tools grouped by the toolset each tool declared."""
        out: dict[str, list[str]] = {}
        for entry in self.entries():
            out.setdefault(entry.toolset, []).append(entry.name)
        return out

    # -- availability ---------------------------------------------------------------------------
    def availability(self, name: str) -> tuple[bool, str | None]:
        """``(available, reason)``; checks are cached for a few seconds and must never block."""
        entry = self._tools.get(name)
        if entry is None:
            return False, "not registered"
        now = time.monotonic()
        cached = self._check_cache.get(name)
        if cached is not None and now - cached[0] < _CHECK_TTL:
            return cached[1], cached[2]
        ok, reason = True, None
        if entry.check_fn is not None:
            try:
                ok = bool(entry.check_fn())
            except Exception as exc:  # a broken check must not break the registry
                ok, reason = False, f"availability check failed: {exc}"
            if not ok and reason is None:
                missing = [v for v in entry.requires_env if not self._env(v)]
                reason = f"missing {', '.join(missing)}" if missing else "requirements not met"
        self._check_cache[name] = (now, ok, reason)
        return ok, reason

    def is_available(self, name: str) -> bool:
        return self.availability(name)[0]

    def invalidate_checks(self) -> None:
        self._check_cache.clear()

    def _env(self, key: str) -> str | None:
        if self.env_lookup is not None:
            return self.env_lookup(key)
        import os

        return os.environ.get(key)

    def definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """OpenAI tool definitions for the given names, leaving out unknown and unavailable tools."""
        out = []
        for name in names:
            entry = self._tools.get(name)
            if entry is not None and self.is_available(name):
                hook = self.connector_hook if entry.options.get("connector") else None
                out.append({"type": "function", "function": hook.schema(entry)} if hook else entry.definition())
        return out

    # -- dispatch -------------------------------------------------------------------------------
    def dispatch(self, name: str, args: Any, **kw: Any) -> str:
        """Run one tool call and return its JSON result; every failure becomes ``{"error": ...}``."""
        entry = self._tools.get(name)
        if entry is None:
            return error_json(f"unknown tool '{name}'", available_tools=self._suggest(name))
        if name in INTERCEPTED_TOOLS:
            return error_json(
                f"'{name}' needs the agent loop's session state and must be handled by the agent loop; "
                "it reached the registry without being intercepted"
            )
        try:
            parsed = parse_arguments(args)
            if self.connector_hook is not None and entry.options.get("connector"):
                entry, parsed = self.connector_hook.bind(entry, parsed)
            validate_arguments(parsed, entry.schema["parameters"])
            ok, reason = self.availability(name)
            if not ok:
                return error_json(f"tool '{name}' is not available: {reason}")
            result = self._call(entry, parsed, kw)
            text = to_json_text(result)
        except HermesError as exc:
            text = error_json(str(exc))
        except Exception as exc:
            logger.warning("tool %s raised %s", name, type(exc).__name__, exc_info=True)
            text = error_json(f"{name} failed: {type(exc).__name__}: {exc}")
        return self.finish(entry, text)

    def _call(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any]) -> Any:
        result = entry.handler(args, **kw)
        if entry.is_async or isinstance(result, Coroutine):
            if not isinstance(result, Coroutine):
                raise ToolError(f"async handler of '{entry.name}' did not return a coroutine")
            result = run_sync(result)
        return result

    def finish(self, entry: ToolEntry | None, text: str) -> str:
        """Mask secrets and apply the result budget (used by dispatch and by intercepted tools)."""
        text = redact(text, secret_values())
        budget = (entry.max_result_chars if entry and entry.max_result_chars else None) or self.result_budget
        return fit_result(text, budget, tool=entry.name if entry else "tool", spill_dir=self.spill_dir)

    def _suggest(self, name: str) -> list[str]:
        import difflib

        return difflib.get_close_matches(name, self._tools, n=5, cutoff=0.5)


#: The process-wide registry every tool module registers with.
registry = ToolRegistry()


def discover_builtin_tools() -> list[str]:
    """Import every built-in tool module (see :mod:`hermes.tools.discovery`)."""
    from hermes.tools.discovery import discover_builtin_tools as _discover

    return _discover(registry)
