"""The fal-queue relay over real HTTP: the gateway (create_app under uvicorn) in front of the FAL fake.

Submit, status, response and cancel go through the gateway with the operator's ``Key``; the queue URLs
FAL hands out are rewritten to the gateway's own origin (host-routed and pinned), the status replies keep
the keys fal-client requires, one user cannot poll another's request, and a free plan's ``fal``
allowance is enforced. The end-to-end test drives our ``image_generate`` tool through
``image_gen.provider: nous`` and a pinned ``FAL_QUEUE_GATEWAY_URL``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes.tools.image.tool  # noqa: F401  (registers image_generate)
from fakes.vendors import ServerThread
from fakes.vendors.fal import FakeFal
from fakes.vendors.harness import GatewayHarness
from hermes.tools.image import backends
from hermes.tools.registry import registry
from hermes.vendors.base import RetryPolicy

OPERATOR_KEY = "fal-operator-secret"
MODEL = "fal-ai/flux-2/klein/9b"
LIMITS = {"backoff_base": 0.01, "vendor_retries": 2}
_ENV = ("FAL_KEY", "KREA_API_KEY", "OPENAI_API_KEY", "TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL", "KREA_GATEWAY_URL")


@pytest.fixture(scope="module")
def fake() -> Iterator[tuple[FakeFal, ServerThread]]:
    vendor = FakeFal(key=OPERATOR_KEY, polls_before_done=3)
    with ServerThread(vendor.app) as server:
        yield vendor, server


@pytest.fixture(scope="module")
def gw(fake: tuple[FakeFal, ServerThread], tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_fal"), limits=LIMITS,
                             plans={"free": {"monthly": {"firecrawl": 100, "fal": 3}}},
                             **{"fal-queue.url": fake[1].url, "fal-queue.api_key": OPERATOR_KEY})
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("fred", "free"), ("nina", "none")):
            harness.user(name, plan)
        yield harness


class Client:
    """Speaks the queue protocol the way fal-client does (``Authorization: Key``, URLs followed verbatim)."""

    def __init__(self, gw: GatewayHarness, token: str, *, host_routed: bool = False) -> None:
        self.headers = {"authorization": f"Key {token}"}
        if host_routed:
            self.headers["host"] = gw.relay_host("fal-queue")
            self.origin = gw.url
        else:
            self.origin = gw.relay_url("fal-queue")
        self.gw = gw
        self.host_routed = host_routed

    def _url(self, absolute: str) -> str:
        # a host-routed URL names fal-queue-gateway.localhost:PORT; connect to 127.0.0.1 with that Host header
        if self.host_routed:
            prefix = f"http://{self.gw.relay_host('fal-queue')}"
            assert absolute.startswith(prefix), absolute
            return self.gw.url + absolute[len(prefix):]
        return absolute

    def submit(self, args: dict[str, Any], model: str = MODEL) -> httpx.Response:
        return httpx.post(f"{self.origin}/{model}", json=args, headers={**self.headers, "x-idempotency-key": "k1"},
                          timeout=30)

    def get(self, url: str, **params: str) -> httpx.Response:
        return httpx.get(self._url(url), params=params, headers=self.headers, timeout=30)

    def put(self, url: str) -> httpx.Response:
        return httpx.put(self._url(url), headers=self.headers, timeout=30)


def usage(gw: GatewayHarness, name: str) -> list[tuple[str, int, int]]:
    user = gw.side.accounts.get_user(name)
    rows = gw.usage_rows("SELECT operation, units, status FROM usage WHERE user_id = ? ORDER BY id",
                                (user.id,))
    return [(str(r[0]), int(r[1]), int(r[2])) for r in rows]


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_queue_round_trip_with_rewritten_urls(gw: GatewayHarness, fake: tuple[FakeFal, ServerThread],
                                              host_routed: bool) -> None:
    token = gw.token("alice")
    client = Client(gw, token, host_routed=host_routed)
    before = len(fake[0].requests)
    resp = client.submit({"prompt": "a red square", "image_size": "square_hd", "num_images": 1})
    assert resp.status_code == 200, resp.text
    handle = resp.json()
    origin = f"http://{gw.relay_host('fal-queue')}" if host_routed else gw.relay_url("fal-queue")
    rid = handle["request_id"]
    root = f"{origin}/{MODEL}/requests/{rid}"
    assert handle["status_url"] == f"{root}/status" and handle["response_url"] == root
    assert handle["cancel_url"] == f"{root}/cancel"
    submit = fake[0].requests[before]
    assert submit["path"] == f"/{MODEL}" and submit["headers"]["authorization"] == f"Key {OPERATOR_KEY}"
    assert submit["json"] == {"prompt": "a red square", "image_size": "square_hd", "num_images": 1}
    assert submit["headers"]["x-idempotency-key"] == "k1"

    first = client.get(handle["status_url"], logs="false").json()
    assert first == {"status": "IN_QUEUE", "queue_position": 0}
    second = client.get(handle["status_url"], logs="false").json()
    assert second["status"] == "IN_PROGRESS" and "logs" in second
    done = client.get(handle["status_url"], logs="false").json()
    assert done["status"] == "COMPLETED" and "logs" in done and done["response_url"] == root
    assert fake[0].requests[-1]["query"] == {"logs": "false"}

    result = client.get(handle["response_url"]).json()
    assert result["images"][0]["url"].startswith(fake[1].url + "/files/")
    assert client.put(handle["cancel_url"]).json() == {"status": "CANCELLATION_REQUESTED"}
    assert all(token not in str(r) and r["headers"]["authorization"] == f"Key {OPERATOR_KEY}"
               for r in fake[0].requests[before:])
    ops = usage(gw, "alice")[-6:]
    assert [o[0] for o in ops] == ["submit", "status", "status", "status", "result", "cancel"]
    assert [o[1] for o in ops] == [1, 0, 0, 0, 0, 0]


def test_completed_without_logs_gets_the_key(gw: GatewayHarness, fake: tuple[FakeFal, ServerThread]) -> None:
    client = Client(gw, gw.token("alice"))
    fake[0].omit_logs = True
    try:
        handle = client.submit({"prompt": "x"}).json()
        replies = [client.get(handle["status_url"]).json() for _ in range(3)]
    finally:
        fake[0].omit_logs = False
    assert replies[-1]["status"] == "COMPLETED" and replies[-1]["logs"] is None


def test_other_users_and_unknown_requests_are_404(gw: GatewayHarness) -> None:
    handle = Client(gw, gw.token("alice")).submit({"prompt": "mine"}).json()
    bob = Client(gw, gw.token("bob"))
    for url in (handle["status_url"], handle["response_url"]):
        resp = bob.get(url)
        assert resp.status_code == 404 and resp.json()["code"] == "unknown_request"
    assert bob.put(handle["cancel_url"]).status_code == 404
    assert bob.get(f"{gw.relay_url('fal-queue')}/{MODEL}/requests/nope/status").status_code == 404
    assert bob.get(f"{gw.relay_url('fal-queue')}/{MODEL}/requests/x/bogus").status_code == 404
    assert bob.get(f"{gw.relay_url('fal-queue')}/{MODEL}").status_code == 405
    assert bob.submit({"prompt": "x"}, model="fal-ai/.hidden").status_code == 404
    assert bob.submit({"prompt": "x"}, model="fal-ai/a%20b").status_code == 404


def test_vendor_urls_off_the_backend_origin_are_refused(gw: GatewayHarness, fake: tuple[FakeFal, ServerThread]
                                                        ) -> None:
    fake[0].url_origin = "http://attacker.invalid"
    try:
        resp = Client(gw, gw.token("alice")).submit({"prompt": "x"})
    finally:
        fake[0].url_origin = None
    assert resp.status_code == 502 and resp.json()["code"] == "vendor_bad_response"


def test_vendor_errors_and_bad_input(gw: GatewayHarness, fake: tuple[FakeFal, ServerThread]) -> None:
    client = Client(gw, gw.token("alice"))
    fake[0].fail_next = [503]
    assert client.submit({"prompt": "retried"}).status_code == 200
    fake[0].fail_next = [422]
    resp = client.submit({"prompt": "rejected"})
    assert resp.status_code == 422 and resp.json()["code"] == "vendor_rejected"
    fake[0].fail_next = []
    assert client.submit({"prompt": "x", "num_images": 99}).status_code == 400
    bearer = httpx.post(f"{gw.relay_url('fal-queue')}/{MODEL}", json={"prompt": "x"},
                        headers={"authorization": f"Bearer {gw.token('alice')}"}, timeout=30)
    assert bearer.status_code == 200  # Bearer works too (our own client may send either)
    assert httpx.post(f"{gw.relay_url('fal-queue')}/{MODEL}", json={"prompt": "x"}).status_code == 401


def test_free_plan_allowance_and_coverage(gw: GatewayHarness) -> None:
    fred = Client(gw, gw.token("fred"))
    first = fred.submit({"prompt": "x", "num_images": 2})
    assert first.status_code == 200
    assert fred.submit({"prompt": "x"}).status_code == 200  # 3 of 3
    over = fred.submit({"prompt": "x"})
    assert over.status_code == 429 and over.json()["code"] == "quota_exceeded" and int(over.headers["retry-after"]) > 0
    assert fred.get(first.json()["status_url"]).status_code == 200  # polling stays free once the allowance is used
    assert Client(gw, gw.token("nina")).submit({"prompt": "x"}).status_code in (402, 403)


# -- end to end through our own client -------------------------------------------------------------------
@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    fast = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0, statuses=frozenset({408, 409, 429, 500, 502, 503}))
    monkeypatch.setattr(backends, "TIMING", backends.Timing(fal_poll=0.005, krea_first_poll=0.005,
                                                            krea_max_poll=0.01, fal_retry=fast, krea_retry=fast))
    registry.invalidate_checks()
    return hermes_home


def test_image_generate_tool_through_the_gateway(home: Path, monkeypatch: pytest.MonkeyPatch, gw: GatewayHarness,
                                                 fake: tuple[FakeFal, ServerThread]) -> None:
    token = gw.token("alice")
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    monkeypatch.setenv("FAL_QUEUE_GATEWAY_URL", gw.relay_url("fal-queue"))
    monkeypatch.setenv("HERMES_ALLOW_PRIVATE_URLS", "1")  # the fake vendors publish results on 127.0.0.1
    (home / "config.yaml").write_text(f"image_gen:\n  provider: nous\n  model: {MODEL}\n", encoding="utf-8")
    registry.invalidate_checks()
    before = len(fake[0].requests)
    result = json.loads(registry.dispatch("image_generate", {"prompt": "a lighthouse", "aspect_ratio": "square"}))
    assert result.get("success") is True and result["route"] == "gateway", result
    assert Path(result["path"]).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    seen = fake[0].requests[before:]
    assert seen[0]["path"] == f"/{MODEL}" and seen[0]["json"]["prompt"] == "a lighthouse"
    assert any(r["path"].endswith("/status") for r in seen)
    assert all(token not in str(r) for r in seen)
    assert usage(gw, "alice")[-1][0] == "result"
