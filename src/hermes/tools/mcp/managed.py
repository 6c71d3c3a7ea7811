"""The managed-connector half of ``connections``: apps the Tool Gateway runs for the person's accounts.

``app`` as a bare name (``"gmail"``) or ``{"name": "gmail"}`` (no ``"mcp": true``) is a managed
connector. Its actions are listed, described and run by the connector gateway
(:class:`hermes.connectors.client.ConnectorClient`, ``/v1/connectors/*``) with the portal login's token;
this module only asks and applies the account rules:

* **connector_alias** (GW-13): with two or more active accounts of the app, ``describe`` shows the
  ``connector_alias`` argument (required when every active account is named, optional otherwise) and
  ``call`` resolves it (:func:`hermes.connectors.alias.resolve_alias`): a missing or unknown alias
  fails with the valid names; a named account used comes back as ``account``;
* **the deadline** is the gateway's: five minutes from the call's first request. The call id is derived
  from the session, the action, the account and the arguments, so the same call asked again after a
  restart (within those five minutes) joins the running call or gets its answer (``replayed``) instead
  of getting a new deadline; a call past it ends with the gateway's ``deadline_exceeded`` error.

Results are the app's data, marked untrusted like an MCP server's.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from hermes.errors import ToolArgumentError

if TYPE_CHECKING:
    from hermes.connectors.accounts import Account
    from hermes.connectors.client import ConnectorClient
    from hermes.connectors.directory import ConnectorDirectory


def app_name(app: Any) -> str:
    name = app if isinstance(app, str) else (app or {}).get("name") if isinstance(app, dict) else None
    if not isinstance(name, str) or not name:
        raise ToolArgumentError("'app' must be a name (\"gmail\") or {\"name\": \"gmail\"}")
    return name


def _client(kw: dict[str, Any]) -> ConnectorClient:
    from hermes.config.settings import Settings
    from hermes.connectors.client import ConnectorClient
    from hermes.tools.context import session_of

    session = session_of(kw)
    settings = session.settings if session is not None and session.settings is not None else Settings.load()
    return ConnectorClient.from_settings(settings)


def _context(kw: dict[str, Any]) -> Any:
    """The calling ToolSession's SessionContext (None outside a session)."""
    from hermes.tools.session import ToolSession

    session = kw.get("session")
    return session.context if isinstance(session, ToolSession) else None


def _directory(kw: dict[str, Any]) -> ConnectorDirectory:
    from hermes.connectors.directory import shared_directory

    context = _context(kw)
    own = context.connector_accounts if context is not None else None
    return own or shared_directory()


def _labels(accounts: list[Account], app: str) -> list[dict[str, Any]]:
    return [{"name": a.name, "display_name": a.display_name} for a in accounts if a.app == app and a.active]


def list_apps(kw: dict[str, Any]) -> dict[str, Any]:
    """The managed apps with their accounts (``{"managed_error": …}`` when the gateway cannot answer)."""
    from hermes.errors import HermesError

    try:
        with _client(kw) as client:
            apps = client.apps()
        accounts = _directory(kw).accounts()
    except HermesError as exc:
        return {"managed": [], "managed_error": str(exc)}
    return {"managed": [{"app": a.get("app"), "title": a.get("app_title"), "actions": a.get("actions"),
                         "accounts": _labels(accounts, str(a.get("app")))} for a in apps]}


def list_actions(app: str, kw: dict[str, Any]) -> dict[str, Any]:
    with _client(kw) as client:
        listing = client.actions(app)
    accounts = _directory(kw).accounts()
    return {"app": app, "title": listing.get("app_title"), "accounts": _labels(accounts, app),
            "actions": [{"tool": a.get("action"), "description": a.get("description")}
                        for a in listing.get("actions") or () if isinstance(a, dict)]}


def search(query_words: set[str], kw: dict[str, Any], words: Any) -> list[dict[str, Any]]:
    """Managed actions whose names or one-line descriptions share words with the query."""
    from hermes.errors import HermesError

    found: list[tuple[int, str, str, str]] = []
    try:
        with _client(kw) as client:
            for app in client.apps():
                name = str(app.get("app"))
                for action in client.actions(name).get("actions") or ():
                    tool, text = str(action.get("action")), str(action.get("description") or "")
                    named, told = set(words(tool.lower())), set(words(text.lower()))
                    score = 3 * len(query_words & named) + len(query_words & told)
                    if score:
                        found.append((-score, name, tool, text))
    except HermesError:
        return []
    found.sort()
    return [{"app": name, "tool": tool, "description": text} for _, name, tool, text in found]


def describe(app: str, action: str, kw: dict[str, Any]) -> dict[str, Any]:
    """One action with its input schema as this person's accounts make it (``connector_alias``)."""
    from hermes.connectors.alias import inject_alias

    with _client(kw) as client:
        info = client.action(app, action)
    accounts = _directory(kw).accounts_for_schema() or []
    schema = inject_alias({"parameters": info.get("input_schema") or {"type": "object"}}, app, accounts)
    return {"app": app, "tool": info.get("action"), "description": info.get("description"),
            "input_schema": schema["parameters"]}


def _account_for(app: str, arguments: dict[str, Any], kw: dict[str, Any]) -> tuple[dict[str, Any], Account]:
    """:func:`resolve_alias` on the cached accounts, once more on a fresh list when it fails on an old one
    (a rename made in another window)."""
    from hermes.connectors.alias import resolve_alias
    from hermes.errors import ToolError

    directory = _directory(kw)
    try:
        return resolve_alias(arguments, app, directory.accounts())
    except ToolError:
        if directory.age < directory.recheck_after:
            raise
        return resolve_alias(arguments, app, directory.accounts(fresh=True))


def call_id(kw: dict[str, Any], app: str, action: str, account: Account, arguments: dict[str, Any]) -> str | None:
    """The same id for the same call of the same session (see the module docstring); None outside one."""
    context = _context(kw)
    sid = context.session_id if context is not None else None
    if not sid:
        return None
    text = json.dumps([sid, app, action, account.id, arguments], sort_keys=True, default=str)
    return "hc_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def call(app: str, action: str, arguments: dict[str, Any], kw: dict[str, Any]) -> dict[str, Any]:
    """Run one action for the account ``connector_alias`` picks; the app's answer marked untrusted."""
    from hermes.tools.untrusted import mark_untrusted

    rest, account = _account_for(app, arguments, kw)
    with _client(kw) as client:
        answer = client.call(app, action, account, rest, call_id=call_id(kw, app, action, account, rest))
    text = json.dumps(answer.get("result"), ensure_ascii=False, indent=1)
    out: dict[str, Any] = {"app": app, "tool": action,
                           "result": mark_untrusted(f"connector:{app}/{action}", text),
                           "deadline_at": answer.get("deadline_at")}
    if answer.get("replayed"):
        out["replayed"] = True
        out["note"] = "the same call was already made in this session within its 5-minute deadline; its answer"
    if account.name is not None:  # GW-13: the account used, when it has a name
        out["account"] = account.name
    return out
