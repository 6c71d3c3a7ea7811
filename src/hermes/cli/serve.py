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
    parser.add_argument("--require-token", action="store_true", default=None,
                        help="require the bearer token on loopback too (the default, serve.require_token: true; "
                             "a sandboxed command allowed the network and every local user share loopback)")
    parser.add_argument("--token-stdin", action="store_true",
                        help="read the bearer token from the first line of standard input, require it from every "
                             "client (loopback too) and stop when standard input closes (how 'hermes desktop "
                             "--ssh' and 'hermes tui --ssh' start the server on a remote machine)")
    from hermes.surfaces.appserver.remote_cli import add_remote_options

    add_remote_options(parser, verb="hold a local tunnel to", by_url=False)


def open_server(host_arg: str | None, port_arg: int | None, *, token_stdin: bool = False,
                require_token: bool | None = None) -> tuple[AppServer, Gate, Path, str | None]:
    """The app server of this HERMES_HOME bound on its socket (not serving yet), its gate, the home and the
    token read from standard input (``token_stdin``; None otherwise)."""
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
    stdin_token = None
    if token_stdin:
        import sys

        stdin_token = sys.stdin.readline().strip()
        if not stdin_token:
            from hermes.errors import UsageError

            raise UsageError("--token-stdin: the first line of standard input must be the token")
    if require_token is None:
        require_token = bool(settings.get("serve.require_token", True))
    require = stdin_token is not None or require_token
    if stdin_token is None and (require or not is_loopback(host)):
        ensure_token(home)
    gate = Gate(host, stdin_token or read_token(home), require_token=require)
    api = AppApi(settings, max_concurrent_turns=int(settings.get("serve.max_concurrent_turns", 16)))
    try:
        server = AppServer(api, gate, host, port)
    except BaseException:
        api.close()
        raise
    return server, gate, home, stdin_token


def run(args: argparse.Namespace) -> int:
    import signal

    from hermes.surfaces.appserver.auth import token_path
    from hermes.surfaces.appserver.server import RPC_PATH

    if getattr(args, "ssh", None) or getattr(args, "url", None):
        from hermes.cli.common import export_dotenv
        from hermes.config.settings import Settings
        from hermes.surfaces.appserver.remote_cli import hold_remote

        settings = Settings.load()
        export_dotenv(settings)
        return hold_remote(settings, args)
    server, gate, home, stdin_token = open_server(args.host, args.port, token_stdin=args.token_stdin,
                                                  require_token=args.require_token)
    host = server.host
    shown = f"[{host}]" if ":" in host else host
    print(f"hermes app server on ws://{shown}:{server.port}{RPC_PATH}", flush=True)
    if stdin_token is not None:
        print("clients must send the bearer token given on standard input; stops when it closes", flush=True)
        _stop_when_stdin_closes(server)
    elif gate.token_required:
        print(f"clients must send the bearer token stored in {token_path(home)}", flush=True)
    else:
        print("loopback only and serve.require_token: false: no token needed (Ctrl-C stops)", flush=True)
    print(f"the desktop app's page: http://{shown}:{server.port}/", flush=True)
    # uvicorn stops gracefully on SIGTERM, then raises it again for the handler it found: make that a clean exit
    signal.signal(signal.SIGTERM, _exit_cleanly)
    server.serve_forever()
    return 0


def _exit_cleanly(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _stop_when_stdin_closes(server: AppServer) -> None:
    import sys
    import threading

    def watch() -> None:
        while sys.stdin.readline():
            pass
        server.server.should_exit = True

    threading.Thread(target=watch, name="hermes-serve-stdin", daemon=True).start()
