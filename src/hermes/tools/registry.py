"""The tool catalog: the public contract every tool is written against (docs/requirements.md#reg-1).

A tool module registers itself at import time::

    from hermes.tools.registry import registry

    registry.register(
        name="weather", toolset="weather", schema=WEATHER_SCHEMA,
        handler=lambda args, **kw: weather_tool(args.get("location", "")),
        check_fn=check_weather_requirements, requires_env=["WEATHER_API_KEY"],
    )

The catalog is process-wide and holds only what tools *are* (:class:`ToolEntry`). What a running
conversation holds — its tools, budgets, person, state — is a :class:`hermes.tools.session.ToolSession`
built from the catalog; dispatch goes through it. ``dispatch(name, args, **kw)`` here is the seed's
thin form: a call on a catalog-wide session with default settings, always returning a JSON string
(any failure as ``{"error": ...}``). A tool registered with ``needs_session=True`` receives
``session=`` (the calling :class:`~hermes.tools.session.ToolSession`) and is refused outside a session.
Discovery of built-in tool modules and of plugins lives in :mod:`hermes.tools.discovery`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.tools.session import ToolSession

logger = logging.getLogger(__name__)

Handler = Callable[..., Any]
#: an availability check: ``True``/``False``, or ``(available, reason)`` naming what is missing when it is not
CheckFn = Callable[[], "bool | tuple[bool, str | None]"]
EnvLookup = Callable[[str], "str | None"]

_CHECK_TTL = 5.0


@dataclass
class ToolEntry:
    """Everything the catalog knows about one tool."""

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
    #: the handler needs the calling session (``session=`` in its keywords); refused outside one
    needs_session: bool = False
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

    @property
    def runs_alone(self) -> bool:
        """Never run in parallel with other calls of the same reply."""
        return self.interactive or self.needs_session or self.options.get("parallel_safe") is False


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
    """The catalog of registered tools (what they are, never what a session holds)."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self._check_cache: dict[str, tuple[float, bool, str | None]] = {}
        #: modules or plugins that failed to load, with the reason (shown by `hermes tools list`)
        self.load_errors: dict[str, str] = {}
        #: where the current registration comes from; set by discovery while importing a plugin
        self.current_source = "builtin"
        #: bumped on every change, so sessions built over the whole catalog see new tools
        self.version = 0
        self._standalone: ToolSession | None = None

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
        needs_session: bool = False,
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
            needs_session=needs_session,
            source=self.current_source,
            options=dict(options),
        )
        if existing is not None:
            logger.warning("tool %r registered again by %s; the new definition wins", name, entry.source)
        self._tools[name] = entry
        self._check_cache.pop(name, None)
        self.version += 1
        return entry

    def tool(self, **register_options: Any) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`; the schema comes from the typed signature and docstring."""
        from hermes.tools.decorator import entry_kwargs_from_function

        def wrap(func: Handler) -> Handler:
            self.register(**entry_kwargs_from_function(func, **register_options))
            return func

        return wrap

    def add(self, entry: ToolEntry) -> None:
        """Take an entry registered elsewhere (discovery copies the process-wide catalog's into another)."""
        self._tools[entry.name] = entry
        self._check_cache.pop(entry.name, None)
        self.version += 1

    def unregister(self, name: str) -> None:
        self._tools.pop(name, None)
        self._check_cache.pop(name, None)
        self.version += 1

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

    def suggest(self, name: str) -> list[str]:
        """Registered names close to ``name`` (for "unknown tool" errors)."""
        import difflib

        return difflib.get_close_matches(name, self._tools, n=5, cutoff=0.5)

    # -- availability ---------------------------------------------------------------------------
    def availability(self, name: str, *, env: EnvLookup | None = None) -> tuple[bool, str | None]:
        """``(available, reason)``; checks are cached for a few seconds and must never block.

        The reason is the check's own (a check may return ``(False, "needs ...")``), else the required
        variables that are missing, else "requirements not met".

        ``env`` looks up the variables a tool requires when saying which are missing (default: the
        process environment)."""
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
                answer = entry.check_fn()
                if isinstance(answer, tuple):
                    ok, reason = bool(answer[0]), (None if answer[0] else answer[1])
                else:
                    ok = bool(answer)
            except Exception as exc:  # a broken check must not break the registry
                ok, reason = False, f"availability check failed: {exc}"
            if not ok and reason is None:
                lookup = env or os.environ.get
                missing = [v for v in entry.requires_env if not lookup(v)]
                reason = f"missing {', '.join(missing)}" if missing else "requirements not met"
        self._check_cache[name] = (now, ok, reason)
        return ok, reason

    def is_available(self, name: str) -> bool:
        return self.availability(name)[0]

    def invalidate_checks(self) -> None:
        self._check_cache.clear()

    # -- the seed's module-level forms ------------------------------------------------------------
    def standalone(self) -> ToolSession:
        """The catalog-wide session behind :meth:`definitions` and :meth:`dispatch` (default settings,
        no person, no session state: tools that need a session are refused)."""
        if self._standalone is None:
            from hermes.tools.session import ToolSession

            self._standalone = ToolSession(self)
        return self._standalone

    def definitions(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """OpenAI tool definitions for the given names, leaving out unknown and unavailable tools."""
        return self.standalone().definitions(names)

    def dispatch(self, name: str, args: Any, **kw: Any) -> str:
        """Run one tool call and return its JSON result; every failure becomes ``{"error": ...}``."""
        return self.standalone().dispatch(name, args, **kw).text


#: The process-wide catalog every tool module registers with.
registry = ToolRegistry()


def discover_builtin_tools() -> list[str]:
    """Import every built-in tool module (see :mod:`hermes.tools.discovery`)."""
    from hermes.tools.discovery import discover_builtin_tools as _discover

    return _discover(registry)
