"""The vendor clients on their own, through httpx's transport seam (``httpx.MockTransport``): retries,
``Retry-After``, size caps, the credential guard, Krea's "refused before starting" and FAL's strict statuses.
These are the behaviours the gateway server's relays rely on too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from hermes.vendors.base import (
    Auth,
    RetryPolicy,
    VendorError,
    api_root,
    decode_data_uri,
    download,
    error_detail,
    same_origin,
    send,
)
from hermes.vendors.fal_queue import FalQueueClient, valid_model_path
from hermes.vendors.krea import KreaClient, parse_job
from hermes.vendors.openai_images import parse_images
from hermes.vendors.xai import parse_answer

T = TypeVar("T")
FAST = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0, statuses=frozenset({429, 503}))
Handler = Callable[[httpx.Request], httpx.Response]


def run(make: Callable[[httpx.AsyncClient], Coroutine[Any, Any, T]], handler: Handler) -> T:
    async def main() -> T:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            return await make(http)

    return asyncio.run(main())


def test_auth_is_kept_out_of_repr() -> None:
    assert "secret" not in repr(Auth.bearer("secret")) and Auth.key("t").headers() == {"authorization": "Key t"}
    assert Auth.api_key_header("XI-API-KEY", "k").headers() == {"xi-api-key": "k"}


def test_retries_honour_retry_after_then_give_the_last_answer() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}})

    response = run(lambda http: send(http, "POST", "https://v.example/x", vendor="V", auth=Auth.bearer("t"),
                                     allow=same_origin("https://v.example"), retry=FAST, json_body={"a": 1},
                                     headers={"x-idempotency-key": "k1"}), handler)
    assert response.status == 429 and response.attempts == 3 and len(seen) == 3
    assert {r.headers["x-idempotency-key"] for r in seen} == {"k1"}
    with pytest.raises(VendorError) as error:
        response.raise_for_status()
    assert str(error.value) == "V answered HTTP 429: slow down" and error.value.retry_after == 0.0


def test_transport_errors_are_retried_and_reported_as_unreachable() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(VendorError) as error:
        run(lambda http: send(http, "GET", "https://v.example/", vendor="V", auth=None, allow=lambda _u: True,
                              retry=FAST), handler)
    assert calls == 3 and error.value.kind == "unreachable" and error.value.before_start


def test_credentials_only_go_where_the_guard_allows() -> None:
    def handler(request: httpx.Request) -> httpx.Response:  # pragma: no cover - must never be called
        raise AssertionError(f"sent to {request.url}")

    with pytest.raises(VendorError) as error:
        run(lambda http: send(http, "GET", "https://evil.example/steal", vendor="V", auth=Auth.bearer("t"),
                              allow=same_origin("https://v.example")), handler)
    assert error.value.kind == "refused_url" and "evil.example" in str(error.value)
    assert same_origin("https://v.example")("https://v.example:443/a")
    assert not same_origin("https://v.example")("http://v.example/a")
    assert not same_origin("https://v.example")("https://v.example.evil.com/a")


def test_size_cap() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * 2000)

    with pytest.raises(VendorError, match="more than 1000 bytes"):
        run(lambda http: download(http, "https://cdn.example/a.png", vendor="V", max_bytes=1000), handler)


def test_downloads_carry_no_credentials_and_follow_redirects() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert "authorization" not in request.headers
        if request.url.path == "/a":
            return httpx.Response(302, headers={"location": "https://cdn2.example/b"})
        return httpx.Response(200, content=b"img", headers={"content-type": "image/png; x=y"})

    assert run(lambda http: download(http, "https://cdn.example/a", vendor="V", max_bytes=100), handler) == \
        (b"img", "image/png")
    assert run(lambda http: download(http, "data:image/png;base64,aW1n", vendor="V", max_bytes=100), handler) == \
        (b"img", "image/png")


@pytest.mark.parametrize("body, detail", [
    (b'{"error": {"message": "bad key"}}', "bad key"),
    (b'{"detail": [{"msg": "field required"}]}', "field required"),
    (b'{"message": "nope"}', "nope"),
    (b"plain words", "plain words"),
    (b"<html>502</html>", ""),
    (b"\xff\xfe", "\ufffd\ufffd"),
])
def test_error_detail(body: bytes, detail: str) -> None:
    assert error_detail(body) == detail


def test_data_uris_and_api_roots() -> None:
    assert decode_data_uri("data:text/plain,a%20b", max_bytes=10) == (b"a b", "text/plain")
    with pytest.raises(ValueError, match="not valid base64"):
        decode_data_uri("data:image/png;base64,@@", max_bytes=10)
    with pytest.raises(ValueError, match="more than 2 bytes"):
        decode_data_uri("data:;base64,aW1n", max_bytes=2)
    assert api_root("https://api.openai.com/v1/") == "https://api.openai.com"


def test_fal_queue_flow_and_strict_statuses() -> None:
    polls = iter([{"status": "IN_QUEUE", "queue_position": 2}, {"status": "IN_PROGRESS", "logs": None},
                  {"status": "COMPLETED", "logs": None}])

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Key t" and request.headers["user-agent"].startswith("hermes")
        if request.method == "POST":
            root = "https://q.example/fal-ai/m/requests/r1"
            return httpx.Response(200, json={"request_id": "r1", "status_url": f"{root}/status",
                                             "response_url": root, "cancel_url": f"{root}/cancel"})
        if request.url.path.endswith("/status"):
            assert request.url.params["logs"] == "false"
            return httpx.Response(200, json=next(polls))
        return httpx.Response(200, json={"images": [{"url": "https://cdn/x.png"}]})

    result = run(lambda http: FalQueueClient(http, "https://q.example", Auth.key("t"), retry=FAST)
                 .run("fal-ai/m", {"prompt": "p"}, poll_interval=0), handler)
    assert result == {"images": [{"url": "https://cdn/x.png"}]}

    def missing_key(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"request_id": "r1", "status_url": "https://q.example/s"})

    with pytest.raises(VendorError, match="lacks 'response_url'"):
        run(lambda http: FalQueueClient(http, "https://q.example", Auth.key("t")).submit("fal-ai/m", {}), missing_key)
    assert valid_model_path("fal-ai/flux-2/klein/9b") and not valid_model_path("fal-ai/../x")
    assert not valid_model_path("nomodel") and not valid_model_path("/abs/x")


def test_krea_refusal_before_start_versus_other_failures() -> None:
    def busy(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": "busy"}, headers={"retry-after": "0"})

    with pytest.raises(VendorError) as refused:
        run(lambda http: KreaClient(http, "https://k.example", Auth.bearer("t"), retry=FAST)
            .submit("krea-2-medium", {"prompt": "p"}), busy)
    assert refused.value.before_start and refused.value.status == 429

    def broken(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, json={"error": "boom"})

    with pytest.raises(VendorError) as failed:
        run(lambda http: KreaClient(http, "https://k.example", Auth.bearer("t"), retry=FAST)
            .submit("krea-2-medium", {"prompt": "p"}), broken)
    assert not failed.value.before_start and failed.value.status == 500
    with pytest.raises(ValueError, match="not a Krea native model"):
        run(lambda http: KreaClient(http, "https://k.example", Auth.bearer("t")).submit("fal-ai/x", {}), broken)


def test_response_parsers() -> None:
    assert parse_job("j", {"status": "completed", "result": {"url": "u"}}).urls == ("u",)
    assert parse_job("j", {"status": "processing", "completed_at": "now", "result": {"urls": ["a"]}}).succeeded
    failed = parse_job("j", {"status": "failed", "result": {"error": {"message": "nsfw"}}})
    assert failed.finished and not failed.succeeded and failed.error == "nsfw"
    assert parse_images({"data": [{"url": "u"}, {"b64_json": "aW1n"}, "junk"]})[1].b64_json == "aW1n"
    with pytest.raises(VendorError):
        parse_images({"data": []})
    answer = parse_answer(json.loads('{"output": [{"type": "message", "content": [{"type": "output_text", '
                                     '"text": "hi", "annotations": [{"url": "https://x.com/1"}]}]}], '
                                     '"citations": ["https://x.com/1", "https://x.com/2"]}'))
    assert answer.text == "hi" and [c.url for c in answer.citations] == ["https://x.com/1", "https://x.com/2"]
