"""``hermes serve``: the app server, a JSON-RPC 2.0 API over a WebSocket (docs/app-server.md).

Loopback (``127.0.0.1``) by default, where no token is needed. Binding anything else needs the bearer
token in ``HERMES_HOME/serve_token`` (created 0600 on first need); its path is printed, never its value.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.server import AppServer


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1); anything beyond "
                                       "loopback requires the bearer token")
    parser.add_argument("--port", type=int, help="port (default: serve.port, 8765; 0: any free port)")


def open_server(host_arg: str | None, port_arg: int | None) -> tuple[AppServer, Gate, Path]:
    """The app server of this HERMES_HOME bound on its socket (not serving yet), its gate and the home."""
    import logging

    from hermes.cli.common import export_dotenv
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.auth import Gate, ensure_token, is_loopback, read_token
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import AppServer

    settings = Settings.load()
    export_dotenv(settings)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    host = host_arg or str(settings.get("serve.host", "127.0.0.1"))
    port = port_arg if port_arg is not None else int(settings.get("serve.port", 8765))
    home = settings.paths.ensure()
    if not is_loopback(host):
        ensure_token(home)
    gate = Gate(host, read_token(home))
    api = AppApi(settings, max_concurrent_turns=int(settings.get("serve.max_concurrent_turns", 16)))
    try:
        server = AppServer(api, gate, host, port)
    except BaseException:
        api.close()
        raise
    return server, gate, home


def run(args: argparse.Namespace) -> int:
    import signal

    from hermes.surfaces.appserver.auth import token_path
    from hermes.surfaces.appserver.server import RPC_PATH

    server, gate, home = open_server(args.host, args.port)
    host = server.host
    shown = f"[{host}]" if ":" in host else host
    print(f"hermes app server on ws://{shown}:{server.port}{RPC_PATH}", flush=True)
    if gate.token_required:
        print(f"clients must send the bearer token stored in {token_path(home)}", flush=True)
    else:
        print("loopback only: no token needed (Ctrl-C stops)", flush=True)
    print(f"the desktop app's page: http://{shown}:{server.port}/", flush=True)
    # uvicorn stops gracefully on SIGTERM, then raises it again for the handler it found: make that a clean exit
    signal.signal(signal.SIGTERM, _exit_cleanly)
    server.serve_forever()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)
