"""The shared ``tool-gateway`` origin over real HTTP: uploads and the portal image API in front of the fake.

The gateway (create_app under uvicorn) stores uploads on disk with their rows in its database and hands
out capability URLs that serve the exact bytes without a token; ``/v1/images/*`` is forwarded to the
OpenAI Images fake with the operator's key (the user's token stops at the gateway), and the gateway's own
upload URLs in an edit are read from disk. Portal models are refused on the free tier with the GW-11
message. The end-to-end test drives our ``image_generate`` tool with a portal model through a pinned
``TOOL_GATEWAY_URL``, a local source image included.
"""

from __future__ import annotations

import base64
import json
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes.tools.image.tool  # noqa: F401  (registers image_generate)
from fakes.vendors import ServerThread
from fakes.vendors.fal import tiny_png
from fakes.vendors.harness import GatewayHarness
from fakes.vendors.openai_images import FakeOpenAIImages
from hermes.toolgateway.config import load_config
from hermes.tools.registry import registry

OPERATOR_KEY = "sk-images-operator-secret"
LIMITS = {"backoff_base": 0.01, "vendor_retries": 2}
MAX_UPLOAD = 64 * 1024
PNG = tiny_png(4, 3)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x11" * 200
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x22" * 200
GIF = b"GIF89a" + b"\x33" * 200
PAID_ONLY = "need a paid plan; the free tool tier covers FAL models only"
_ENV = ("FAL_KEY", "KREA_API_KEY", "OPENAI_API_KEY", "TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL", "KREA_GATEWAY_URL")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeOpenAIImages, ServerThread]]:
    vendor = FakeOpenAIImages(key=OPERATOR_KEY)
    with ServerThread(vendor.app) as server:
        yield vendor, server


def harness(home: Path, fake_url: str | None, plans: dict[str, Any] | None = None, access_log: str = "off",
            **tool: Any) -> GatewayHarness:
    settings: dict[str, Any] = {"tool.upload_max_bytes": MAX_UPLOAD, **{f"tool.{k}": v for k, v in tool.items()}}
    if fake_url is not None:
        settings.update({"tool.url": fake_url, "tool.api_key": OPERATOR_KEY})
    gw = GatewayHarness(home, limits=LIMITS, plans=plans or {}, access_log=access_log, **settings)
    gw.start()
    for name, plan in (("alice", "paid"), ("bob", "paid"), ("fred", "free"), ("nina", "none")):
        gw.user(name, plan)
    return gw


@pytest.fixture(scope="module")
def gw(fake: tuple[FakeOpenAIImages, ServerThread], tmp_path_factory: pytest.TempPathFactory
       ) -> Iterator[GatewayHarness]:
    gateway = harness(tmp_path_factory.mktemp("gw_tool"), fake[1].url)
    yield gateway
    gateway.stop()


