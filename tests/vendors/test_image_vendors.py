"""The vendor clients on their own, through httpx's transport seam (``httpx.MockTransport``; result
downloads on real loopback servers): retries,
``Retry-After``, size caps, the credential guard, Krea's "refused before starting" and FAL's strict statuses.
These are the behaviours the gateway server's relays rely on too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Iterator
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


@pytest.fixture(scope="module")
def results() -> Iterator[tuple[str, str, list[dict[str, str]]]]:
    """Two real loopback servers: ``vendor`` (the configured endpoint, publishing results) and ``other``
    (another local service a result URL must not reach); the headers of each request ``vendor`` got."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import RedirectResponse, Response
    from starlette.routing import Route

    from fakes.vendors.server import ServerThread

    seen: list[dict[str, str]] = []

    async def result(request: Request) -> Response:
        seen.append(dict(request.headers))
        name = request.path_params["name"]
        if name == "big.png":
            return Response(b"x" * 2000, media_type="image/png")
        if name == "hop":  # a redirect to another address of the same server, then the image
            return RedirectResponse(f"http://localhost:{request.url.port}/r/a.png", status_code=302)
        if name.startswith("to-"):  # a redirect to whatever the query names
            return RedirectResponse(request.query_params["url"], status_code=302)
        return Response(b"img", media_type="image/png; x=y")

    async def secret(request: Request) -> Response:
        return Response(b"internal admin page", media_type="text/plain")

    with ServerThread(Starlette(routes=[Route("/r/{name}", result)])) as vendor, \
            ServerThread(Starlette(routes=[Route("/{path:path}", secret)])) as other:
        yield vendor.url, other.url, seen


def fetch(url: str, **kw: Any) -> tuple[bytes, str]:
    async def main() -> tuple[bytes, str]:
        async with httpx.AsyncClient() as http:
            return await download(http, url, vendor="V", max_bytes=1000, timeout=10, **kw)

    return asyncio.run(main())


def test_size_cap(results: tuple[str, str, list[dict[str, str]]]) -> None:
    vendor, _, _ = results
    with pytest.raises(VendorError, match="larger than the limit of 1000 bytes"):
        fetch(f"{vendor}/r/big.png", trusted_origin=vendor)


def test_downloads_carry_no_credentials_and_follow_redirects(results: tuple[str, str, list[dict[str, str]]]) -> None:
    vendor, _, seen = results
    assert fetch(f"{vendor}/r/hop", allow_private=True) == (b"img", "image/png")
    assert all("authorization" not in headers for headers in seen)
    assert fetch(f"{vendor}/r/a.png", trusted_origin=vendor + "/v1") == (b"img", "image/png")
    assert fetch("data:image/png;base64,aW1n") == (b"img", "image/png")


def test_result_urls_reach_no_local_or_metadata_address(results: tuple[str, str, list[dict[str, str]]]) -> None:
    """A vendor's result URL is fetched like a web page: a URL (or a redirect) naming 127.0.0.1, a
    private network or a cloud metadata address is refused; only the configured vendor endpoint itself
    may be local."""
    vendor, other, _ = results
    refused = [f"{other}/admin", "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/x",
               f"{vendor}/r/to-other?url={other}/admin", f"{vendor}/r/to-meta?url=http://169.254.169.254/"]
    for url in refused:
        with pytest.raises(VendorError) as error:
            fetch(url, trusted_origin=vendor if url.startswith(vendor) else None)
        assert error.value.kind == "refused_url", (url, error.value)
    with pytest.raises(VendorError, match="not downloaded"):
        fetch(f"{vendor}/r/a.png")  # the vendor's own address, but nobody said it is the vendor
    with pytest.raises(VendorError):  # the operator's allow_private_urls never opens the metadata address
        fetch("http://169.254.169.254/latest/meta-data/", allow_private=True)


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
