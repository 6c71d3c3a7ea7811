"""The krea relay over real HTTP: the gateway (create_app under uvicorn) in front of the Krea and FAL fakes.

Submit and poll go through the gateway with the operator's key; jobs belong to the user who started
them; vendor failures map to the documented answers with the operator key scrubbed; Krea is for paid
plans only. The end-to-end tests drive our ``image_generate`` tool with a Krea model through the real
gateway, including the Krea → FAL fallback (GW-11). The job ownership table is tested on its own too.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import hermes.tools.image.tool  # noqa: F401  (registers image_generate)
from fakes.vendors import ServerThread
from fakes.vendors.fal import FakeFal
from fakes.vendors.harness import GatewayHarness, gateway_config
from fakes.vendors.krea import FakeKrea
from hermes.toolgateway.app import create_app
from hermes.toolgateway.relays.krea import KreaRelay
from hermes.toolgateway.services import Gateway
from hermes.toolgateway.storage.jobs import JobTable
from hermes.toolgateway.storage.sqlite import SQLiteDatabase, connect
from hermes.tools.image import backends
from hermes.tools.registry import registry
from hermes.vendors.base import RetryPolicy

KREA_KEY = "krea-operator-secret"
FAL_KEY = "fal-operator-secret"
LIMITS = {"backoff_base": 0.01, "vendor_retries": 2}
GENERATE = "/generate/image/krea/krea-2"
BODY = {"prompt": "a fox", "aspect_ratio": "16:9", "resolution": "1K", "creativity": "medium"}
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ENV = ("FAL_KEY", "KREA_API_KEY", "OPENAI_API_KEY", "TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL", "KREA_GATEWAY_URL")


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def fakes() -> Iterator[dict[str, Any]]:
    krea, fal = FakeKrea(key=KREA_KEY), FakeFal(key=FAL_KEY)
    with ServerThread(krea.app) as krea_srv, ServerThread(fal.app) as fal_srv:
        yield {"krea": krea, "fal": fal, "krea_url": krea_srv.url, "fal_url": fal_srv.url}


@pytest.fixture(autouse=True)
def fresh(fakes: dict[str, Any]) -> None:
    krea: FakeKrea = fakes["krea"]
    krea.always_status, krea.fail_next, krea.fail_jobs, krea.error_text = None, [], False, None
    krea.requests.clear()
    fakes["fal"].requests.clear()


@pytest.fixture(scope="module")
def gw(fakes: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_krea"), limits=LIMITS,
                             **{"krea.url": fakes["krea_url"], "krea.api_key": KREA_KEY,
                                "fal-queue.url": fakes["fal_url"], "fal-queue.api_key": FAL_KEY})
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("fred", "free"), ("nina", "none")):
            harness.user(name, plan)
        yield harness


class Client:
    """Speaks Krea's API the way both Hermes clients do (``Authorization: Bearer``)."""

    def __init__(self, gw: GatewayHarness, token: str, *, host_routed: bool = False) -> None:
        self.headers = {"authorization": f"Bearer {token}"}
        self.origin = gw.url if host_routed else gw.relay_url("krea")
        if host_routed:
            self.headers["host"] = gw.relay_host("krea")

    def submit(self, body: Any, variant: str = "medium", **headers: str) -> httpx.Response:
        return httpx.post(f"{self.origin}{GENERATE}/{variant}", json=body, headers={**self.headers, **headers},
                          timeout=30)

    def poll(self, job_id: str) -> httpx.Response:
        return httpx.get(f"{self.origin}/jobs/{job_id}", headers=self.headers, timeout=30)


def usage(gw: GatewayHarness, name: str) -> list[tuple[str, str, int, int]]:
    user = gw.side.accounts.get_user(name)
    rows = gw.usage_rows("SELECT category, operation, units, status FROM usage WHERE user_id = ? ORDER BY id",
                                (user.id,))
    return [(str(r[0]), str(r[1]), int(r[2]), int(r[3])) for r in rows]


