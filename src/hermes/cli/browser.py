"""``hermes browser vault``: the person's site logins for the browser tools (docs/tools/browser.md#the-vault).

* ``hermes browser vault add SITE USERNAME [--totp]`` — asks for the password (and with ``--totp`` the
  TOTP secret) without echo; from a pipe it reads them from stdin, one a line. Never from argv, where
  the shell history and ``ps`` would see them;
* ``hermes browser vault list [--json]`` — handles, sites, usernames, whether a TOTP secret is kept, and
  where the key is (OS keyring or the 0600 key file);
* ``hermes browser vault remove HANDLE [--yes]`` — the only way an entry is deleted;
* ``hermes browser vault import --from 1password|bitwarden [--vault NAME] [--dry-run]`` — the logins of the
  1Password or Bitwarden CLI (signed in / unlocked), each replacing the entry of the same site and username
  (:mod:`hermes.tools.browser.vault_import`); only sites and usernames are printed.

The tools see the vault only with ``browser.vault.enabled: true``. Only argparse is imported here.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hermes.cli.common import confirmed

if TYPE_CHECKING:
    from hermes.tools.browser.vault import Vault


def configure(parser: argparse.ArgumentParser) -> None:
    top = parser.add_subparsers(dest="browser_command", metavar="SUBCOMMAND")
    vault = top.add_parser("vault", help="site logins the browser tools can fill (the model never reads them)")
    sub = vault.add_subparsers(dest="vault_command", metavar="ACTION")
    p = sub.add_parser("add", help="store a login (the password is asked for, never given on the command line)")
    p.add_argument("site", help="the site's address, e.g. https://example.com (its origin is kept)")
    p.add_argument("username", help="the username or e-mail of the login")
    p.add_argument("--totp", action="store_true", help="also ask for a TOTP secret (the text under the QR code)")
    p = sub.add_parser("list", help="the stored logins (no passwords) and where the key is kept")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("remove", help="delete one stored login (asks first)")
    p.add_argument("handle", help="the entry's handle, from 'hermes browser vault list'")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p = sub.add_parser("import", help="copy logins from the 1Password (op) or Bitwarden (bw) command-line tool")
    p.add_argument("--from", dest="source", required=True, choices=("1password", "bitwarden"),
                   help="the password manager whose CLI is installed and signed in (bw: unlocked, BW_SESSION set)")
    p.add_argument("--vault", help="1Password only: import from this vault (default: every vault you can read)")
    p.add_argument("--dry-run", action="store_true", help="list what would be imported (sites and usernames)")


def _secret(prompt: str) -> str:
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass(prompt)
    return sys.stdin.readline().rstrip("\r\n")


def run(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.errors import ConfigError
    from hermes.tools.browser.vault import Vault

    if getattr(args, "browser_command", None) != "vault" or not getattr(args, "vault_command", None):
        print("usage: hermes browser vault add|list|remove|import (see hermes browser vault --help)", file=sys.stderr)
        return 2
    vault = Vault(Settings.load().paths.home)
    try:
        if args.vault_command == "add":
            return _add(vault, args)
        if args.vault_command == "remove":
            return _remove(vault, args)
        if args.vault_command == "import":
            return _import(vault, args)
        return _list(vault, args)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _add(vault: Vault, args: argparse.Namespace) -> int:
    password = _secret(f"Password of {args.username}: ")
    if not password:
        print("error: an empty password; nothing stored", file=sys.stderr)
        return 1
    totp = _secret("TOTP secret (base32): ").strip() if args.totp else None
    if args.totp and not totp:
        print("error: --totp given but the TOTP secret is empty; nothing stored", file=sys.stderr)
        return 1
    entry = vault.add(args.site, args.username, password, totp)
    print(f"stored {entry.handle}: {entry.username} at {entry.site}" + (" (with TOTP)" if totp else ""))
    print(f"key: {vault.key_store()}")
    return 0


def _list(vault: Vault, args: argparse.Namespace) -> int:
    import json

    entries = [e.public() for e in vault.entries()]
    if getattr(args, "json", False):
        print(json.dumps({"key": vault.key_store(), "entries": entries}, indent=2))
        return 0
    print(f"key: {vault.key_store()}")
    if not entries:
        print("no stored logins (hermes browser vault add SITE USERNAME)")
    for e in entries:
        print(f"  {e['handle']}  {e['site']}  {e['username']}" + ("  [totp]" if e["has_totp"] else ""))
    return 0


def _remove(vault: Vault, args: argparse.Namespace) -> int:
    entry = vault.find(args.handle)
    if entry is None:
        print(f"error: no vault entry {args.handle} (hermes browser vault list shows them)", file=sys.stderr)
        return 1
    if not args.yes and not confirmed(f"Delete {entry.username} at {entry.site} ({entry.handle})?"):
        print("nothing deleted")
        return 1
    vault.remove(args.handle)
    print(f"deleted {entry.handle}: {entry.username} at {entry.site}")
    return 0


def _import(vault: Vault, args: argparse.Namespace) -> int:
    from hermes.tools.browser.vault_import import harvest_from

    harvest = harvest_from(args.source, args.vault)
    shown = "would import" if args.dry_run else "imported"
    if args.dry_run:
        entries = [(login.site, login.username, bool(login.totp_secret)) for login in harvest.logins]
        refused: list[str] = []
    else:
        added, refused = vault.add_many([(x.site, x.username, x.password, x.totp_secret) for x in harvest.logins])
        entries = [(e.site, e.username, bool(e.totp_secret)) for e in added]
    harvest.logins.clear()
    for site, username, totp in entries:
        print(f"  {site}  {username}" + ("  [totp]" if totp else ""))
    for why in [*harvest.skipped, *refused]:
        print(f"  skipped {why}")
    print(f"{shown} {len(entries)} login(s) from {args.source}; skipped {len(harvest.skipped) + len(refused)}")
    if not args.dry_run and entries:
        print(f"key: {vault.key_store()}")
    return 0
