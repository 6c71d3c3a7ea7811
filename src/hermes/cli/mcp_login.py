"""``hermes mcp login NAME``: the OAuth login of an ``auth: oauth`` MCP server (docs/tools/mcp.md#oauth).

Connects as ``hermes mcp test`` does, with the person's login on the way: the SDK discovers the
server's authorization server, registers hermes there when needed, and hermes prints (and opens, unless
``--no-browser``) the authorization address; the answer comes back to ``http://127.0.0.1:<port>/callback``.
The tokens go to ``HERMES_HOME/mcp-tokens/NAME.json`` (0600) and are never printed. ``--forget`` deletes
that file. Only argparse-level work happens before the command runs.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.config.settings import Settings


def login(settings: Settings, args: argparse.Namespace) -> int:
    from hermes.cli.mcp import _test, configured_server
    from hermes.connectors.mcp.oauth import LoopbackLogin, TokenFile, stored_redirect_port, token_path
    from hermes.errors import ConfigError

    server = configured_server(settings, args.name)
    token_dir = settings.paths.home / "mcp-tokens"
    tokens = TokenFile(token_path(token_dir, server.name))
    if args.forget:
        print(f"Deleted the stored tokens of {server.name}." if tokens.forget()
              else f"{server.name} has no stored tokens.")
        return 0
    if server.auth != "oauth":
        raise ConfigError(f"mcp_servers.{server.name} does not use OAuth: add 'auth: oauth' to its entry "
                          "(or 'hermes mcp add NAME --url URL --auth oauth')")

    def show(url: str) -> None:
        print(f"Open this address to log in to {server.name}:\n  {url}", flush=True)
        if not args.no_browser:
            import webbrowser

            webbrowser.open(url)

    port = stored_redirect_port(token_dir, server.name)
    try:
        person = LoopbackLogin(show, port=port, timeout=args.timeout)
    except OSError:  # the port registered earlier is taken now: register again on a new one
        tokens.update(client=None)
        person = LoopbackLogin(show, timeout=args.timeout)
    status = _test(settings, server.name, args.timeout, login=person)
    if status == 0:
        print(f"Logged in to {server.name}; the tokens are in {tokens.path} (readable by you only).")
    return status
