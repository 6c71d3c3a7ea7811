"""A session's view of the tool catalog: its tools, its context, its state — and the one dispatch path.

A :class:`ToolSession` is built when a conversation starts, from the process-wide catalog
(:mod:`hermes.tools.registry`), the tools resolved for it and a typed :class:`SessionContext`
(surface, task id, settings, budgets, the person's sink, connector accounts, the capabilities the
agent layer lends: running child agents, running cron jobs). Every tool call goes through
:meth:`ToolSession.dispatch`, the one place where a failure becomes ``{"error": ...}``::

    parse → (wrappers: connector accounts, approval) → validate → availability → handler → finish

and returns a typed :class:`ToolResult`. Wrappers (:mod:`hermes.tools.wrappers`) are chosen per tool
once, from what the tool declared at registration (``connector=APP``, ``requires_approval=True``);
the finish step masks secrets and applies the result budget. A tool registered with
``needs_session=True`` gets ``session=`` (this object) in its keywords; the catalog-wide session
behind the seed's ``registry.dispatch`` refuses it with one clear error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError, ToolError
from hermes.tools.asyncbridge import run_sync
from hermes.tools.results import ToolResult, error_from, error_json, is_error_text, to_json_text
from hermes.tools.validation import parse_arguments, validate_arguments
from hermes.tools.wrappers import RESULT_BUDGET, CallNext, ToolWrapper, wrappers_for

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.connectors.directory import ConnectorDirectory
    from hermes.tools.context import Sink
    from hermes.tools.registry import EnvLookup, ToolEntry, ToolRegistry
    from hermes.tools.toolsets import Surface

logger = logging.getLogger(__name__)

DEFAULT_RESULT_BUDGET = 50_000
#: the error a tool that needs a session gets from the catalog-wide session (``registry.dispatch``)
OUTSIDE_SESSION = (
    "'{name}' needs the agent loop's session state and must be called from a session; it reached the "
    "catalog's dispatch outside one"
)


class _NoPerson:
    """The sink of a session without a person: events go nowhere, questions get no answer."""

    def emit(self, event: Any) -> None:
        return None

    def ask(self, request: Any) -> None:
        return None


NO_PERSON = _NoPerson()


@dataclass(frozen=True)
class SessionContext:
    """What a session tells its tools. Every field has a default, so tests and scripts build one
    with just what they need."""

    surface: Surface | None = None
    task_id: str | None = None
    settings: Settings | None = None
    #: where the person is (events and questions); None: nobody to ask
    sink: Sink | None = None
    #: the session store and this session's id in it (session_search, delegation)
    store: Any = None
    session_id: str | None = None
    result_budget: int = DEFAULT_RESULT_BUDGET
    #: where results over the budget are saved whole (None: cut with a marker only)
    spill_dir: Path | None = None
    #: secrets lookup for availability reasons and tools (default: the process environment)
    env: EnvLookup | None = None
    #: the connector accounts that ``connector_alias`` is checked against (None: the shared cache)
    connector_accounts: ConnectorDirectory | None = None
    #: the person's channels on this surface (messaging home channels, ...)
    channels: tuple[str, ...] = ()
    #: capabilities the agent layer lends its tools (tools never import the agent package)
    delegate: Callable[[dict[str, Any]], str] | None = None
    cron_runner: Callable[[Settings], Any] | None = None
    #: one answer of the session's model to chat ``messages`` (MCP sampling): ``(text, model name)``
    sample: Callable[[list[dict[str, Any]], int], tuple[str, str]] | None = None
    #: True once the running turn is interrupted
    cancelled: Callable[[], bool] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **fields: Any) -> SessionContext:
        """A context with the settings' budget and spill folder (``fields`` override)."""
        fields.setdefault("result_budget", settings.agent().result_budget)
        fields.setdefault("spill_dir", settings.paths.spill)
        fields.setdefault("env", settings.env.get)
        return cls(settings=settings, **fields)