@pytest.mark.parametrize("host_routed", [True, False], ids=["host", "pinned-path"])
def test_generate_and_poll(gw: GatewayHarness, fakes: dict[str, Any], host_routed: bool) -> None:
    token = gw.token("alice")
    client = Client(gw, token, host_routed=host_routed)
    body = {**BODY, "seed": 7, "image_style_references": [{"url": "https://example.com/s.png", "strength": 0.6}]}
    resp = client.submit(body, "large", **{"x-idempotency-key": "k-1", "user-agent": "Hermes-Agent/1.0"})
    assert resp.status_code == 200, resp.text
    job_id = resp.json()["job_id"]
    assert resp.json() == {"job_id": job_id, "status": "queued"}
    submit = fakes["krea"].requests[0]
    assert submit["path"] == f"{GENERATE}/large" and submit["json"] == body
    assert submit["headers"]["authorization"] == f"Bearer {KREA_KEY}"
    assert UUID.match(submit["headers"]["x-idempotency-key"])
    first = client.poll(job_id).json()
    assert first == {"job_id": job_id, "status": "processing", "completed_at": None}
    done = client.poll(job_id)
    assert done.status_code == 200
    assert done.json() == {"job_id": job_id, "status": "completed", "completed_at": "2025-01-01T00:00:00Z",
                           "result": {"urls": [f"{fakes['krea_url']}/files/{job_id}.png"]}}
    assert all(token not in str(r) for r in fakes["krea"].requests)
    assert all(KREA_KEY not in r.text for r in (resp, done))
    assert usage(gw, "alice")[-3:] == [("krea", "generate", 1, 200), ("krea", "job", 0, 200), ("krea", "job", 0, 200)]


def test_idempotency_keys_are_bound_to_the_user(gw: GatewayHarness, fakes: dict[str, Any]) -> None:
    alice, bob = Client(gw, gw.token("alice")), Client(gw, gw.token("bob"))
    for client, key in ((alice, "same"), (alice, "same"), (bob, "same"), (alice, None)):
        assert client.submit(BODY, **({"x-idempotency-key": key} if key else {})).status_code == 200
    sent = [r["headers"]["x-idempotency-key"] for r in fakes["krea"].requests]
    assert all(UUID.match(k) for k in sent)
    assert sent[0] == sent[1] and sent[2] != sent[0] and len(set(sent)) == 3  # bound to the user; fresh without


def test_other_users_and_unknown_jobs_are_404(gw: GatewayHarness, fakes: dict[str, Any]) -> None:
    job_id = Client(gw, gw.token("alice")).submit(BODY).json()["job_id"]
    bob = Client(gw, gw.token("bob"))
    for unknown in (job_id, "job-424242"):
        resp = bob.poll(unknown)
        assert resp.status_code == 404 and resp.json()["code"] == "unknown_job"
    assert [r["method"] for r in fakes["krea"].requests] == ["POST"]  # bob's polls never reached Krea
    assert bob.submit(BODY, variant="huge").status_code == 404
    assert bob.poll("..%2Fetc").status_code == 404
    assert httpx.get(f"{bob.origin}{GENERATE}/medium", headers=bob.headers, timeout=30).status_code == 405
    assert httpx.get(f"{bob.origin}/v1/other", headers=bob.headers, timeout=30).status_code == 404


@pytest.mark.parametrize("body, field", [
    ({**BODY, "styles": [{"id": "x"}]}, "styles"),
    ({**BODY, "moodboards": ["m"]}, "moodboards"),
    ({**BODY, "batch": 4}, "batch"),
    ({"aspect_ratio": "1:1"}, "prompt"),
    ({**BODY, "creativity": "wild"}, "creativity"),
    ({**BODY, "seed": True}, "seed"),
    ({**BODY, "image_style_references": [{"url": "https://e.com/a.png"}] * 11}, "image_style_references"),
    ({**BODY, "image_style_references": [{"url": "file:///etc/passwd"}]}, "image_style_references[0].url"),
    (["not", "an", "object"], "JSON object"),
])
def test_bad_bodies_are_refused_before_krea(gw: GatewayHarness, fakes: dict[str, Any], body: Any, field: str) -> None:
    resp = Client(gw, gw.token("alice")).submit(body)
    assert resp.status_code == 400 and field in resp.json()["error"], resp.text
    assert not fakes["krea"].requests
    assert usage(gw, "alice")[-1] == ("krea", "generate", 0, 400)


