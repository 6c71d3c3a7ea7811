"""``download_voice``: the voice messages' one download path, against a loopback server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from hermes.surfaces.messaging.adapter import download_voice


class _Files(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/big")
            self.end_headers()
            return
        self.send_response(200)
        self.end_headers()  # no Content-Length: the size is known only by reading (as a chunked or endless answer)
        for _ in range(64 if self.path == "/big" else 1):
            self.wfile.write(b"x" * 1024)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def files() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_body_is_read_up_to_the_limit_and_redirects_are_not_followed(files: str) -> None:
    assert asyncio.run(download_voice(f"{files}/small", limit=4096)) == (200, b"x" * 1024)
    assert asyncio.run(download_voice(f"{files}/big", limit=4096)) == (200, None)  # stopped past the cap
    assert asyncio.run(download_voice(f"{files}/moved", limit=10**6)) == (302, None)
