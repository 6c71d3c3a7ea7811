"""``hermes connectors``: your connector accounts (Gmail home, Gmail work, …) on the connector gateway (GW-12).

* ``hermes connectors list [APP] [--all] [--json]`` (also the default) — accounts per app; an unnamed
  account shows its display name; retired accounts are folded into one line unless ``--all``;
* ``hermes connectors rename APP ACCOUNT NEW`` — ACCOUNT is the current name, the display name of an
  unnamed account, or its id; needs a portal that supports renaming;
* ``hermes connectors connect APP [--name N] [--replaces ACCOUNT] [--no-browser]`` — connect an account
  through the app's sign-in page (the gateway runs the OAuth flow; this command opens the page, waits up
  to ten minutes for the sign-in, then asks for the confirmation code the page shows — only this command,
  with your token, can finish the flow); ``--replaces`` reconnects a broken account under its name and
  retires the old one;
* ``hermes connectors remove APP ACCOUNT [--yes]`` — deletes one account after a confirmation. This
  command is the only way accounts are deleted: the agent has no tool for it.

Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from hermes.cli.common import confirmed

if TYPE_CHECKING:
    from hermes.connectors.accounts import Account
    from hermes.connectors.client import ConnectorClient


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="connectors_command", metavar="SUBCOMMAND")
    p = sub.add_parser("list", help="list your connector accounts (retired ones folded; --all shows them)")
    p.add_argument("app", nargs="?", help="only this connector (e.g. gmail)")
    p.add_argument("--all", action="store_true", help="show retired accounts one by one, with ids")
    p.add_argument("--json", action="store_true", help="print JSON (every account, retired ones included)")
    p = sub.add_parser("rename", help="name or rename an account (needs a portal that supports it)")
    p.add_argument("app", help="connector id, e.g. gmail")
    p.add_argument("account", help="current name, display name of an unnamed account, or id")
    p.add_argument("name", help="new name: 1-32 of a-z, 0-9, -, starting with a letter or digit")
    p = sub.add_parser("connect", help="connect an account through the app's sign-in page (opens a browser)")
    p.add_argument("app", help="connector id, e.g. gmail")
    p.add_argument("--name", help="name for the new account (e.g. work)")
    p.add_argument("--replaces", metavar="ACCOUNT", help="reconnect this account: the new one takes its name, "
                                                         "the old one is retired")
    p.add_argument("--no-browser", action="store_true", help="only print the link to open")
    p = sub.add_parser("remove", help="delete one account for good (asks first)")
    p.add_argument("app", help="connector id, e.g. gmail")
    p.add_argument("account", help="name, display name of an unnamed account, or id (retired: use the id)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(app=None, all=False, json=False)


def _client() -> ConnectorClient:
    from hermes.config.settings import Settings
    from hermes.connectors.client import ConnectorClient

    return ConnectorClient.from_settings(Settings.load())


def run(args: argparse.Namespace) -> int:
    command = getattr(args, "connectors_command", None) or "list"
    with _client() as client:
        if command == "rename":
            return _rename(client, args)
        if command == "remove":
            return _remove(client, args)
        if command == "connect":
            return _connect(client, args)
        return _list(client, args)


def _label(account: Account) -> str:
    return account.label if account.name else f"{account.display_name} (unnamed)"


def _row(account: Account, width: int, show_id: bool) -> str:
    label = _label(account)
    extra = ""
    if not account.active:
        extra = f"retired {account.retired_at[:10]}" if account.retired_at else "retired"
        if account.name:
            extra += f", {account.display_name}"
    elif account.name:
        extra = account.display_name
    line = f"  {label.ljust(width)}  {extra}".rstrip()
    return f"{line}  {account.id}" if show_id else line


def _list(client: ConnectorClient, args: argparse.Namespace) -> int:
    import json

    from hermes.connectors.accounts import by_app
    from hermes.connectors.naming import app_title

    listing = client.list(args.app)
    if args.json:
        print(json.dumps({"capabilities": dict(listing.capabilities),
                          "accounts": [a.as_json() for a in listing.accounts]}, indent=2))
        return 0
    groups = by_app(listing.accounts)
    if not groups:
        where = f"{app_title(args.app)} accounts" if args.app else "connector accounts"
        print(f"No {where} yet. Connect apps in the Nous Portal.")
        return 0
    for index, (app, accounts) in enumerate(groups.items()):
        if index:
            print()
        print(accounts[0].app_title)
        active = [a for a in accounts if a.active]
        retired = [a for a in accounts if not a.active]
        shown = active + retired if args.all else active
        width = max((len(_label(a)) for a in shown), default=0)
        for account in shown:
            print(_row(account, width, args.all))
        if retired and not args.all:
            noun = "account" if len(retired) == 1 else "accounts"
            print(f"  + {len(retired)} retired {noun} (hermes connectors list {app} --all)")
    return 0


def _rename(client: ConnectorClient, args: argparse.Namespace) -> int:
    from hermes.connectors.accounts import ConnectorError, find_account
    from hermes.connectors.naming import name_problem

    problem = name_problem(args.name)
    if problem is not None:
        raise ConnectorError(problem)
    listing = client.list(args.app)
    account = find_account(listing.accounts, args.app, args.account)
    if not account.active:
        raise ConnectorError(f"the {account.app_title} account {account.label} is retired and cannot be renamed")
    renamed = client.rename(account, args.name, capabilities=listing.capabilities)
    if account.name is None:
        print(f"Named the {renamed.app_title} account {account.display_name} {renamed.name}.")
    else:
        print(f"Renamed the {renamed.app_title} account {account.name} to {renamed.name}.")
    return 0


def _remove(client: ConnectorClient, args: argparse.Namespace) -> int:
    from hermes.connectors.accounts import find_account

    account = find_account(client.list(args.app).accounts, args.app, args.account)
    what = f"the {account.app_title} account {account.label}"
    if account.name:
        what += f" ({account.display_name})"
    if not account.active:
        what += ", retired"
    if not args.yes and not confirmed(f"Remove {what}? This cannot be undone."):
        print("Not removed.")
        return 1
    client.delete(account)
    print(f"Removed {what}.")
    return 0


#: how often ``connect`` asks whether the sign-in finished, and for how long (the gateway's flows last 10 min)
POLL_EVERY = 1.0
POLL_FOR = 600.0


def _connect(client: ConnectorClient, args: argparse.Namespace) -> int:
    import time

    from hermes.connectors.accounts import ConnectorError, find_account

    replaces = None
    if args.replaces:
        replaces = find_account(client.list(args.app).accounts, args.app, args.replaces).id
    begun = client.connect(args.app, name=args.name, replaces=replaces)
    title = begun.get("app_title") or args.app
    print(f"Open this link to connect a {title} account (it works once, for ten minutes):\n  {begun['url']}",
          flush=True)
    if not args.no_browser:
        import webbrowser

        webbrowser.open(str(begun["url"]))
    until = time.monotonic() + POLL_FOR
    while time.monotonic() < until:
        status = client.connect_status(str(begun["connect_id"]))
        if status.get("status") == "awaiting_confirmation":
            status = _confirm(client, str(begun["connect_id"]), title)
        if status.get("status") == "connected":
            account = status.get("account") or {}
            label = account.get("name") or account.get("display_name") or "account"
            print(f"Connected the {title} account {label} ({account.get('display_name', '')}).")
            if replaces:
                print(f"The account it replaces is retired; remove it with: hermes connectors remove {args.app} "
                      f"{replaces}")
            elif not account.get("name"):
                print(f"Name it with: hermes connectors rename {args.app} {account.get('id')} NAME")
            return 0
        if status.get("status") == "failed":
            raise ConnectorError(f"the {title} account was not connected: {status.get('error', 'the sign-in failed')}")
        time.sleep(POLL_EVERY)
    raise ConnectorError(f"the {title} sign-in did not finish within ten minutes; run the command again")


def _confirm(client: ConnectorClient, connect_id: str, title: str) -> dict[str, Any]:
    """Ask for the code the browser page shows until the gateway takes it (it allows five tries)."""
    from hermes.connectors.accounts import ConnectorError

    while True:
        try:
            code = input(f"Signed in at {title}. Type the confirmation code the browser shows: ")
        except EOFError:
            raise ConnectorError(f"the {title} account was not connected: no confirmation code was typed") from None
        try:
            return client.connect_confirm(connect_id, code.strip())
        except ConnectorError as exc:
            if exc.code != "wrong_code":
                raise
            print(str(exc).removeprefix("connector gateway: "), flush=True)