def test_vendor_errors_map_and_never_show_the_key(gw: GatewayHarness, fakes: dict[str, Any]) -> None:
    krea: FakeKrea = fakes["krea"]
    client = Client(gw, gw.token("alice"))
    krea.fail_next = [503]
    assert client.submit(BODY).status_code == 200  # retried by the gateway
    krea.always_status = 429
    limited = client.submit(BODY)
    assert limited.status_code == 429 and limited.json()["code"] == "vendor_rate_limited"
    assert int(limited.headers["retry-after"]) >= 1
    assert len([r for r in krea.requests if r["method"] == "POST"]) == 2 + 1 + LIMITS["vendor_retries"]
    krea.always_status, krea.fail_next = None, [500, 500, 500]
    failed = client.submit(BODY)
    assert failed.status_code == 502 and failed.json()["code"] == "vendor_error"
    krea.error_text = f"bad request for key {KREA_KEY}"
    krea.fail_next = [422]
    rejected = client.submit(BODY)
    assert rejected.status_code == 422 and rejected.json()["code"] == "vendor_rejected"
    assert KREA_KEY not in rejected.text and "***" in rejected.text
    krea.fail_jobs = True
    job_id = client.submit(BODY).json()["job_id"]
    client.poll(job_id)
    ended = client.poll(job_id)
    assert ended.json()["status"] == "failed" and ended.json()["result"]["error"] == "bad request for key ***"
    assert usage(gw, "alice")[-7:-2] == [("krea", "generate", 1, 200), ("krea", "generate", 0, 429),
                                        ("krea", "generate", 0, 502), ("krea", "generate", 0, 422),
                                        ("krea", "generate", 1, 200)]


def test_unreachable_vendor_and_bad_operator_key(tmp_path: Path, fakes: dict[str, Any]) -> None:
    for url, key, code in ((closed_port_url(), KREA_KEY, "vendor_unreachable"),
                           (fakes["krea_url"], "wrong-key", "vendor_auth_failed")):
        with GatewayHarness(tmp_path / code, limits=LIMITS, **{"krea.url": url, "krea.api_key": key}) as harness:
            harness.user("alice")
            resp = Client(harness, harness.token("alice")).submit(BODY)
            assert resp.status_code == 502 and resp.json()["code"] == code, resp.text
            assert key not in resp.text


def test_plans_and_tokens(gw: GatewayHarness, fakes: dict[str, Any]) -> None:
    free = Client(gw, gw.token("fred")).submit(BODY)
    assert free.status_code == 403 and free.json()["code"] == "category_not_covered"
    assert "free plan does not cover krea" in free.json()["error"] and free.json()["portal_url"] == gw.config.base_url()
    none = Client(gw, gw.token("nina")).submit(BODY)
    assert none.status_code == 403 and none.json()["code"] == "not_entitled"
    assert httpx.post(f"{gw.relay_url('krea')}{GENERATE}/medium", json=BODY, timeout=30).status_code == 401
    assert not fakes["krea"].requests
    ready = httpx.get(f"{gw.url}/readyz", timeout=30).json()
    assert {"label": "krea", "category": "krea", "operations": {"generate": "krea", "job": "krea"}} in ready["relays"]
    paths = httpx.get(f"{gw.url}/openapi.json", timeout=30).json()["paths"]
    assert {"/relay/krea/generate/image/krea/krea-2/{variant}", "/relay/krea/jobs/{job_id}"} <= set(paths)


