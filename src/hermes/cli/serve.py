"""``hermes serve``: the app server, a JSON-RPC 2.0 API over a WebSocket (docs/app-server.md).

Loopback (``127.0.0.1``) by default, where no token is needed. Binding anything else needs the bearer
token in ``HERMES_HOME/serve_token`` (created 0600 on first need); its path is printed, never its value.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="address to listen on (default: serve.host, 127.0.0.1); anything beyond "
                                       "loopback requires the bearer token")
    parser.add_argument("--port", type=int, help="port (default: serve.port, 8765; 0: any free port)")
    parser.add_argument("--require-token", action="store_true", default=None,
                        help="require the bearer token on loopback too (default: serve.require_token); for a "
                             "machine other people log in to")


def run(args: argparse.Namespace) -> int:
    import logging
    import signal

    from hermes.cli.common import export_dotenv
    from hermes.config.settings import Settings
    from hermes.surfaces.appserver.auth import Gate, ensure_token, is_loopback, read_token, token_path
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import RPC_PATH, AppServer

    settings = Settings.load()
    export_dotenv(settings)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    host = args.host or str(settings.get("serve.host", "127.0.0.1"))
    port = args.port if args.port is not None else int(settings.get("serve.port", 8765))
    home = settings.paths.ensure()
    require = bool(args.require_token or settings.get("serve.require_token", False))
    if require or not is_loopback(host):
        ensure_token(home)
    gate = Gate(host, read_token(home), require_token=require)
    api = AppApi(settings, max_concurrent_turns=int(settings.get("serve.max_concurrent_turns", 16)))
    try:
        server = AppServer(api, gate, host, port)
    except BaseException:
        api.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    print(f"hermes app server on ws://{shown}:{server.port}{RPC_PATH}", flush=True)
    if gate.token_required:
        print(f"clients must send the bearer token stored in {token_path(home)}", flush=True)
    else:
        print("loopback only: no token needed (Ctrl-C stops)", flush=True)
    # uvicorn stops gracefully on SIGTERM, then raises it again for the handler it found: make that a clean exit
    signal.signal(signal.SIGTERM, _exit_cleanly)
    server.serve_forever()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)
