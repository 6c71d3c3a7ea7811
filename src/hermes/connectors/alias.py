"""``connector_alias``: choosing the account a connector tool acts on (requirement GW-13). Pure functions.

With **two or more active accounts** of a connector, every tool of that connector gets a
``connector_alias`` argument whose allowed values are the names of the active accounts:

* **required** when every active account is named; **optional** when one or more are unnamed;
* there is **no default account**. Leaving the alias out works only when it cannot be ambiguous: fewer
  than two named accounts and exactly one unnamed one (that one is used). Otherwise — two or more
  named accounts, or several unnamed ones — the call fails, as does a name that is not one of the
  active accounts; the error lists the valid names;
* with one active account the argument is not shown and that account is used;
* when the account used is named, the result carries it as ``account``.

:func:`inject_alias` is what the model sees, :func:`resolve_alias` the check at dispatch, and
:func:`with_account` the result. Retired accounts never count.
"""

from __future__ import annotations

import json
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from hermes.connectors.accounts import Account
from hermes.connectors.naming import app_title
from hermes.errors import ToolArgumentError, ToolError

ALIAS_FIELD = "connector_alias"


def _names(active: Sequence[Account]) -> list[str]:
    return sorted(a.name for a in active if a.name)


def _title(app: str, accounts: Sequence[Account]) -> str:
    """The app's display title, from its own accounts (never another app's), else the naming table's."""
    return next((a.app_title for a in accounts if a.app == app and a.app_title), "") or app_title(app)


def inject_alias(schema: Mapping[str, Any], app: str, accounts: Sequence[Account]) -> dict[str, Any]:
    """The tool schema (``name``, ``description``, ``parameters``) as the model should see it for ``app``.

    ``accounts`` may hold any accounts; only the active ones of ``app`` count. The input is not changed.
    """
    active = [a for a in accounts if a.app == app and a.active]
    out = dict(schema)
    if len(active) < 2:
        return out
    params = dict(schema.get("parameters") or {"type": "object"})
    props = dict(params.get("properties") or {})
    names = _names(active)
    unnamed = len(active) - len(names)
    title = _title(app, active)
    prop: dict[str, Any] = {"type": "string"}
    if names:
        prop["enum"] = names
    if not unnamed:
        prop["description"] = f"Which of your {title} accounts to use ({', '.join(names)}); there is no default."
    elif unnamed == 1 and len(names) < 2:
        prop["description"] = (f"Which of your {title} accounts to use, by name. Leave it out to use the "
                               "account that has no name yet.")
    else:
        prop["description"] = (f"Which of your {title} accounts to use, by name. {unnamed} of them have no name "
                               "yet: name them (connector_accounts tool) before using them.")
    props[ALIAS_FIELD] = prop
    params["properties"] = props
    required = [r for r in params.get("required") or [] if r != ALIAS_FIELD]
    if not unnamed:
        required.append(ALIAS_FIELD)
    if required:
        params["required"] = required
    else:
        params.pop("required", None)
    out["parameters"] = params
    return out


def _valid(names: Sequence[str]) -> str:
    return "valid names: " + (", ".join(names) if names else "none yet (name the accounts first)")


def resolve_alias(args: Mapping[str, Any], app: str, accounts: Sequence[Account]) -> tuple[dict[str, Any], Account]:
    """``(args without connector_alias, the account to use)``; ToolArgumentError listing the valid names
    for a missing or unknown alias, ToolError when no account of ``app`` is active."""
    active = [a for a in accounts if a.app == app and a.active]
    title = _title(app, accounts)
    rest = {k: v for k, v in args.items() if k != ALIAS_FIELD}
    alias = args.get(ALIAS_FIELD)
    if not active:
        raise ToolError(f"no {title} account is connected; connect one in the Nous Portal first")
    names = _names(active)
    if alias is not None:
        match = [a for a in active if a.name is not None and a.name == alias]
        if not match:
            shown = json.dumps(alias, ensure_ascii=False, default=str)[:60]
            raise ToolArgumentError(f"{ALIAS_FIELD} {shown} is not one of your {title} accounts; {_valid(names)}")
        return rest, match[0]
    if len(active) == 1:
        return rest, active[0]
    unnamed = [a for a in active if a.name is None]
    if len(names) < 2 and len(unnamed) == 1:
        return rest, unnamed[0]
    why = "" if not unnamed else f" ({len(unnamed)} of them have no name yet; name them before using them)"
    raise ToolArgumentError(f"{ALIAS_FIELD} is required: you have {len(active)} {title} accounts{why}; "
                            f"{_valid(names)}")


def with_account(result: Any, account: Account) -> Any:
    """``result`` with ``"account": <name>`` added when the account is named (errors are left alone).

    A JSON object (dict or JSON text) gets the key; any other result is wrapped as ``{"result": …}``.
    """
    if account.name is None:
        return result
    value: Any = result
    if isinstance(result, str | bytes):
        try:
            value = json.loads(result)
        except ValueError:
            value = result.decode("utf-8", "replace") if isinstance(result, bytes) else result
    if isinstance(value, dict):
        if "error" in value:
            return result
        return {**value, "account": account.name}
    return {"result": value, "account": account.name}


async def _awaited(result: Coroutine[Any, Any, Any], account: Account) -> Any:
    return with_account(await result, account)


def finish_with_account(result: Any, account: Account) -> Any:
    """:func:`with_account` for a handler's return value, awaiting it first when it is a coroutine."""
    if isinstance(result, Coroutine):
        return _awaited(result, account)
    return with_account(result, account)