def test_backend_off(tmp_path: Path) -> None:
    config = gateway_config(tmp_path)
    assert config.krea.backend == "off"
    side, gateway = Gateway(config).open(), Gateway(config)
    try:
        token = side.accounts.issue_access_token(side.accounts.add_user("alice", "paid"), ttl=600).token
        app = create_app(config, gateway=gateway)
        with ServerThread(app, lifespan="on") as server:
            url = f"{server.url}/relay/krea{GENERATE}/medium"
            headers = {"authorization": f"Bearer {token}"}
            absent = httpx.post(url, json=BODY, headers=headers, timeout=30)
            assert absent.status_code == 404 and absent.json()["code"] == "relay_not_available"
            app.state.relays["krea"] = KreaRelay(gateway)  # mounted anyway: the operations say so
            off = httpx.post(url, json=BODY, headers=headers, timeout=30)
            assert off.status_code == 503 and off.json()["code"] == "backend_not_configured"
    finally:
        side.close_db()


# -- the job table ----------------------------------------------------------------------------------------
def test_job_table_owner_ttl_and_sharing(tmp_path: Path) -> None:
    now = [1000.0]
    first = SQLiteDatabase(connect(tmp_path / "jobs.db"), "jobs.db")
    second = SQLiteDatabase(connect(tmp_path / "jobs.db"), "jobs.db")  # another gateway process, same file
    table = JobTable(lambda: first, "test", ttl=10, clock=lambda: now[0])
    other_process = JobTable(lambda: second, "test", ttl=10, clock=lambda: now[0])
    other_relay = JobTable(lambda: first, "another", ttl=10, clock=lambda: now[0])

    async def scenario() -> None:
        assert await table.remember("a", "alice", {"model": "m"})
        assert await table.get("a", "alice") == {"model": "m"}
        assert await other_process.get("a", "alice") == {"model": "m"}  # a poll may reach any process
        assert await table.get("a", "bob") is None and await table.get("zzz", "alice") is None
        assert await other_relay.get("a", "alice") is None  # namespaces are separate
        assert not await other_process.remember("a", "bob", {"model": "stolen"})  # held by alice: unchanged
        assert await table.get("a", "alice") == {"model": "m"}
        now[0] += 5
        assert await table.remember("a", "alice", {"model": "m2"})  # the owner may update (and refresh) it
        now[0] += 9
        assert await table.get("a", "alice") == {"model": "m2"}
        now[0] += 1.5
        assert await table.get("a", "alice") is None  # older than the ttl
        assert await table.remember("a", "bob", {})  # an expired id is free again
        assert await other_process.get("a", "bob") == {}

    try:
        asyncio.run(scenario())
        with pytest.raises(ValueError):
            JobTable(lambda: first, "bad", ttl=0)
    finally:
        first.close()
        second.close()


# -- end to end through our own client -------------------------------------------------------------------
@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, gw: GatewayHarness) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    fast = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0, statuses=frozenset({408, 409, 429, 500, 502, 503}))
    monkeypatch.setattr(backends, "TIMING", backends.Timing(fal_poll=0.005, krea_first_poll=0.005,
                                                            krea_max_poll=0.01, fal_retry=fast, krea_retry=fast))
    monkeypatch.setenv("KREA_GATEWAY_URL", gw.relay_url("krea"))
    monkeypatch.setenv("FAL_QUEUE_GATEWAY_URL", gw.relay_url("fal-queue"))
    monkeypatch.setenv("HERMES_ALLOW_PRIVATE_URLS", "1")  # the fake vendors publish results on 127.0.0.1
    return hermes_home


def generate(home: Path, monkeypatch: pytest.MonkeyPatch, token: str, config: str,
             args: dict[str, Any]) -> dict[str, Any]:
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    (home / "config.yaml").write_text(f"image_gen:\n  provider: nous\n{config}", encoding="utf-8")
    registry.invalidate_checks()
    result = json.loads(registry.dispatch("image_generate", args))
    assert isinstance(result, dict)
    return result


