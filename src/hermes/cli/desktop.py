"""``hermes desktop``: the desktop app — the app server with its web front end, opened in a window.

The page is served by the app server itself (``/``, the package's ``surfaces/appserver/web``) and
speaks only its JSON-RPC API. It opens in a pywebview window when pywebview is installed, else in the
default browser; ``--no-open`` only serves (tests, a browser of your choice). Loopback on any free
port by default, so it never clashes with a running ``hermes serve``; Ctrl-C (or closing the window)
stops it. Docs: docs/desktop.md.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, default=0, help="port to serve on (default 0: any free port)")
    parser.add_argument("--no-open", action="store_true", help="serve only; open no window or browser")


def run(args: argparse.Namespace) -> int:
    import importlib.util
    import signal

    from hermes.cli.serve import _exit_cleanly, open_server

    server, _gate, _home, _token = open_server("127.0.0.1", args.port)
    url = f"http://127.0.0.1:{server.port}/"
    print(f"hermes desktop on {url}", flush=True)
    signal.signal(signal.SIGTERM, _exit_cleanly)
    if args.no_open:
        print("serving only (--no-open); Ctrl-C stops", flush=True)
        server.serve_forever()
        return 0
    if importlib.util.find_spec("webview") is not None:
        import webview

        server.start()
        try:
            webview.create_window("hermes", url, width=1280, height=860)
            webview.start()  # returns when the window closes
        finally:
            server.stop()
        return 0
    import threading
    import time
    import webbrowser

    def open_when_serving() -> None:
        deadline = time.monotonic() + 30
        while not server.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        webbrowser.open(url)

    print("pywebview is not installed: opening the page in your browser (Ctrl-C stops)", flush=True)
    threading.Thread(target=open_when_serving, daemon=True).start()
    server.serve_forever()
    return 0