class ToolSession:
    """The tools of one conversation (``tools=None``: the whole catalog, as ``registry.dispatch`` uses)."""

    def __init__(self, catalog: ToolRegistry, tools: Iterable[str] | None = None,
                 context: SessionContext | None = None, *, state: dict[str, Any] | None = None,
                 standalone: bool | None = None, parent: Any = None) -> None:
        self.catalog = catalog
        #: the session this one acts for (execute_code's script acts for its caller)
        self.parent = parent
        self.tools: tuple[str, ...] | None = tuple(tools) if tools is not None else None
        self.context = context or SessionContext()
        #: per-session state of tools, keyed by a name each tool family chooses
        self.state: dict[str, Any] = state if state is not None else {}
        #: no session state to lend (the catalog-wide session): tools that need one are refused
        self.standalone = self.tools is None and context is None if standalone is None else standalone
        self._offered: frozenset[str] | None = None

    # -- what tools see (hermes.tools.context.SessionView) ------------------------------------------
    @property
    def task_id(self) -> str:
        return self.context.task_id or self.context.session_id or f"task-{id(self):x}"

    @property
    def surface(self) -> Surface:
        """The context's surface; a session that names none has no person, like a one-shot run."""
        if self.context.surface is not None:
            return self.context.surface
        from hermes.tools.toolsets import Surface

        return Surface.ONESHOT

    @property
    def sink(self) -> Sink:
        return self.context.sink or NO_PERSON

    @property
    def settings(self) -> Settings | None:
        return self.context.settings

    def use_settings(self, settings: Settings) -> None:
        """From now on this session's tools read ``settings`` (``desktop_project`` lays a project's folders
        over the configuration this way)."""
        self.context = replace(self.context, settings=settings)

    @property
    def store(self) -> Any:
        return self.context.store

    @property
    def session_id(self) -> str | None:
        return self.context.session_id

    @property
    def interrupted(self) -> bool:
        return bool(self.context.cancelled and self.context.cancelled())

    @property
    def registry(self) -> ToolRegistry:
        return self.catalog

    def child(self, *, task_id: str, tools: Iterable[str], state: dict[str, Any] | None = None) -> ToolSession:
        """A session for calls made on this one's behalf (execute_code's script): same context, its own
        task id, tools and state."""
        return ToolSession(self.catalog, tools, replace(self.context, task_id=task_id), state=state,
                           standalone=self.standalone, parent=self)

    # -- definitions ----------------------------------------------------------------------------------
    def definitions(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI tool definitions of the session's tools (or ``names``) that exist and are available."""
        chosen = self.tools if names is None else names
        if chosen is None:
            chosen = self.catalog.names()
        out: list[dict[str, Any]] = []
        for name in chosen:
            entry = self.catalog.get(name)
            if entry is None or not self.catalog.availability(name, env=self.context.env)[0]:
                continue
            schema = entry.schema
            for wrapper in wrappers_for(entry):
                schema = wrapper.schema(entry, schema, self)
            out.append({"type": "function", "function": schema})
        if names is None and self._offered is None:  # what the model is offered at the start is frozen
            self._offered = frozenset(d["function"]["name"] for d in out)
        return out

    def offered(self) -> frozenset[str]:
        """The names the model was offered at the session's start (its tools that were available then;
        frozen by the first :meth:`definitions` of the whole session, which the agent makes at start)."""
        if self._offered is None:
            self._offered = frozenset(d["function"]["name"] for d in self.definitions())
        return self._offered

    # -- dispatch -------------------------------------------------------------------------------------
    def dispatch(self, name: str, args: Any, **kw: Any) -> ToolResult:
        """Run one tool call; never raises. ``kw`` goes to the handler beside ``task_id`` and ``session``
        (this session; the catalog-wide one passes on only what its caller gave)."""
        try:
            entry = self.catalog.get(name) if isinstance(name, str) else None
            refused = self._refusal(name, entry, kw)
            if refused is not None or entry is None:
                return RESULT_BUDGET.finish(None, ToolResult(refused or "", True), self)
            wrappers = wrappers_for(entry)
            if not self.standalone:
                kw.setdefault("task_id", self.task_id)
                kw.setdefault("session", self)
            elif self.context.task_id is not None:
                kw.setdefault("task_id", self.context.task_id)
            try:
                parsed = parse_arguments(args)
                result = self._through(wrappers, entry, parsed, kw)
            except HermesError as exc:
                result = ToolResult(error_from(exc), True)
            except Exception as exc:
                logger.warning("tool %s raised %s", name, type(exc).__name__, exc_info=True)
                result = ToolResult(error_json(f"{name} failed: {type(exc).__name__}: {exc}"), True)
            return self._finish(entry, result)
        except Exception as exc:  # the finish step itself failed (a broken encoding, a full disk)
            logger.warning("dispatch of %s failed: %s", name, type(exc).__name__, exc_info=True)
            return ToolResult(error_json(f"{name} failed: {type(exc).__name__}"), True)

    def _refusal(self, name: str, entry: ToolEntry | None, kw: dict[str, Any]) -> str | None:
        if entry is None:
            name = str(name)[:100]  # a model's garbage name is echoed, not a megabyte of it
        if self.tools is not None:
            offered = self.offered()
            if name not in offered:
                known = ", ".join(sorted(offered)) or "none"
                why = "is not enabled in this session" if entry is not None else "does not exist"
                return error_json(f"tool '{name}' {why}. Available tools: {known}")
        if entry is None:
            return error_json(f"unknown tool '{name}'", available_tools=self.catalog.suggest(name))
        if entry.needs_session and self.standalone and kw.get("session") is None:
            return error_json(OUTSIDE_SESSION.format(name=name))
        return None

    def _through(self, wrappers: list[ToolWrapper], entry: ToolEntry, args: dict[str, Any],
                 kw: dict[str, Any]) -> ToolResult:
        if not wrappers:
            return self._run(entry, args, kw)
        first, rest = wrappers[0], wrappers[1:]

        def call_next(inner: ToolEntry, inner_args: dict[str, Any], inner_kw: dict[str, Any]) -> ToolResult:
            return self._through(rest, inner, inner_args, inner_kw)

        next_step: CallNext = call_next
        return first.call(entry, args, kw, self, next_step)

    def _run(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any]) -> ToolResult:
        """The innermost step: validate, check availability, call the handler."""
        validate_arguments(args, entry.schema["parameters"])
        ok, reason = self.catalog.availability(entry.name, env=self.context.env)
        if not ok:
            return ToolResult(error_json(f"tool '{entry.name}' is not available: {reason}"), True)
        value = entry.handler(args, **kw)
        if entry.is_async or isinstance(value, Coroutine):
            if not isinstance(value, Coroutine):
                raise ToolError(f"async handler of '{entry.name}' did not return a coroutine")
            value = run_sync(value)
        if isinstance(value, ToolResult):
            return value
        text = to_json_text(value)
        return ToolResult(text, is_error_text(text))

    def _finish(self, entry: ToolEntry, result: ToolResult) -> ToolResult:
        return RESULT_BUDGET.finish(entry, result, self)