def test_image_generate_with_a_krea_model(home: Path, gw: GatewayHarness, fakes: dict[str, Any],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    token = gw.token("alice")
    result = generate(home, monkeypatch, token, "  model: krea-2-large\n",
                      {"prompt": "a lighthouse", "aspect_ratio": "portrait"})
    assert result.get("success") is True and result["route"] == "gateway" and result["provider"] == "krea", result
    assert result["model"] == "krea-2-large" and "fallback_from" not in result
    assert Path(result["path"]).parent == home / "media"
    assert Path(result["path"]).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    seen = fakes["krea"].requests
    assert seen[0]["path"] == f"{GENERATE}/large"
    assert seen[0]["json"] == {"prompt": "a lighthouse", "aspect_ratio": "9:16", "resolution": "1K",
                               "creativity": "medium"}
    assert any(r["path"].startswith("/jobs/") for r in seen) and seen[-1]["path"].startswith("/files/")
    assert all(token not in str(r) for r in seen) and not fakes["fal"].requests
    assert [u[1] for u in usage(gw, "alice")[-3:]] == ["generate", "job", "job"]


def test_krea_429_through_the_gateway_falls_back_to_fal(home: Path, gw: GatewayHarness, fakes: dict[str, Any],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fakes["krea"].always_status = 429
    result = generate(home, monkeypatch, gw.token("alice"), "  model: krea-2-medium\n", {"prompt": "x"})
    assert result.get("success") is True, result
    assert result["fallback_from"]["provider"] == "krea" and result["fallback_from"]["model"] == "krea-2-medium"
    assert "429" in result["fallback_from"]["reason"]
    assert result["provider"] == "fal" and result["model"] == "fal-ai/flux-2/klein/9b"
    assert fakes["fal"].requests[0]["headers"]["authorization"] == f"Key {FAL_KEY}"
    assert Path(result["path"]).read_bytes().startswith(b"\x89PNG")


def test_unreachable_krea_relay_falls_back_to_fal(home: Path, gw: GatewayHarness, fakes: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREA_GATEWAY_URL", f"{closed_port_url()}/relay/krea")
    result = generate(home, monkeypatch, gw.token("alice"), "  model: krea-2-medium\n", {"prompt": "x"})
    assert result.get("success") is True and "cannot reach Krea" in result["fallback_from"]["reason"], result
    assert not fakes["krea"].requests and fakes["fal"].requests


def test_a_gateway_without_krea_falls_back_to_fal(home: Path, tmp_path: Path, fakes: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # a self-hosted gateway with only a FAL backend answers 404 relay_not_available for krea: no job can
    # exist, so the paid default model (Krea) still produces an image through FAL
    with GatewayHarness(tmp_path / "no_krea", limits=LIMITS,
                        **{"fal-queue.url": fakes["fal_url"], "fal-queue.api_key": FAL_KEY}) as only_fal:
        only_fal.user("alice")
        monkeypatch.setenv("KREA_GATEWAY_URL", only_fal.relay_url("krea"))
        monkeypatch.setenv("FAL_QUEUE_GATEWAY_URL", only_fal.relay_url("fal-queue"))
        result = generate(home, monkeypatch, only_fal.token("alice"), "  model: krea-2-medium\n", {"prompt": "x"})
    assert result.get("success") is True and result["provider"] == "fal", result
    assert "404" in result["fallback_from"]["reason"] and not fakes["krea"].requests


def test_a_source_image_never_falls_back(home: Path, gw: GatewayHarness, fakes: dict[str, Any],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fakes["krea"].always_status = 429
    result = generate(home, monkeypatch, gw.token("alice"), "  model: krea-2-medium\n",
                      {"prompt": "x", "image_url": "https://example.com/a.png"})
    assert "429" in result["error"] and "fallback_from" not in result
    assert fakes["krea"].requests[0]["json"]["image_style_references"] == [
        {"url": "https://example.com/a.png", "strength": 0.6}]
    assert not fakes["fal"].requests


def test_free_tier_token_is_refused_for_krea(home: Path, gw: GatewayHarness, fakes: dict[str, Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    error = generate(home, monkeypatch, gw.token("fred"), "  model: krea-2-medium\n", {"prompt": "x"})["error"]
    assert "needs a paid Nous subscription; the free tool tier covers FAL models only" in error
    assert not fakes["krea"].requests and not fakes["fal"].requests
