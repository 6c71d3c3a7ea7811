"""``hermes toolgateway connectors``: the operator's side of connector accounts (docs/gateway/connectors.md).

A self-hosted gateway does not run OAuth against Gmail and the like, so the operator records the
accounts a user has connected::

    hermes toolgateway connectors add alice gmail --name work --display-name alice@work.example
    hermes toolgateway connectors add alice gmail --replaces work     # reconnect: old one retired
    GMAIL_TOKEN=… hermes toolgateway connectors add alice gmail --name work --token-env GMAIL_TOKEN

``--token-env VAR`` stores the account's provider token (read from the environment variable ``VAR``,
never from the command line), sealed with the gateway's key; the gateway sends it to the app when the
account's actions run (``[connectors.apps.<app>]``) and never returns it.
    hermes toolgateway connectors list [alice] [--json]

Deleting stays with the user (``hermes connectors remove APP NAME`` on their machine). Only argparse is
imported at module level.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway


def configure(sub: argparse._SubParsersAction[argparse.ArgumentParser],
              common: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``connectors add|list`` under ``hermes toolgateway``."""
    parser = sub.add_parser("connectors", help="record users' connector accounts (Gmail home, Gmail work, …)")
    csub = parser.add_subparsers(dest="connectors_command", metavar="ACTION", required=True)
    sp = csub.add_parser("add", help="record a connected account for USER and APP (e.g. gmail)")
    sp.add_argument("user")
    sp.add_argument("app", help="connector id: a-z, 0-9, - and _ (gmail, github, google-calendar)")
    sp.add_argument("--name", help="account name: 1-32 of a-z, 0-9, -, starting with a letter or digit")
    sp.add_argument("--display-name", help="how the app calls the account (shown while it has no name)")
    sp.add_argument("--replaces", metavar="ACCOUNT",
                    help="reconnect: the active account (name or id) this one replaces; it is kept as retired "
                         "and the new one takes its name")
    sp.add_argument("--token-env", metavar="VAR",
                    help="the environment variable holding the account's provider token (stored sealed; "
                         "sent to the app when its actions run)")
    common(sp)
    sp = csub.add_parser("list", help="list connector accounts (all users, or one)")
    sp.add_argument("user", nargs="?")
    sp.add_argument("--json", action="store_true", help="print JSON")
    common(sp)


def run(gw: Gateway, args: argparse.Namespace) -> int:
    import json

    from hermes.errors import HermesError
    from hermes.toolgateway.storage.connector_store import ConnectorStore, ConnectorStoreError

    store = ConnectorStore(gw.conn, gw.clock)
    if args.connectors_command == "add":
        user = gw.accounts.get_user(args.user)
        sealer = None
        if args.token_env:
            import os

            from hermes.toolgateway.storage.sealed import seal

            token = os.environ.get(args.token_env, "").strip()
            if not token:
                raise HermesError(f"--token-env {args.token_env}: that environment variable is empty or unset")
            key = gw.sealing_key

            def sealer(account_id: str) -> str:
                return seal(key, account_id, token)
        try:
            account = store.add(user.id, args.app, name=args.name, display_name=args.display_name,
                                replaces=args.replaces, credential=sealer)
        except ConnectorStoreError as exc:
            raise HermesError(exc.message) from None
        shown = account.name or f"unnamed ({account.display_name})"
        extra = f", replacing {args.replaces} (now retired)" if args.replaces else ""
        extra += ", token stored sealed" if sealer is not None else ""
        print(f"added {account.app} account {shown} for {user.name} ({account.id}){extra}")
        return 0
    users = [gw.accounts.get_user(args.user)] if args.user else gw.accounts.list_users()
    rows = [(u.name, a) for u in users for a in store.accounts(u.id)]
    if args.json:
        print(json.dumps([{"user": name, **a.as_json()} for name, a in rows], indent=2))
    elif not rows:
        print("no connector accounts; record one with: hermes toolgateway connectors add USER APP [--name N]")
    else:
        table = [("USER", "APP", "NAME", "DISPLAY NAME", "STATE", "ID")] + [
            (name, a.app, a.name or "-", a.display_name, a.status, a.id) for name, a in rows]
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        for row in table:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0
