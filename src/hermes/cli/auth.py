"""``hermes auth add|list|remove``: credentials for a provider kept in ``auth.json`` (mode 0600).

* ``add openrouter`` stores an API key (asked without echo on a terminal, else read from the first line
  of stdin) in ``credential_pool.openrouter``; it is used wherever ``OPENROUTER_API_KEY`` would be (the
  OpenRouter video backend), unless that variable is set (:mod:`hermes.routing.stored_keys`);
* ``add xai --type oauth`` logs in with a SuperGrok (xAI) subscription through xAI's device-code flow
  (:mod:`hermes.routing.xai_oauth`); the xAI video backend then uses that login when ``XAI_API_KEY`` is unset;
* ``list`` shows what is stored — never a key or a token; ``remove PROVIDER`` forgets it.

Only argparse is imported at module level.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="auth_command", metavar="SUBCOMMAND")
    add = sub.add_parser("add", help="store a provider's API key, or log in (xai --type oauth)")
    add.add_argument("provider", help="openrouter (an API key) or xai (--type oauth: a SuperGrok login)")
    add.add_argument("--type", dest="auth_type", choices=("api-key", "oauth"), default="api-key",
                     help="api-key (default) or oauth (xai only)")
    add.add_argument("--label", default=None, help="a name for this credential (shown by 'hermes auth list')")
    add.add_argument("--no-browser", action="store_true", help="oauth: only print the approval URL")
    listed = sub.add_parser("list", help="the stored credentials (never the keys themselves)")
    listed.add_argument("--json", action="store_true", help="print JSON instead of text")
    remove = sub.add_parser("remove", help="forget a provider's stored credentials")
    remove.add_argument("provider", help="openrouter or xai")


def _read_key(provider: str) -> str:
    import getpass
    import sys

    if sys.stdin.isatty():
        return getpass.getpass(f"{provider} API key (not shown): ")
    return sys.stdin.readline().strip()


def _xai_login(auth: Path, *, open_browser: bool) -> int:
    from hermes.cli.portal import show_device_code
    from hermes.config.settings import Settings
    from hermes.routing import xai_oauth

    stored = xai_oauth.login(auth, Settings.load().env.as_dict(), show=show_device_code(print, open_browser))
    print(f"Logged in to xAI ({stored['issuer']}); saved in {auth} (mode 0600). The xAI video tools use this "
          "login where XAI_API_KEY is unset.")
    return 0


def run(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings
    from hermes.errors import ConfigError
    from hermes.routing import stored_keys, xai_oauth

    auth = Settings.load().paths.auth
    command = getattr(args, "auth_command", None) or "list"
    if command == "add":
        provider = args.provider.strip().lower()
        if args.auth_type == "oauth":
            if provider != "xai":
                raise ConfigError("only xai has an OAuth login here ('hermes auth add xai --type oauth'); "
                                  "for the Nous Portal use 'hermes portal login'")
            return _xai_login(auth, open_browser=not args.no_browser)
        entry = stored_keys.add_key(auth, provider, _read_key(provider), args.label)
        variable = stored_keys.STORED_KEY_VARIABLES[provider]
        print(f"Stored {entry['label']} ({entry['id']}) in {auth} (mode 0600); used where {variable} is unset.")
        return 0
    if command == "remove":
        provider = args.provider.strip().lower()
        gone = xai_oauth.logout(auth) if provider == "xai" else stored_keys.remove_keys(auth, provider)
        print(f"Removed {gone} stored {provider} credential{'s' if gone != 1 else ''}." if gone
              else f"No stored {provider} credential.")
        return 0
    rows = stored_keys.listing(auth) + xai_oauth.listing(auth)
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
    elif not rows:
        print("No stored credentials ('hermes auth add openrouter', 'hermes auth add xai --type oauth').")
    for row in rows if not getattr(args, "json", False) else []:
        print(f"{row['provider']:<11} {row.get('label') or '':<24} {row.get('kind', 'api key'):<14} "
              f"added {row.get('added_at') or '?'}")
    return 0
