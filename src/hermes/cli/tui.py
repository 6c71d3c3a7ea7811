"""``hermes tui``: the full-screen terminal UI, a second client of the app server (docs/tui.md).

Without ``--url`` it starts an app server in this process on a free loopback port and connects to it;
with ``--url ws://host:port/rpc`` it connects to a running ``hermes serve``; with ``--ssh HOST`` it starts one
there over SSH and connects through a forwarded port (:mod:`hermes.surfaces.appserver.remote`). A token is
read from ``--token-file`` or the ``HERMES_SERVE_TOKEN`` variable — never from the command line, where other
users of the machine could read it.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    from hermes.surfaces.appserver.remote_cli import add_remote_options

    add_remote_options(parser)


def run(args: argparse.Namespace) -> int:
    import importlib.util
    import logging

    from hermes.errors import UsageError

    if importlib.util.find_spec("textual") is None:
        raise UsageError("hermes tui needs Textual: pip install 'hermes[tui]' (or pip install textual)")
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.remote_cli import open_backend
    from hermes.surfaces.tui.app import HermesTui

    logging.getLogger("httpx").setLevel(logging.WARNING)
    settings = Settings.load()
    backend = open_backend(settings, args)
    if backend is not None:
        with backend:
            HermesTui(backend.url, backend.token, where=backend.where).run()
        return 0
    import secrets

    from hermes.cli.common import export_dotenv
    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import RPC_PATH, AppServer

    export_dotenv(settings)
    api = AppApi(settings)
    # a token of this process's own, even on loopback: a sandboxed command allowed the network shares it
    token = secrets.token_urlsafe(32)
    server = AppServer(api, Gate("127.0.0.1", token, require_token=True), "127.0.0.1", 0)
    server.start()
    try:
        HermesTui(f"ws://127.0.0.1:{server.port}{RPC_PATH}", token, where="this machine").run()
    finally:
        server.stop()
    return 0
