"""``connector_accounts`` (toolset ``connections``): the agent lists connector accounts and names them.

New accounts arrive without a name. The agent picks one from the conversation (asking when unsure),
names the account, and tells the person so with the sentence the result carries, e.g.
``Hermes named this Gmail account work. Rename it anytime.`` (GW-12). Renaming works the same way
when the portal supports it (else ``This Nous Portal cannot rename connector accounts yet.``).
There is deliberately no way to delete an account here: only the person can, with
``hermes connectors remove APP NAME``.

The tool is offered only when the login carries the ``managed_tools`` entitlement (checked offline).
Connector tools themselves get ``connector_alias`` from the session's wrapper
(:class:`hermes.tools.wrappers.ConnectorAccounts`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from hermes.connectors.naming import NAME_PATTERN, NAME_RULE
from hermes.tools.registry import registry
from hermes.tools.results import ToolResult

if TYPE_CHECKING:
    from hermes.connectors.directory import ConnectorDirectory

CONNECTOR_ACCOUNTS_SCHEMA: dict[str, Any] = {
    "name": "connector_accounts",
    "description": (
        "List the person's connector accounts (hosted apps such as Gmail reached through the Nous Tool Gateway) "
        "or give one a name. New accounts have no name: choose a short one from the conversation (e.g. work, "
        "home) — ask with clarify when unsure — call action=name, then tell the person the 'announcement' "
        f"from the result word for word. Names: {NAME_RULE}. Renaming works the same way. This tool cannot "
        "delete accounts; only the person can (hermes connectors remove APP NAME)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "name"],
                       "description": "list: show accounts; name: name or rename one account."},
            "app": {"type": "string", "minLength": 1, "maxLength": 64,
                    "description": "Connector id, e.g. gmail. Optional for list; required for name."},
            "account": {"type": "string", "minLength": 1, "maxLength": 200,
                        "description": "For name: the account's current name, its display name if unnamed, "
                                       "or its id."},
            "name": {"type": "string", "minLength": 1, "maxLength": 32, "pattern": NAME_PATTERN,
                     "description": "For name: the new name."},
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}


def _directory(kw: dict[str, Any]) -> ConnectorDirectory:
    """The account cache the calling session checks ``connector_alias`` against."""
    from hermes.connectors.directory import shared_directory
    from hermes.tools.session import ToolSession

    session = kw.get("session")
    own = session.context.connector_accounts if isinstance(session, ToolSession) else None
    return own or shared_directory()


def connector_accounts_available() -> tuple[bool, str | None]:
    """Offline: only for logins whose claims grant managed connectors (``managed_tools``)."""
    from hermes.connectors.access import managed_connectors_available

    return managed_connectors_available()


def connector_accounts(args: dict[str, Any], **kw: Any) -> dict[str, Any] | ToolResult:
    """Handler: ``list`` or ``name`` (see the module docstring)."""
    from hermes.config.settings import Settings
    from hermes.connectors.accounts import find_account
    from hermes.connectors.client import ConnectorClient
    from hermes.connectors.naming import announcement
    from hermes.errors import ToolArgumentError, ToolError
    from hermes.tools.context import session_of

    session = session_of(kw)
    settings = session.settings if session is not None and session.settings is not None else Settings.load()
    app = args.get("app")
    with ConnectorClient.from_settings(settings) as client:
        if args["action"] == "list":
            listing = client.list(app)
            active = [a for a in listing.accounts if a.active]
            return {"accounts": [{"app": a.app, "name": a.name, "display_name": a.display_name, "id": a.id}
                                 for a in active],
                    "retired": len(listing.accounts) - len(active), "can_rename": listing.can_rename}
        missing = [k for k in ("app", "account", "name") if not args.get(k)]
        if missing:
            raise ToolArgumentError(f"action=name needs {', '.join(missing)}")
        listing = client.list(app)
        target = find_account(listing.accounts, str(app), str(args["account"]))
        if not target.active:
            raise ToolError(f"the {target.app_title} account {target.label} is retired and cannot be renamed")
        previous = target.name
        named = client.rename(target, str(args["name"]), capabilities=listing.capabilities)
    _directory(kw).invalidate()
    if previous is None:
        sentence = announcement(named.app_title, str(named.name))
        return _told({"named": named.as_json(), "announcement": sentence}, sentence)
    sentence = f"Renamed the {named.app_title} account {previous} to {named.name}."
    return _told({"renamed": named.as_json(), "previous_name": previous, "message": sentence}, sentence)


def _told(payload: dict[str, Any], sentence: str) -> ToolResult:
    """The result for the model, with the sentence as a notice every surface shows the person itself
    (requirement GW-12: the person must see it even when the model does not repeat it)."""
    return ToolResult(json.dumps(payload, ensure_ascii=False), metadata={"notices": [sentence]})


registry.register(
    name="connector_accounts",
    toolset="connections",
    schema=CONNECTOR_ACCOUNTS_SCHEMA,
    handler=connector_accounts,
    check_fn=connector_accounts_available,
    requires_env=[],
)