def auth(token: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", **extra}


def upload(gw: GatewayHarness, token: str, data: bytes = PNG, *, vendor: str = "nous", name: str = "pic.png",
           ctype: str = "image/png", host_routed: bool = False) -> httpx.Response:
    headers = auth(token)
    base = gw.relay_url("tool")
    if host_routed:
        headers["host"], base = gw.relay_host("tool"), gw.url
    return httpx.post(f"{base}/api/uploads/{vendor}", files={"file": (name, data, ctype)}, headers=headers,
                      timeout=30)


def fetch(gw: GatewayHarness, url: str, method: str = "GET") -> httpx.Response:
    """Fetch an upload URL as a vendor would (no token); host-routed URLs connect to 127.0.0.1."""
    host = f"http://{gw.relay_host('tool')}"
    if url.startswith(host):
        return httpx.request(method, gw.url + url[len(host):], headers={"host": gw.relay_host("tool")}, timeout=30)
    return httpx.request(method, url, timeout=30)


def images(gw: GatewayHarness, token: str, path: str, **kwargs: Any) -> httpx.Response:
    headers = {**auth(token), **kwargs.pop("headers", {})}
    return httpx.post(f"{gw.relay_url('tool')}/v1/images/{path}", headers=headers, timeout=30, **kwargs)


def usage(gw: GatewayHarness, name: str) -> list[tuple[str, str, str, int, int]]:
    user = gw.side.accounts.get_user(name)
    rows = gw.usage_rows("SELECT category, vendor, operation, units, status FROM usage WHERE user_id = ? "
                                "ORDER BY id", (user.id,))
    return [(str(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]


def listing(gw: GatewayHarness, token: str) -> list[dict[str, Any]]:
    resp = httpx.get(f"{gw.relay_url('tool')}/api/uploads", headers=auth(token), timeout=30)
    assert resp.status_code == 200, resp.text
    found: list[dict[str, Any]] = resp.json()["uploads"]
    return found


def test_config_keys() -> None:
    cfg = load_config(None, env={"OPENAI_API_KEY": "sk-env"}, home=Path("/nonexistent"),
                      overrides={"tool.upload_ttl": 60, "tool.files_url": "https://files.example.com/"})
    assert cfg.tool.backend == "vendor" and cfg.tool.url == "https://api.openai.com" and "sk-env" not in repr(cfg)
    assert cfg.uploads.ttl == 60 and cfg.uploads.files_url == "https://files.example.com"
    assert load_config(None, env={}, home=Path("/nonexistent")).tool.backend == "off"
    capped = load_config(None, env={}, home=Path("/nonexistent"), overrides={"plans": {"paid": {"monthly": {
        "nous-images": 5}}}})
    assert capped.plans["paid"].monthly == {"nous-images": 5} and not capped.plans["free"].covers("nous-images")
    for bad in ({"tool.upload_ttl": 0}, {"tool.upload_max_bytes": "big"}, {"tool.files_url": "ftp://x"}):
        with pytest.raises(Exception, match=r"relays\.tool\."):
            load_config(None, env={}, home=Path("/nonexistent"), overrides=bad)


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_upload_round_trip(gw: GatewayHarness, host_routed: bool) -> None:
    resp = upload(gw, gw.token("alice"), host_routed=host_routed)
    assert resp.status_code == 201, resp.text
    body = resp.json()
    origin = f"http://{gw.relay_host('tool')}" if host_routed else gw.relay_url("tool")
    assert body["url"].startswith(f"{origin}/api/uploads/files/{body['id']}.png?key=")
    assert body["content_type"] == "image/png" and body["bytes"] == len(PNG) and body["vendor"] == "nous"
    assert body["expires_in"] == 86400 and body["expires_at"].endswith("Z")
    served = fetch(gw, body["url"])
    assert served.status_code == 200 and served.content == PNG
    assert served.headers["content-type"] == "image/png" and served.headers["x-content-type-options"] == "nosniff"
    head = fetch(gw, body["url"], "HEAD")
    assert head.status_code == 200 and head.headers["content-length"] == str(len(PNG)) and head.content == b""
    stored = gw.config.state_dir / "uploads" / body["id"]
    assert stored.read_bytes() == PNG and stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    assert usage(gw, "alice")[-1] == ("nous-images", "local", "upload", 0, 201)


def test_types_are_sniffed_and_refusals_are_json(gw: GatewayHarness) -> None:
    token = gw.token("alice")
    for data, mime in ((JPEG, "image/jpeg"), (WEBP, "image/webp"), (GIF, "image/gif")):
        resp = upload(gw, token, data, name="x.bin", ctype="application/octet-stream")
        assert resp.status_code == 201 and resp.json()["content_type"] == mime
        assert fetch(gw, resp.json()["url"]).headers["content-type"] == mime
    html = upload(gw, token, b"<html><script>alert(1)</script></html>", name="a.png", ctype="image/png")
    assert html.status_code == 415 and html.json()["code"] == "unsupported_content"
    big = upload(gw, token, PNG + b"\0" * MAX_UPLOAD)
    assert big.status_code == 413 and big.json()["code"] == "upload_too_large"
    huge = upload(gw, token, PNG + b"\0" * (2 * 1024 * 1024))
    assert huge.status_code == 413 and huge.json()["code"] == "request_too_large"
    empty = httpx.post(f"{gw.relay_url('tool')}/api/uploads/fal", data={"note": "x"}, files={"other": ("a", b"1")},
                       headers=auth(token), timeout=30)
    assert empty.status_code == 400 and empty.json()["code"] == "invalid_request"
    for path in ("/api/uploads/dropbox", "/api/other/thing", "/v1/images/variations"):
        resp = httpx.post(f"{gw.relay_url('tool')}{path}", headers=auth(token), timeout=30)
        assert resp.status_code == 404 and resp.json()["code"] == "not_found", path
    anonymous = httpx.post(f"{gw.relay_url('tool')}/api/uploads/fal", files={"file": ("a.png", PNG)}, timeout=30)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "missing_token"
    assert httpx.get(f"{gw.relay_url('tool')}/v1/images/generations", headers=auth(token)).status_code == 405


def test_uploads_belong_to_their_owner(gw: GatewayHarness) -> None:
    alice, bob = gw.token("alice"), gw.token("bob")
    mine = upload(gw, alice, tiny_png(7, 7), vendor="fal").json()
    assert mine["id"] in [u["id"] for u in listing(gw, alice)]
    assert mine["id"] not in [u["id"] for u in listing(gw, bob)]
    assert all("url" not in u and "key" not in json.dumps(u) for u in listing(gw, alice))
    base = f"{gw.relay_url('tool')}/api/uploads/files/{mine['id']}"
    assert httpx.delete(base, headers=auth(bob), timeout=30).status_code == 404
    theirs = upload(gw, bob, PNG, vendor="fal").json()
    assert theirs["id"] != mine["id"] and fetch(gw, mine["url"]).content == tiny_png(7, 7)
    wrong_key = fetch(gw, mine["url"].split("?key=")[0] + "?key=" + theirs["url"].split("?key=")[1])
    assert wrong_key.status_code == 404 and wrong_key.json()["code"] == "upload_not_found"
    assert fetch(gw, mine["url"].split("?")[0]).status_code == 404
    assert httpx.delete(base + ".png", headers=auth(alice), timeout=30).status_code == 204
    assert fetch(gw, mine["url"]).status_code == 404
    assert not (gw.config.state_dir / "uploads" / mine["id"]).exists()
    assert mine["id"] not in [u["id"] for u in listing(gw, alice)]


def test_plans_decide_who_may_upload_and_generate(gw: GatewayHarness) -> None:
    fred, nina = gw.token("fred"), gw.token("nina")
    assert upload(gw, fred, vendor="fal").status_code == 201  # FAL edits on the free tier need uploads
    for resp in (upload(gw, fred, vendor="nous"), images(gw, fred, "generations", json={"model": "m", "prompt": "x"})):
        assert resp.status_code == 403 and resp.json()["code"] == "category_not_covered"
        assert "The portal's own image models " + PAID_ONLY in resp.json()["error"]
    krea = upload(gw, fred, vendor="krea")
    assert krea.status_code == 403 and "Krea models " + PAID_ONLY in krea.json()["error"]
    assert len(listing(gw, fred)) == 1
    assert upload(gw, nina, vendor="fal").json()["code"] == "not_entitled"
    assert httpx.get(f"{gw.relay_url('tool')}/api/uploads", headers=auth(nina)).status_code == 403


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_generations_are_forwarded_with_the_operator_key(gw: GatewayHarness, fake: tuple[FakeOpenAIImages,
                                                         ServerThread], host_routed: bool) -> None:
    token = gw.token("alice")
    body = {"model": "gpt-image-1", "prompt": "a fox", "n": 2, "size": "1024x1024", "user": "x", "stream": True}
    headers = auth(token, host=gw.relay_host("tool")) if host_routed else auth(token)
    base = gw.url if host_routed else gw.relay_url("tool")
    resp = httpx.post(f"{base}/v1/images/generations", json=body, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    assert base64.b64decode(resp.json()["data"][0]["b64_json"]) == fake[0].image
    seen = fake[0].requests[-1]
    assert seen["path"] == "/v1/images/generations" and seen["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}"
    assert seen["json"] == {"model": "gpt-image-1", "prompt": "a fox", "n": 2, "size": "1024x1024"}
    assert all(token not in str(r) for r in fake[0].requests)
    assert usage(gw, "alice")[-1] == ("nous-images", "openai", "generate", 2, 200)


def test_edits_multipart_and_by_url(gw: GatewayHarness, fake: tuple[FakeOpenAIImages, ServerThread]) -> None:
    token = gw.token("alice")
    resp = images(gw, token, "edits", data={"model": "gpt-image-1", "prompt": "bluer", "n": "1"},
                  files={"image": ("src.png", PNG, "image/png")})
    assert resp.status_code == 200, resp.text
    edit = fake[0].edits[-1]
    assert edit["kind"] == "multipart" and edit["parts"]["image"][1] == PNG and edit["parts"]["prompt"][1] == b"bluer"
    assert images(gw, token, "edits", data={"model": "m", "prompt": "x"},
                  files={"image": ("a.png", b"not an image", "image/png")}).status_code == 415

    source = tiny_png(9, 4)
    url = upload(gw, token, source).json()["url"]
    before = len(fake[0].requests)
    resp = images(gw, token, "edits", json={"model": "gpt-image-1", "prompt": "warmer", "n": 1, "size": "1024x1024",
                                            "images": [{"image_url": url}]})
    assert resp.status_code == 200, resp.text
    edit = fake[0].edits[-1]
    assert edit["kind"] == "multipart" and edit["parts"]["image"][1] == source
    assert [r["path"] for r in fake[0].requests[before:]] == ["/v1/images/edits"]  # read from disk, not fetched

    external = "https://images.example.com/cat.png"
    resp = images(gw, token, "edits", json={"model": "m", "prompt": "x", "images": [{"image_url": external},
                                                                                     {"image_url": url}]})
    assert resp.status_code == 200
    sent = fake[0].edits[-1]["json"]["images"]
    assert sent[0] == {"image_url": external} and sent[1]["image_url"].startswith("data:image/png;base64,")
    assert base64.b64decode(sent[1]["image_url"].split(",", 1)[1]) == source
    forged = images(gw, token, "edits", json={"model": "m", "prompt": "x",
                                              "images": [{"image_url": url.split("?")[0] + "?key=guess"}]})
    assert forged.status_code == 400 and forged.json()["code"] == "invalid_upload"
    assert usage(gw, "alice")[-1] == ("nous-images", "openai", "edit", 0, 400)


def test_vendor_errors_and_bad_input(gw: GatewayHarness, fake: tuple[FakeOpenAIImages, ServerThread]) -> None:
    token = gw.token("alice")
    ok = {"model": "gpt-image-1", "prompt": "x"}
    fake[0].fail_next = [503]
    assert images(gw, token, "generations", json=ok).status_code == 200
    fake[0].fail_next = [422]
    resp = images(gw, token, "generations", json=ok)
    assert resp.status_code == 422 and resp.json()["code"] == "vendor_rejected"
    fake[0].fail_next = [401]
    resp = images(gw, token, "generations", json=ok)
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_auth_failed" and OPERATOR_KEY not in resp.text
    fake[0].fail_next = [429, 429, 429]
    resp = images(gw, token, "generations", json=ok)
    assert resp.status_code == 429 and resp.json()["code"] == "vendor_rate_limited" and "retry-after" in resp.headers
    fake[0].fail_next = []
    assert usage(gw, "alice")[-1] == ("nous-images", "openai", "generate", 0, 429)
    for bad in ({"model": "m"}, {"prompt": "x"}, {**ok, "n": 11}, {**ok, "n": True}):
        resp = images(gw, token, "generations", json=bad)
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_request", bad
    resp = images(gw, token, "generations", content=b"{nope", headers={"content-type": "x"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_json"
    assert images(gw, token, "edits", json={**ok, "images": [{"file_id": "f"}]}).status_code == 400
    assert images(gw, token, "edits", json={**ok, "images": [{"image_url": "ftp://x"}]}).status_code == 400
    assert images(gw, token, "edits", json={**ok, "images": [{"image_url": "http://[oops/a"}]}).status_code == 400
    for n in ("9" * 5000, "\u00b2", "0"):
        resp = images(gw, token, "edits", data={**ok, "n": n}, files={"image": ("a.png", PNG, "image/png")})
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_request", n


def test_expiry_storage_cap_and_monthly_cap(fake: tuple[FakeOpenAIImages, ServerThread], tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    gw = harness(tmp_path, fake[1].url, {"paid": {"monthly": {"nous-images": 3}}}, str(log), upload_ttl=1,
                 upload_user_bytes=3 * len(PNG))
    try:
        token = gw.token("alice")
        ask = {"model": "gpt-image-1", "prompt": "x", "n": 2}
        assert images(gw, token, "generations", json=ask).status_code == 200
        over = images(gw, token, "generations", json=ask)
        assert over.status_code == 429 and over.json()["code"] == "quota_exceeded" and over.json()["used"] == 2
        first = upload(gw, token).json()
        assert fetch(gw, first["url"]).content == PNG
        upload(gw, token)
        upload(gw, token)
        full = upload(gw, token)
        assert full.status_code == 429 and full.json()["code"] == "upload_storage_full"
        assert int(full.headers["retry-after"]) >= 1
        time.sleep(1.2)
        gone = fetch(gw, first["url"])
        assert gone.status_code == 410 and gone.json()["code"] == "upload_expired"
        late = images(gw, token, "edits", json={"model": "m", "prompt": "x", "images": [{"image_url": first["url"]}]})
        assert late.status_code == 400 and late.json()["code"] == "upload_expired"
        assert listing(gw, token) == []
        assert upload(gw, token).status_code == 201  # purges the expired ones first
        left = sorted(p.name for p in (gw.config.state_dir / "uploads").iterdir())
        assert first["id"] not in left and len(left) == 1
        logged = log.read_text(encoding="utf-8")
        assert f"/api/uploads/files/{first['id']}.png" in logged and "key=***" in logged
        assert first["url"].split("key=")[1] not in logged
    finally:
        gw.stop()


def test_without_an_image_backend(tmp_path: Path) -> None:
    gw = harness(tmp_path, None)
    try:
        token = gw.token("alice")
        resp = images(gw, token, "generations", json={"model": "m", "prompt": "x"})
        assert resp.status_code == 503 and resp.json()["code"] == "backend_not_configured"
        assert upload(gw, token).status_code == 201
        ready = httpx.get(f"{gw.url}/readyz", timeout=30).json()
        tool = next(r for r in ready["relays"] if r["label"] == "tool")
        assert tool["operations"]["nous-images.generate"] == "off" and tool["operations"]["fal.upload"] == "local"
        paths = httpx.get(f"{gw.url}/openapi.json", timeout=30).json()["paths"]
        assert {"/relay/tool/api/uploads/{vendor}", "/relay/tool/v1/images/generations"} <= set(paths)
    finally:
        gw.stop()


# -- end to end through our own client -------------------------------------------------------------------
@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    registry.invalidate_checks()
    return hermes_home


def test_image_generate_tool_with_a_portal_model(home: Path, monkeypatch: pytest.MonkeyPatch, gw: GatewayHarness,
                                                 fake: tuple[FakeOpenAIImages, ServerThread], tmp_path: Path) -> None:
    token = gw.token("alice")
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    monkeypatch.setenv("TOOL_GATEWAY_URL", gw.relay_url("tool"))
    (home / "config.yaml").write_text("image_gen:\n  provider: nous\n  model: gpt-image-1\n", encoding="utf-8")
    registry.invalidate_checks()
    before = len(fake[0].requests)
    result = json.loads(registry.dispatch("image_generate", {"prompt": "a lighthouse", "aspect_ratio": "portrait"}))
    assert result.get("success") is True and result["route"] == "gateway" and result["provider"] == "nous", result
    assert Path(result["path"]).read_bytes() == fake[0].image
    sent = fake[0].requests[before]
    assert sent["path"] == "/v1/images/generations" and sent["json"]["model"] == "gpt-image-1"
    assert sent["json"]["size"] == "1024x1536" and sent["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}"

    source = tmp_path / "photo.png"
    source.write_bytes(tiny_png(8, 8, (10, 200, 10)))
    result = json.loads(registry.dispatch("image_generate", {"prompt": "make it blue", "image_url": str(source)}))
    assert result.get("success") is True, result
    stored = [u for u in listing(gw, token) if u["filename"] == "photo.png"]
    assert stored and stored[0]["vendor"] == "nous" and stored[0]["bytes"] == source.stat().st_size
    edit = fake[0].edits[-1]
    assert edit["kind"] == "multipart" and edit["parts"]["image"][1] == source.read_bytes()
    assert all(token not in str(r) for r in fake[0].requests[before:])
    assert [u[2] for u in usage(gw, "alice")[-3:]] == ["generate", "upload", "edit"]
