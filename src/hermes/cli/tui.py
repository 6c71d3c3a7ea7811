"""``hermes tui``: the full-screen terminal UI, a second client of the app server (docs/tui.md).

Without ``--url`` it starts an app server in this process on a free loopback port and connects to it;
with ``--url ws://host:port/rpc`` it connects to a running ``hermes serve`` (or to one reached through
``hermes desktop --ssh``'s tunnel). A token is read from ``--token-file`` or the ``HERMES_SERVE_TOKEN``
variable — never from the command line, where other users of the machine could read it.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the app server to use (ws://HOST:PORT/rpc); default: start one here")
    parser.add_argument("--token-file", help="a file holding the server's bearer token (else HERMES_SERVE_TOKEN)")


def read_token(path: str | None) -> str | None:
    """The bearer token from ``path`` or ``HERMES_SERVE_TOKEN`` (None: none given)."""
    import os
    from pathlib import Path

    from hermes.errors import UsageError

    if path:
        try:
            return Path(path).expanduser().read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise UsageError(f"cannot read the token file {path}: {exc}") from None
    return os.environ.get("HERMES_SERVE_TOKEN") or None


def run(args: argparse.Namespace) -> int:
    import importlib.util
    import logging

    from hermes.errors import UsageError

    if importlib.util.find_spec("textual") is None:
        raise UsageError("hermes tui needs Textual: pip install 'hermes[tui]' (or pip install textual)")
    from hermes.surfaces.tui.app import HermesTui

    token = read_token(args.token_file)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if args.url:
        HermesTui(args.url, token, where=args.url).run()
        return 0
    from hermes.cli.common import export_dotenv
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import RPC_PATH, AppServer

    settings = Settings.load()
    export_dotenv(settings)
    api = AppApi(settings)
    server = AppServer(api, Gate("127.0.0.1", None), "127.0.0.1", 0)
    server.start()
    try:
        HermesTui(f"ws://127.0.0.1:{server.port}{RPC_PATH}", None, where="this machine").run()
    finally:
        server.stop()
    return 0
