"""Wrappers a session puts around tools, chosen by what a tool declared when it registered.

A wrapper may change the schema the model sees (:meth:`ToolWrapper.schema`) and runs around the call
(:meth:`ToolWrapper.call`, handing on to ``call_next``). Which wrappers a tool gets is decided once per
tool by :func:`wrappers_for`:

* :class:`ConnectorAccounts` — tools registered with ``connector=APP``: ``connector_alias`` in the
  schema when the person has several accounts of the app, checked and removed before the call, the
  chosen account handed to the handler as ``connector_account`` and named in the result.
* :class:`ApprovalRequired` — tools registered with ``requires_approval=True``: the person is asked
  (``once`` / ``session`` / ``always`` / ``deny``) before each call; nobody to ask is a denial.
  ``requires_approval`` may instead be a rule ``(args, session) -> bool`` deciding per call
  (``computer_use`` asks only on the person's own display); a rule returning :data:`EVERY_CALL` asks
  for this call even after a ``session`` answer and offers only ``once`` / ``deny`` (``desktop_project``
  changing a project's folders).
* :class:`SessionDescription` — tools registered with ``describe=FUNC``: ``FUNC(schema, session)`` returns
  the schema this session's model sees, rebuilt when the session starts (``video_generate`` describes what
  the configured backend and model can do). A failing ``FUNC`` leaves the registered schema.

:data:`RESULT_BUDGET` is the finish step every result passes: secrets masked, results over the
budget (the tool's ``max_result_chars``, else the session's) cut with a marker and saved whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from hermes.errors import ApprovalDenied, ToolArgumentError
from hermes.redact import redact, secret_values
from hermes.tools.requests import Request, normalise_answer
from hermes.tools.results import ToolResult, fit_result

if TYPE_CHECKING:
    from hermes.connectors.directory import ConnectorDirectory
    from hermes.tools.registry import ToolEntry
    from hermes.tools.session import ToolSession

#: what a ``requires_approval`` rule returns for a call the person approves each time (module docstring)
EVERY_CALL = "every call"

#: the rest of the chain: (entry, arguments, handler keywords) -> result
CallNext = Callable[["ToolEntry", dict[str, Any], dict[str, Any]], ToolResult]


class ToolWrapper(Protocol):
    def schema(self, entry: ToolEntry, schema: dict[str, Any], session: ToolSession) -> dict[str, Any]:
        """The schema the model sees (``schema`` is what the wrappers before this one made of it)."""
        ...

    def call(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any], session: ToolSession,
             call_next: CallNext) -> ToolResult:
        """Run the call, handing on to ``call_next``; raise a HermesError to refuse it."""
        ...


class ConnectorAccounts:
    """``connector_alias`` for the tools of a connector app (docs/gateway/connectors.md)."""

    @staticmethod
    def directory(session: ToolSession) -> ConnectorDirectory:
        from hermes.connectors.directory import shared_directory

        return session.context.connector_accounts or shared_directory()

    def schema(self, entry: ToolEntry, schema: dict[str, Any], session: ToolSession) -> dict[str, Any]:
        from hermes.connectors.alias import inject_alias

        accounts = self.directory(session).accounts_for_schema()
        if accounts is None:
            return schema
        return inject_alias(schema, str(entry.options["connector"]), accounts)

    def call(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any], session: ToolSession,
             call_next: CallNext) -> ToolResult:
        from hermes.connectors.alias import finish_with_account, resolve_alias

        app = str(entry.options["connector"])
        directory = self.directory(session)
        try:
            rest, account = resolve_alias(args, app, directory.accounts())
        except ToolArgumentError:
            if directory.age < directory.recheck_after:
                raise
            rest, account = resolve_alias(args, app, directory.accounts(fresh=True))
        inner = entry.handler

        def handler(call_args: dict[str, Any], **handler_kw: Any) -> Any:
            return finish_with_account(inner(call_args, connector_account=account, **handler_kw), account)

        return call_next(replace(entry, handler=handler), rest, kw)


class ApprovalRequired:
    """Ask the person before each call of a tool registered with ``requires_approval=True``."""

    STATE_KEY = "approved_tools"

    def schema(self, entry: ToolEntry, schema: dict[str, Any], session: ToolSession) -> dict[str, Any]:
        return schema

    def call(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any], session: ToolSession,
             call_next: CallNext) -> ToolResult:
        approved: set[str] = session.state.setdefault(self.STATE_KEY, set())
        rule = entry.options.get("requires_approval")
        verdict = rule(args, session) if callable(rule) else True
        if not verdict:  # a rule that decides per call: not this one
            return call_next(entry, args, kw)
        every_call = verdict == EVERY_CALL
        if every_call or entry.name not in approved:
            if session.context.sink is None or not session.surface.has_person:
                raise ApprovalDenied(f"'{entry.name}' needs a person's approval and nobody can be asked here")
            shown = ", ".join(f"{k}={v!r}" for k, v in args.items())
            request = Request("approval", {"command": f"{entry.name}({shown})"[:2000],
                                           "reason": f"the tool '{entry.name}' runs only with your approval",
                                           "tool": entry.name,
                                           "choices": ["once", "deny"] if every_call else ["once", "session", "deny"]})
            choice = normalise_answer(session.sink.ask(request))
            if choice is None:
                raise ApprovalDenied(f"nobody answered the approval request for '{entry.name}'; it did not run")
            if choice == "deny":
                raise ApprovalDenied(f"the person did not approve this call of '{entry.name}'")
            if choice in ("session", "always") and not every_call:
                approved.add(entry.name)
        return call_next(entry, args, kw)


class SessionDescription:
    """The schema of a tool registered with ``describe=FUNC``, made for the session (module docstring)."""

    def schema(self, entry: ToolEntry, schema: dict[str, Any], session: ToolSession) -> dict[str, Any]:
        import logging

        try:
            made = entry.options["describe"](schema, session)
        except Exception as exc:  # a broken description must not hide the tool
            logging.getLogger(__name__).warning("describe of %s failed: %s", entry.name, exc)
            return schema
        return made if isinstance(made, dict) else schema

    def call(self, entry: ToolEntry, args: dict[str, Any], kw: dict[str, Any], session: ToolSession,
             call_next: CallNext) -> ToolResult:
        return call_next(entry, args, kw)


class ResultBudget:
    """The finish step: mask secrets, fit the result into its budget."""

    def finish(self, entry: ToolEntry | None, result: ToolResult, session: ToolSession) -> ToolResult:
        """``entry`` None: a refusal before any tool was chosen (the session's budget applies)."""
        text = redact(result.text, secret_values())
        budget = (entry.max_result_chars if entry is not None else None) or session.context.result_budget
        fitted = fit_result(text, budget, tool=entry.name if entry is not None else "tool",
                            spill_dir=session.context.spill_dir)
        if fitted is result.text:
            return result
        return ToolResult(fitted, result.is_error, result.metadata)


CONNECTOR_ACCOUNTS = ConnectorAccounts()
APPROVAL_REQUIRED = ApprovalRequired()
SESSION_DESCRIPTION = SessionDescription()
RESULT_BUDGET = ResultBudget()


def wrappers_for(entry: ToolEntry) -> list[ToolWrapper]:
    """The wrappers ``entry`` runs in, outermost first."""
    out: list[ToolWrapper] = []
    if entry.options.get("requires_approval"):
        out.append(APPROVAL_REQUIRED)
    if entry.options.get("connector"):
        out.append(CONNECTOR_ACCOUNTS)
    if callable(entry.options.get("describe")):
        out.append(SESSION_DESCRIPTION)
    return out
