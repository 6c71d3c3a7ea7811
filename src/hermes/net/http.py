"""One HTTP request: a capped body, retries with exponential backoff, ``Retry-After`` and a deadline.

:func:`send_request` is the one place that sends a request on an ``httpx.AsyncClient`` for the vendor
clients, the Tool Gateway's relays and the SSRF-safe page fetcher:

* the body is read as a stream and refused past ``max_bytes`` (a declared ``Content-Length`` over the cap
  is refused before reading): :class:`~hermes.errors.ResponseTooLarge`;
* transport errors (any ``httpx.HTTPError``, when ``retry.retry_transport``) and the statuses in
  ``retry.statuses`` are tried again, at most ``retry.attempts`` tries in all, after
  :meth:`RetryPolicy.delay` — the answer's ``Retry-After`` (capped) or exponential backoff with jitter;
* with a ``deadline`` (a ``time.monotonic()`` value) no try starts after it
  (:class:`~hermes.errors.DeadlineExceeded`), each try gets at most the time left, a wait takes at most
  half of that time, and an answer whose ``Retry-After`` does not fit before the deadline is returned;
* ``inspect`` sees each answer's status and headers before its body is read: it may raise to refuse the
  answer, or return False to leave the body unread (a redirect to follow by hand).

The last answer is returned whatever its status; the last transport error is raised as httpx raised it.
Turning either into an error of its own is the caller's business. :func:`parse_retry_after` (in
:mod:`hermes.net.retry_timing`, re-exported here) is the one ``Retry-After`` parser (seconds or an HTTP
date), used by the OpenAI-client model provider too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from hermes.errors import DeadlineExceeded, ResponseTooLarge
from hermes.net.retry_timing import backoff_delay, parse_retry_after

#: sees an answer's head (body unread): raise to refuse it, return False to leave the body unread
Inspect = Callable[[httpx.Response], bool]


@dataclass(frozen=True)
class RetryPolicy:
    """How often one logical request is tried (``attempts`` counts the first try) and how long to wait."""

    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    statuses: frozenset[int] = frozenset({408, 429, 500, 502, 503, 504})
    retry_transport: bool = True
    #: cap on a server's ``Retry-After`` (None: ``max_delay``)
    max_retry_after: float | None = None
    #: bounds of the random factor applied to the exponential backoff
    jitter: tuple[float, float] = (0.5, 1.0)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before try number ``attempt + 1`` (``attempt`` starts at 1)."""
        return backoff_delay(attempt, retry_after, base_delay=self.base_delay, max_delay=self.max_delay,
                             max_retry_after=self.max_retry_after, jitter=self.jitter)


NO_RETRY = RetryPolicy(attempts=1)


@dataclass(frozen=True)
class HttpAnswer:
    """A complete answer: status, headers, body (empty when ``inspect`` left it unread), how many tries."""

    status: int
    headers: httpx.Headers
    body: bytes
    attempts: int = 1
    #: the charset the ``Content-Type`` names, if any
    charset: str | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str:
        """The media type, lower case, without parameters ("" when there is no ``Content-Type``)."""
        value: str = self.headers.get("content-type", "")
        return value.split(";")[0].strip().lower()

    @property
    def retry_after(self) -> float | None:
        return parse_retry_after(self.headers.get("retry-after"))


async def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The (decoded) body of a streamed response; :class:`ResponseTooLarge` past ``max_bytes``."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(max_bytes)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


async def send_request(
    client: httpx.AsyncClient, method: str, url: str, *, max_bytes: int, retry: RetryPolicy = NO_RETRY,
    timeout: float | None = None, deadline: float | None = None, headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None, json: Any = None, content: bytes | None = None,
    data: Mapping[str, str] | None = None, files: Mapping[str, tuple[str, bytes, str]] | None = None,
    extensions: Mapping[str, Any] | None = None, follow_redirects: bool | None = None,
    inspect: Inspect | None = None,
) -> HttpAnswer:
    """One logical request (see the module docstring).

    ``timeout`` is each try's limit (None: the time left before ``deadline``, or the client's default);
    ``follow_redirects`` None keeps the client's setting.
    """
    options: dict[str, Any] = {"headers": headers, "params": params, "json": json, "content": content,
                               "data": data, "files": files, "extensions": extensions,
                               "follow_redirects": follow_redirects}
    options = {key: value for key, value in options.items() if value is not None}

    async def once(per_try: float | None, attempt: int) -> HttpAnswer:
        if per_try is not None:
            options["timeout"] = per_try
        return await _once(client, method, url, options, max_bytes, attempt, inspect)

    return await retrying(once, retry=retry, timeout=timeout, deadline=deadline)


#: one try of a request: given the time it may take (None: no limit) and its number (from 1)
Attempt = Callable[[float | None, int], Awaitable[HttpAnswer]]


async def retrying(once: Attempt, *, retry: RetryPolicy, timeout: float | None, deadline: float | None) -> HttpAnswer:
    """Tries of one logical request as :func:`send_request` makes them, whatever client ``once`` uses
    (a transport error is any ``httpx.HTTPError`` it raises)."""
    attempt = 0
    while True:
        attempt += 1
        per_try = _time_for_try(timeout, deadline)
        try:
            answer = await once(per_try, attempt)
        except httpx.HTTPError:
            if not retry.retry_transport or attempt >= retry.attempts:
                raise
            wait = retry.delay(attempt, None)
        else:
            if answer.status not in retry.statuses or attempt >= retry.attempts:
                return answer
            server_wait = answer.retry_after
            wait = retry.delay(attempt, server_wait)
            if deadline is not None and server_wait is not None and time.monotonic() + wait >= deadline:
                return answer  # the server's own wait does not fit: its answer is the result
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - time.monotonic()) / 2)
        await asyncio.sleep(wait)


def _time_for_try(timeout: float | None, deadline: float | None) -> float | None:
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded("the request's deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


async def _once(client: httpx.AsyncClient, method: str, url: str, options: dict[str, Any], max_bytes: int,
                attempt: int, inspect: Inspect | None) -> HttpAnswer:
    async with client.stream(method, url, **options) as response:
        read = inspect is None or inspect(response)
        body = await read_capped(response, max_bytes) if read else b""
        return HttpAnswer(response.status_code, response.headers, body, attempt, response.charset_encoding)
