"""State any gateway process can serve: a sandbox, a local browser session and an upload created through
process A are used through process B (two real ``serve`` processes, each with its own HERMES_HOME — like two
hosts — on one PostgreSQL and one Redis). B forwards to A, signed; A re-checks the user. With A dead, B
answers 503 ``holder_unavailable`` at once. The module's last test kills A."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.pg_redis import Gateways, PostgresServer, RedisServer, gateways
from fakes.vendors import ServerThread
from fakes.vendors.openai_images import FakeOpenAIImages

CHROMIUM = "/usr/bin/chromium"
HAS_CHROMIUM = os.access(CHROMIUM, os.X_OK) or bool(os.environ.get("CI"))
AS_ROOT = os.geteuid() == 0
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4


def extra_config(root: Path, images_url: str) -> str:
    who = 'run_as = "nobody"' if AS_ROOT else "allow_gateway_user = true"
    text = f'\n[relays.tool]\nurl = "{images_url}"\napi_key = "sk-test"\n'
    text += f'\n[relays.modal]\nbackend = "local"\nexec_wait = 5.0\nroot = "{root}/@HOST@-sandboxes"\n{who}\n'
    if HAS_CHROMIUM:
        text += (f'\n[relays.browser-use]\nbackend = "local"\nchromium = "{CHROMIUM}"\nallow_loopback = true\n'
                 + ('run_as = "nobody"\n' if AS_ROOT else ""))
    return text


@pytest.fixture(scope="module")
def images() -> Iterator[tuple[FakeOpenAIImages, ServerThread]]:
    vendor = FakeOpenAIImages(key="sk-test")
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def pair(postgres_server: PostgresServer, redis_server: RedisServer, traversable_root: Path,
         images: tuple[FakeOpenAIImages, ServerThread]) -> Iterator[Gateways]:
    # under a folder the sandbox user (nobody, as root) can pass through: pytest's own tmp is 0700
    root = traversable_root
    with gateways(root, postgres_server.database(), redis_server.url, rate=1000, burst=1000,
                  extra=extra_config(root, images[1].url)) as group:
        group.cli("users", "add", "alice", "--plan", "paid")
        group.cli("users", "add", "bob", "--plan", "paid")
        yield group


def token(pair: Gateways, user: str) -> str:
    return pair.cli("tokens", "issue", user).stdout.split()[-1]


def bearer(value: str) -> dict[str, str]:
    return {"authorization": f"Bearer {value}"}


def test_a_sandbox_made_on_one_process_runs_commands_through_the_other(pair: Gateways) -> None:
    a, b = pair.urls
    alice = token(pair, "alice")
    made = httpx.post(f"{a}/relay/modal/v1/sandboxes", json={}, headers=bearer(alice), timeout=30)
    assert made.status_code == 200, made.text
    sandbox = made.json()["id"]
    ran = httpx.post(f"{b}/relay/modal/v1/sandboxes/{sandbox}/execs", headers=bearer(alice), timeout=30,
                     json={"execId": "e1", "command": "echo held-by-a; touch mark"})
    assert ran.status_code == 200, ran.text
    assert ran.json()["status"] == "completed" and ran.json()["output"].strip() == "held-by-a"
    polled = httpx.get(f"{b}/relay/modal/v1/sandboxes/{sandbox}/execs/e1", headers=bearer(alice), timeout=30)
    assert polled.status_code == 200 and polled.json()["returncode"] == 0
    # the same folder on A: the second command sees the first one's file
    seen = httpx.post(f"{a}/relay/modal/v1/sandboxes/{sandbox}/execs", headers=bearer(alice), timeout=30,
                      json={"execId": "e2", "command": "ls mark"})
    assert seen.json()["output"].strip() == "mark"
    # another user learns nothing through B (not forwarded: answered as unknown), nor through A
    bob = token(pair, "bob")
    for url in (a, b):
        other = httpx.post(f"{url}/relay/modal/v1/sandboxes/{sandbox}/execs", headers=bearer(bob), timeout=30,
                           json={"command": "id"})
        assert other.status_code == 404 and other.json()["code"] == "unknown_sandbox"
    # a forwarded request must be signed by a process of this gateway
    forged = httpx.get(f"{a}/relay/modal/v1/sandboxes/{sandbox}/execs/e1", timeout=30,
                       headers={**bearer(alice), "x-hermes-peer": f"{int(time.time())}.{'0' * 64}"})
    assert forged.status_code == 403 and forged.json()["code"] == "peer_refused"
    # metered once, where the sandbox is (A); B's forwarding took nothing
    usage = httpx.get(f"{b}/api/usage", headers=bearer(alice), timeout=30).json()
    assert usage["totals"]["units"] == 3  # one create and two execs


def test_an_upload_stored_by_one_process_is_read_and_deleted_through_the_other(
        pair: Gateways, images: tuple[FakeOpenAIImages, ServerThread]) -> None:
    a, b = pair.urls
    alice = token(pair, "alice")
    stored = httpx.post(f"{a}/relay/tool/api/uploads/fal", files={"file": ("x.png", PNG, "image/png")},
                        headers=bearer(alice), timeout=30)
    assert stored.status_code == 201, stored.text
    url = stored.json()["url"]
    assert url.startswith(a)
    via_b = url.replace(a, b, 1)
    got = httpx.get(via_b, timeout=30)
    assert got.status_code == 200 and got.content == PNG and got.headers["content-type"] == "image/png"
    assert httpx.get(via_b.split("?key=")[0] + "?key=" + "x" * 43, timeout=30).status_code == 404
    # an image edit on B reads the source image from A (not fetched by the vendor)
    edit = httpx.post(f"{b}/relay/tool/v1/images/edits", headers=bearer(alice), timeout=30,
                      json={"model": "gpt-image-1", "prompt": "x", "n": 1, "images": [{"image_url": url}]})
    assert edit.status_code == 200, edit.text
    assert images[0].edits[-1]["parts"]["image"][1] == PNG
    upload_id = stored.json()["id"]
    gone = httpx.delete(f"{b}/relay/tool/api/uploads/files/{upload_id}", headers=bearer(alice), timeout=30)
    assert gone.status_code == 204, gone.text
    assert httpx.get(url, timeout=30).status_code == 404  # row and file gone on A


async def _browser_version(cdp_url: str) -> str:
    from websockets.asyncio.client import connect

    async with connect(cdp_url, proxy=None, compression=None, open_timeout=20) as ws:
        await ws.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
        while True:
            answer = json.loads(await asyncio.wait_for(ws.recv(), 20))
            if answer.get("id") == 1:
                return str(answer["result"]["product"])


@pytest.mark.skipif(not HAS_CHROMIUM, reason="needs /usr/bin/chromium (CI installs it)")
def test_a_browser_session_made_on_one_process_is_driven_through_the_other(pair: Gateways) -> None:
    a, b = pair.urls
    alice = token(pair, "alice")
    headers = {"x-browser-use-api-key": alice}
    made = httpx.post(f"{a}/relay/browser-use/browsers", json={"timeout": 5}, headers=headers, timeout=60)
    assert made.status_code == 201, made.text
    session, cdp = made.json()["id"], made.json()["cdpUrl"]
    seen = httpx.get(f"{b}/relay/browser-use/browsers/{session}", headers=headers, timeout=30)
    assert seen.status_code == 200 and seen.json()["status"] == "active"
    cdp_b = cdp.replace(a.removeprefix("http://"), b.removeprefix("http://"), 1)
    assert cdp_b != cdp
    assert "Chrome" in asyncio.run(_browser_version(cdp_b))
    stopped = httpx.patch(f"{b}/relay/browser-use/browsers/{session}", json={"action": "stop"}, headers=headers,
                          timeout=30)
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"


def test_a_dead_holder_is_a_clear_503_not_a_hang(pair: Gateways) -> None:
    a, b = pair.urls
    alice = token(pair, "alice")
    sandbox = httpx.post(f"{a}/relay/modal/v1/sandboxes", json={}, headers=bearer(alice), timeout=30).json()["id"]
    stored = httpx.post(f"{a}/relay/tool/api/uploads/fal", files={"file": ("x.png", PNG, "image/png")},
                        headers=bearer(alice), timeout=30).json()
    pair.procs[0].send_signal(signal.SIGKILL)
    pair.procs[0].wait(10)
    ran = httpx.post(f"{b}/relay/modal/v1/sandboxes/{sandbox}/execs", json={"command": "true"},
                     headers=bearer(alice), timeout=30)
    assert ran.status_code == 503 and ran.json()["code"] == "holder_unavailable"
    assert "does not answer" in ran.json()["error"] and ran.headers["retry-after"]
    got = httpx.get(stored["url"].replace(a, b, 1), timeout=30)
    assert got.status_code == 503 and got.json()["code"] == "holder_unavailable"
    # B itself still serves what it holds
    own = httpx.post(f"{b}/relay/modal/v1/sandboxes", json={}, headers=bearer(alice), timeout=30)
    assert own.status_code == 200


def test_a_file_whose_row_another_process_purged_is_swept_by_its_holder(tmp_path: Path) -> None:
    from hermes.toolgateway.storage import open_database
    from hermes.toolgateway.storage.uploads import UploadStore, new_upload_id

    db = open_database(None, tmp_path / "gateway.db")
    try:
        db.execute("INSERT INTO users (uid, name, plan, created) VALUES ('u1', 'alice', 'paid', 0)")
        user_id = int(db.execute("SELECT id FROM users WHERE uid = 'u1'").fetchone()[0])
        holder, other = UploadStore(db, tmp_path / "a"), UploadStore(db, tmp_path / "b")
        old, fresh = new_upload_id(), new_upload_id()
        now = time.time()
        for upload_id, made in ((old, now - 7200), (fresh, now)):
            holder.add(user_id=user_id, vendor="fal", filename="x.png", content_type="image/png", ext="png",
                       data=PNG, now=made, ttl=3600, upload_id=upload_id)
            holder.write_file(upload_id, PNG)
            os.utime(holder.path_of(upload_id), (made, made))
        assert other.purge(now) == 1  # B purges the expired row; the file is on A
        assert holder.path_of(old).exists()
        holder.purge(now, max_age=3600 + 60)
        assert not holder.path_of(old).exists() and holder.path_of(fresh).exists()
    finally:
        db.close()
