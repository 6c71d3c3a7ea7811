"""Server hygiene: credentials in URLs never reach the access log, the files the gateway writes are 0600,
and the absolute URLs it hands out come from ``public_url`` (when set), never from a forged ``Host``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fakes.vendors import ServerThread
from fakes.vendors.fal import FakeFal
from fakes.vendors.harness import GatewayHarness
from hermes.toolgateway.accesslog import MAX_PENDING, LogSink, redact_path, redact_query

OPERATOR_KEY = "fal-operator-secret"
MODEL = "fal-ai/flux-2/klein/9b"
PUBLIC = "https://gateway.example.test"


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the usual default: files 0644 unless the gateway says otherwise
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(scope="module")
def fal() -> Iterator[ServerThread]:
    with ServerThread(FakeFal(key=OPERATOR_KEY, polls_before_done=3).app) as server:
        yield server


def submit(gw: GatewayHarness, token: str, url: str, host: str | None = None) -> dict[str, str]:
    headers = {"authorization": f"Key {token}"}
    if host is not None:
        headers["host"] = host
    resp = httpx.post(f"{url}/{MODEL}", json={"prompt": "x"}, headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    handle: dict[str, str] = resp.json()
    return handle


# -- public URLs ------------------------------------------------------------------------------------------
def test_queue_urls_come_from_public_url_not_the_host_header(tmp_path: Path, fal: ServerThread) -> None:
    with GatewayHarness(tmp_path, public_url=PUBLIC, **{"fal-queue.url": fal.url,
                                                        "fal-queue.api_key": OPERATOR_KEY}) as gw:
        gw.user("alice")
        token = gw.token("alice")
        root = f"{PUBLIC}/relay/fal-queue/{MODEL}/requests/"
        for host in ("evil.example", None, gw.relay_host("fal-queue")):
            url = gw.url if host == gw.relay_host("fal-queue") else gw.relay_url("fal-queue")
            handle = submit(gw, token, url, host)
            for key in ("status_url", "response_url", "cancel_url"):
                assert handle[key].startswith(root), (host, handle)
            # the public URL reaches the same relay: follow it on the real server
            status = httpx.get(gw.url + handle["status_url"][len(PUBLIC):], headers={"authorization": f"Key {token}"},
                               timeout=30)
            assert status.status_code == 200 and status.json()["status"] == "IN_QUEUE", status.text


def test_a_malformed_host_header_is_not_used_in_urls(tmp_path: Path, fal: ServerThread) -> None:
    with GatewayHarness(tmp_path, **{"fal-queue.url": fal.url, "fal-queue.api_key": OPERATOR_KEY}) as gw:
        gw.user("alice")
        handle = submit(gw, gw.token("alice"), gw.relay_url("fal-queue"), host="evil.example/phish?x=")
        assert handle["status_url"].startswith(f"{gw.config.base_url()}/relay/fal-queue/{MODEL}/"), handle
        assert "evil" not in json.dumps(handle)


# -- access log -------------------------------------------------------------------------------------------
SECRETS = {
    "login": "ll_Zx9aQ3lK8mN2pR7sT1uV4wX6yZ0bC5d",
    "token": "Q3lK8mN2pR7sT1uV4wX6yZ0bC5dE9fG3hJ8kL2Zx9a",
    "api_key": "sk-proj-abcdefghijklmnopqrstuv12345",
    "access_token": "plainvalue123",
    "sig": "azureSasSignatureValue",
    "X-Amz-Signature": "f00dfeedf00dfeedf00dfeedf00dfeed",
    "X-Amz-Credential": "AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request",
    "key": "uploadCapabilityKey",
}
PATH_SECRETS = ("ll_PathLoginLinkSecret99", "rt_RefreshTokenInPath1234567890",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVl", "gwadm_AdminTokenInThePath12345",
                "sk-proj-PathKeyabcdefghijklmnop1234", "Zx9_aQ3lK8mN2pR7sT1uV4wX6yZ0bC5dE9fG3hJ8kL2")
UUID = "8b1c1d2e-3f40-4a5b-9c6d-7e8f90a1b2c3"


def test_credentials_in_urls_are_masked_in_the_access_log(tmp_path: Path, umask_022: None) -> None:
    log = tmp_path / "access.log"
    with GatewayHarness(tmp_path / "home", access_log=str(log)) as gw, gw.client() as client:
        for name, value in SECRETS.items():
            client.get("/device", params={name: value, "page": "2"})
        for secret in PATH_SECRETS:
            client.get(f"/login/{secret}")
            client.get(f"/relay/fal-queue/fal-ai/x/requests/{secret}/status")
        client.get(f"/relay/browser-use/cdp/{UUID}", params={"token": "cdpSessionSecret"})
        client.get("/api/uploads/files/up_0123456789abcdef0123456789abcdef.png", params={"key": "K3y"})
        client.get("/token/short")  # the segment after one named like a secret
    text = log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) >= len(SECRETS) + 2 * len(PATH_SECRETS) + 3
    for secret in (*SECRETS.values(), *PATH_SECRETS, "cdpSessionSecret", "K3y", "short"):
        assert secret not in text, secret
    assert UUID in text and "up_0123456789abcdef0123456789abcdef.png" in text and "page=2" in text
    assert any(line["path"] == "/login/***" for line in lines)
    assert mode(log) == 0o600


def test_redaction_rules() -> None:
    assert redact_path("/relay/fal-queue/fal-ai/flux/requests/" + UUID + "/status").endswith(UUID + "/status")
    sandbox = "/v1/sandboxes/sb-0123456789abcdef01234567/execs"
    assert redact_path(sandbox) == sandbox
    assert redact_path("/dashboard/signin") == "/dashboard/signin"
    assert redact_path("/api/oauth/token") == "/api/oauth/token"
    assert redact_path("/api/key/abc/def") == "/api/key/***/def"
    masked = redact_query(b"q=hello&u=eyJhbGciOi.eyJzdWIi.c2ln")
    assert "q=hello" in masked and "eyJ" not in masked


def test_an_access_line_is_what_json_dumps_writes(tmp_path: Path) -> None:
    """The line is written without json.dumps; it must still be the same JSON, escapes included."""
    sink = LogSink(str(tmp_path / "access.log"))
    scopes = [({"method": "POST", "path": "/relay/firecrawl/v2/search", "query_string": b"",
                "headers": [(b"host", b"127.0.0.1:8787")], "client": ("127.0.0.1", 5000)}, {"gw_user": "u_1"}, 200),
              ({"method": "GET", "path": '/a"b\\c/\u00e9\u4e2d\U0001f600\x01', "query_string": b"q=\"x\"&n=%E2%82%AC",
                "headers": [(b"host", "h\u00f6st".encode("latin-1"))]}, {}, 404)]
    for scope, state, status in scopes:
        sink.add(scope, state.get("gw_user"), status, 1.23456)
    sink.close()
    lines = (tmp_path / "access.log").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    for line, (scope, state, status) in zip(lines, scopes, strict=True):
        record = json.loads(line)
        expected = {"ts": record["ts"], "method": scope["method"], "host": scope["headers"][0][1].decode("latin-1"),
                    "path": redact_path(str(scope["path"])), "query": redact_query(scope["query_string"]),
                    "status": status, "latency_ms": 1.235, "user": state.get("gw_user"),
                    "client": scope["client"][0] if "client" in scope else None}
        assert line == json.dumps(expected, separators=(",", ":"))
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["ts"])


def test_access_lines_are_written_in_batches_and_all_at_the_end(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    scope = {"method": "GET", "path": "/healthz", "query_string": b"", "headers": []}

    async def scenario() -> None:
        sink = LogSink(str(log), interval=0.2)
        for _ in range(3):
            sink.add(scope, None, 200, 1.0)
        assert not log.exists()  # held back ...
        await asyncio.sleep(0.5)
        assert len(log.read_text().splitlines()) == 3  # ... for at most the interval
        for _ in range(MAX_PENDING):
            sink.add(scope, None, 200, 1.0)
        assert len(log.read_text().splitlines()) == 3 + MAX_PENDING  # a full buffer is written at once
        sink.add(scope, "u_1", 404, 2.0)
        sink.close()  # the server stops: nothing waits
        lines = log.read_text().splitlines()
        assert len(lines) == 4 + MAX_PENDING and json.loads(lines[-1])["status"] == 404

    asyncio.run(scenario())


def test_stderr_batches_are_cut_at_line_ends_within_a_pipes_atomic_size() -> None:
    from hermes.toolgateway.accesslog import _chunks

    lines = [f'{{"n":{i},"pad":"{"x" * (i % 300)}"}}\n' for i in range(400)] + ["y" * 5000 + "\n", "z\n"]
    text = "".join(lines)
    pieces = _chunks(text, 4096)
    assert "".join(pieces) == text and len(pieces) > 1
    assert all(piece.endswith("\n") for piece in pieces)
    assert all(len(piece) <= 4096 for piece in pieces if "y" * 5000 not in piece)
    assert _chunks("a\n", 4096) == ["a\n"]


# -- file modes -------------------------------------------------------------------------------------------
def test_database_and_key_files_are_0600(tmp_path: Path, umask_022: None) -> None:
    with GatewayHarness(tmp_path) as gw:
        gw.user("alice")
        state = gw.config.state_dir
        db = gw.config.db_path
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm"), gw.config.secret_path, gw.config.admin_token_path]
        for path in files:
            assert path.exists() and mode(path) == 0o600, (path, oct(mode(path)))
        assert mode(state) == 0o700


def test_an_existing_database_readable_by_others_is_made_private(tmp_path: Path, umask_022: None) -> None:
    db = tmp_path / "elsewhere" / "gw.db"
    with GatewayHarness(tmp_path / "home", database=str(db)):
        pass
    os.chmod(db, 0o644)
    with GatewayHarness(tmp_path / "home", database=str(db)) as gw:
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert mode(path) == 0o600, path
        assert gw.config.db_path == db
