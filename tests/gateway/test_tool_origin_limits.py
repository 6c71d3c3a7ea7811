"""The shared ``tool-gateway`` origin under abuse, over real HTTP: what a request may cost the gateway.

* an image edit names at most 16 images, and the count (and the mask) is checked before any upload is
  read from disk; an upload named many times is read once;
* the per-user upload cap holds under concurrent uploads (the row claims the room before the file is
  written) and is given back when an upload is deleted or its write fails;
* capability URLs are served from the file, streamed (``Range`` works), with the same headers as before;
* bad text and deep JSON are 400s, never 500s; a NUL in an OAuth form field is ``invalid_request``;
* a Redis that accepts connections and never answers costs a request well under a second or two (503).
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.vendors import ServerThread
from fakes.vendors.fal import tiny_png
from fakes.vendors.harness import GatewayHarness
from fakes.vendors.openai_images import FakeOpenAIImages
from gateway.test_tool_origin import OPERATOR_KEY, PNG, auth, fetch, harness, images, listing, upload

OK = {"model": "gpt-image-1", "prompt": "x"}


@pytest.fixture(scope="module")
def backend() -> Iterator[tuple[FakeOpenAIImages, ServerThread]]:
    vendor = FakeOpenAIImages(key=OPERATOR_KEY)
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def gw(backend: tuple[FakeOpenAIImages, ServerThread], tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[GatewayHarness]:
    gateway = harness(tmp_path_factory.mktemp("gw_limits"), backend[1].url)
    yield gateway
    gateway.stop()


def stored(gw: GatewayHarness, upload_id: str) -> Path:
    return gw.config.state_dir / "uploads" / upload_id


# -- image edits: the count first, each upload read once --------------------------------------------------
def test_too_many_images_are_refused_before_any_upload_is_read(gw: GatewayHarness) -> None:
    token = gw.token("alice")
    url = upload(gw, token, tiny_png(5, 5)).json()["url"]
    stored(gw, url.split("/files/")[1].split(".")[0]).unlink()  # reading it now would be "no longer stored"
    many = {**OK, "images": [{"image_url": url}] * 400}
    resp = images(gw, token, "edits", json=many)
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_request", resp.text
    assert "at most 16 images" in resp.json()["error"]
    resp = images(gw, token, "edits", json={**OK, "images": [{"image_url": url}] * 17})
    assert "at most 16 images" in resp.json()["error"]
    # the mask is checked before the images are read, too
    resp = images(gw, token, "edits", json={**OK, "images": [{"image_url": url}], "mask": {"image_url": "ftp://m"}})
    assert resp.status_code == 400 and "each of mask needs an 'image_url'" in resp.json()["error"]
    # only a well-formed request reads the file — and finds it gone
    resp = images(gw, token, "edits", json={**OK, "images": [{"image_url": url}]})
    assert resp.status_code == 400 and resp.json()["code"] == "upload_expired"
    # multipart: counted before the parts are looked at
    files = [("image[]", ("a.png", b"not an image", "image/png"))] * 17
    resp = images(gw, token, "edits", data=OK, files=files)
    assert resp.status_code == 400 and "at most 16 images" in resp.json()["error"]


def test_an_upload_named_many_times_still_edits(gw: GatewayHarness,
                                                backend: tuple[FakeOpenAIImages, ServerThread]) -> None:
    token = gw.token("alice")
    source = tiny_png(6, 2)
    url = upload(gw, token, source).json()["url"]
    external = "https://images.example.com/cat.png"
    resp = images(gw, token, "edits", json={**OK, "images": [{"image_url": url}] * 15 + [{"image_url": external}],
                                            "mask": {"image_url": url}})
    assert resp.status_code == 200, resp.text
    sent = backend[0].edits[-1]["json"]
    inline = [item["image_url"] for item in sent["images"][:15]] + [sent["mask"]["image_url"]]
    assert all(base64.b64decode(u.split(",", 1)[1]) == source for u in inline)
    assert sent["images"][15] == {"image_url": external} and len(sent["images"]) == 16


# -- the per-user storage cap under concurrency -----------------------------------------------------------
def test_concurrent_uploads_never_pass_the_storage_cap(backend: tuple[FakeOpenAIImages, ServerThread],
                                                       tmp_path: Path) -> None:
    size = 1024 * 1024
    data = PNG + b"\x00" * (size - len(PNG))
    gw = harness(tmp_path, backend[1].url, upload_max_bytes=2 * size, upload_user_bytes=2 * size + size // 2)
    try:
        token = gw.token("alice")

        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=60) as client:
                return await asyncio.gather(*(client.post(
                    f"{gw.relay_url('tool')}/api/uploads/nous", files={"file": ("big.png", data, "image/png")},
                    headers=auth(token)) for _ in range(20)))

        answers = asyncio.run(burst())
        codes = sorted(r.status_code for r in answers)
        assert codes == [201] * 2 + [429] * 18, [r.text for r in answers if r.status_code not in (201, 429)]
        assert {r.json()["code"] for r in answers if r.status_code == 429} == {"upload_storage_full"}
        token = gw.token("alice")  # a fresh token: the burst used up the first one's rate limit
        kept = listing(gw, token)
        assert len(kept) == 2 and sum(u["bytes"] for u in kept) == 2 * size
        assert sorted(p.name for p in (gw.config.state_dir / "uploads").iterdir()) == sorted(u["id"] for u in kept)
        # deleting one gives its room back
        gone = httpx.delete(f"{gw.relay_url('tool')}/api/uploads/files/{kept[0]['id']}", headers=auth(token))
        assert gone.status_code == 204
        assert upload(gw, token, data).status_code == 201
        assert upload(gw, token, data).status_code == 429
    finally:
        gw.stop()


def test_a_failed_write_gives_the_room_back(backend: tuple[FakeOpenAIImages, ServerThread], tmp_path: Path) -> None:
    folder = tmp_path / "uploads"
    gw = harness(tmp_path, backend[1].url, upload_user_bytes=len(PNG), upload_dir=str(folder))
    try:
        token = gw.token("alice")
        folder.write_text("a file where the folder should be")
        failed = upload(gw, token)
        assert failed.status_code == 500 and failed.json()["code"] == "internal_error"
        assert listing(gw, token) == []  # no row left behind
        folder.unlink()
        assert upload(gw, token).status_code == 201  # the whole cap is still free
        assert upload(gw, token).status_code == 429
    finally:
        gw.stop()


# -- capability URLs are streamed from the file -----------------------------------------------------------
def test_capability_urls_stream_the_file(gw: GatewayHarness) -> None:
    token = gw.token("alice")
    data = tiny_png(40, 30)
    made = upload(gw, token, data).json()
    got = fetch(gw, made["url"])
    assert got.status_code == 200 and got.content == data
    assert got.headers["content-type"] == "image/png" and got.headers["content-length"] == str(len(data))
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["cache-control"].startswith("private, max-age=")
    assert got.headers["content-security-policy"] == "default-src 'none'; sandbox"
    head = fetch(gw, made["url"], "HEAD")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(data))
    part = httpx.get(made["url"], headers={"range": "bytes=0-7"}, timeout=30)
    assert part.status_code == 206 and part.content == data[:8]
    stored(gw, made["id"]).unlink()
    missing = fetch(gw, made["url"])
    assert missing.status_code == 404 and missing.json()["code"] == "upload_not_found"
    wrong = fetch(gw, made["url"].split("?")[0] + "?key=nope")
    assert wrong.status_code == 404 and wrong.json()["code"] == "upload_not_found"


# -- 400s, never 500s -----------------------------------------------------------------------------------
def raw(gw: GatewayHarness, path: str, body: bytes) -> httpx.Response:
    return images(gw, gw.token("alice"), path, content=body, headers={"content-type": "application/json"})


def test_lone_surrogates_and_deep_json_are_400(gw: GatewayHarness, backend: tuple[FakeOpenAIImages,
                                                                                      ServerThread]) -> None:
    for path in ("generations", "edits"):
        lone = raw(gw, path, b'{"model": "m", "prompt": "a \\ud800 b", "images": [{"image_url": "data:x"}]}')
        assert lone.status_code == 400 and "'prompt' is not valid Unicode text" in lone.json()["error"], lone.text
        deep = raw(gw, path, b'{"model": "m", "prompt": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        assert deep.status_code == 400 and deep.json()["code"] == "invalid_json", deep.text
    # other fields are passed on as JSON escapes, or refused where a form field cannot carry them
    odd = raw(gw, "generations", b'{"model": "m", "prompt": "p", "quality": "\\udfff"}')
    assert odd.status_code == 200, odd.text
    assert backend[0].requests[-1]["json"]["quality"] == "\udfff"
    url = upload(gw, gw.token("alice")).json()["url"]
    body = json.dumps({**OK, "size": "\udfff", "images": [{"image_url": url}]}).encode()
    refused = raw(gw, "edits", body)
    assert refused.status_code == 400 and "'size' is not valid Unicode text" in refused.json()["error"]


def test_nul_in_oauth_form_fields_is_invalid_request(gw: GatewayHarness) -> None:
    for form in ({"client_id": "hermes\x00cli"}, {"client_id": "hermes-cli", "scope": "tool:invoke\x00"}):
        resp = httpx.post(f"{gw.url}/api/oauth/device/code", data=form, timeout=30)
        assert resp.status_code == 400 and resp.json()["error"] == "invalid_request", resp.text
    for form in ({"grant_type": "urn:ietf:params:oauth:grant-type:device_code", "device_code": "d\x00",
                  "client_id": "c"},
                 {"grant_type": "refresh_token", "refresh_token": "rt_x", "client_id": "c\x00"}):
        resp = httpx.post(f"{gw.url}/api/oauth/token", data=form, timeout=30)
        assert resp.status_code == 400 and resp.json()["error"] == "invalid_request", resp.text


# -- a Redis that never answers ---------------------------------------------------------------------------
class SilentServer:
    """Accepts TCP connections and never writes a byte (a hung Redis)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def test_a_silent_redis_fails_closed_quickly(tmp_path: Path) -> None:
    silent = SilentServer()
    gw = GatewayHarness(tmp_path, redis_url=f"redis://127.0.0.1:{silent.port}/0",
                        rate_limit={"per_second": 5, "burst": 10})
    try:
        gw.start()
        gw.user("alice", "paid")
        token = gw.token("alice")
        for _ in range(3):
            started = time.monotonic()
            resp = httpx.get(f"{gw.relay_url('tool')}/api/uploads", headers=auth(token), timeout=30)
            took = time.monotonic() - started
            assert resp.status_code == 503 and resp.json()["code"] == "rate_limiter_unavailable", resp.text
            assert took < 2.5, took  # one 0.5 s read timeout, not retried (it was 2 × 2 s)
        assert silent.accepted  # it did connect: the wait was for an answer
    finally:
        gw.stop()
        silent.close()
