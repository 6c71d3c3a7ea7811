"""The revocation version pushed to every gateway process, so that a relayed request need not read it.

Cached token and user rows may answer only while the shared **revocation version** is the one they were
read under (:class:`~hermes.toolgateway.portal.auth.Authenticator`). Reading that version in every
request's Redis round trip made revocation exact, and cost the round trip. Instead:

* every change that must reach the caches (a revoked token, a disabled user, a new plan) raises the
  version and **publishes** it (:func:`channel_for`: one channel per database) in one script
  (:data:`BUMP`), which also says how many processes are subscribed;
* each gateway process keeps a subscription (:class:`VersionWatch`) and takes a published version as its
  own at once, then **acknowledges** it (its id added to a per-version set in Redis);
* the change returns only when as many processes as were subscribed to the channel have acknowledged
  it (at most :data:`ACK_WAIT` seconds) — so when ``tokens revoke`` returns, every serving process
  refuses the token on its next request, as before. A serving process making a change itself (a portal
  route) waits in a worker thread, so that its own loop goes on and acknowledges too
  (:meth:`~hermes.toolgateway.services.Gateway.changes_applied`).

While a process's subscription is not in place (starting, reconnecting: it is retried every
:data:`RECONNECT_DELAY` seconds), :attr:`VersionWatch.live` is False and its requests read the version in
their own round trip again; once subscribed it reads the version (after subscribing, so nothing published
in between is missed; and the process forgets its cached rows, which a Redis restarted without its data
could otherwise match again), and again every :data:`HEARTBEAT` seconds beside a ``PING`` on the subscription,
which also finds a connection that went silent. A process that received a message but did not
acknowledge in time (stopped, or its loop busy) is named in one warning; it applies the change when it
runs again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import redis

from hermes.toolgateway.storage.resp import LeanRedis, Script, Subscriber, open_connection, parse_url

log = logging.getLogger("hermes.toolgateway")

#: the counter raised by every change that must reach cached token and user rows at once
AUTH_VERSION_KEY = "hermes:toolgateway:auth-version"
#: where a raised version is published: Pub/Sub channels are shared by every database of a Redis server, so the
#: name carries the database number (``…:db0``)
CHANNEL = AUTH_VERSION_KEY


def channel_for(url: str) -> str:
    """The revocation version's channel for the database of ``url``."""
    return f"{CHANNEL}:db{int(parse_url(url).get('db') or 0)}"
#: per-version sets of the processes that applied it
ACK_PREFIX = AUTH_VERSION_KEY + ":ack:"
ACK_TTL_MS = 60_000
#: how long a change waits for every subscribed process to acknowledge it
ACK_WAIT = 1.0
HEARTBEAT = 1.0
RECONNECT_DELAY = 0.5

#: KEYS[1] the version; ARGV[1] the channel. Returns {new version, subscribers that received it}: those of the
#: channel itself (gateway processes), not pattern subscribers (a monitoring ``PSUBSCRIBE *`` does not acknowledge)
BUMP = """
local version = redis.call('INCR', KEYS[1])
local receivers = redis.call('PUBSUB', 'NUMSUB', ARGV[1])[2]
redis.call('PUBLISH', ARGV[1], version)
return {version, receivers}
"""
#: KEYS[1] the version's acknowledgement set; ARGV[1] the process, ARGV[2] the set's lifetime (ms)
ACK = Script("""
redis.call('SADD', KEYS[1], ARGV[1])
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
""")


def ack_key(version: int) -> str:
    return f"{ACK_PREFIX}{version}"


def wait_for_acks(client: redis.Redis, version: int, receivers: int, label: str) -> None:
    """Return once ``receivers`` processes acknowledged ``version`` (or after :data:`ACK_WAIT` seconds, with a
    warning naming how many did not); a Redis that stops answering meanwhile is a warning too."""
    deadline = time.monotonic() + ACK_WAIT
    delay = 0.0005
    acked = 0
    try:
        while True:
            acked = int(client.scard(ack_key(version)))
            if acked >= receivers or time.monotonic() >= deadline:
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
    except redis.RedisError as exc:
        log.warning("the revocation version %d was published, but Redis at %s stopped answering while the gateway "
                    "processes acknowledged it (%s)", version, label, type(exc).__name__)
        return
    if acked < receivers:
        log.warning("%d of %d gateway process(es) did not acknowledge the revocation version %d within %g s; each "
                    "applies it when it next reads the version (at most %g s while it runs)",
                    receivers - acked, receivers, version, ACK_WAIT, HEARTBEAT)


class VersionWatch:
    """This process's subscription to the revocation version (see the module docstring)."""

    def __init__(self, url: str, client: LeanRedis, timeout: float, *, heartbeat: float = HEARTBEAT,
                 on_subscribed: Callable[[], None] = lambda: None) -> None:
        self.options = parse_url(url)
        #: called on every (re)subscription, before the version is read: a Redis that restarted without its
        #: data counts from 0 again, and could reach the number cached rows were read under
        self.on_subscribed = on_subscribed
        self.client = client
        self.timeout = timeout
        self.heartbeat = heartbeat
        self.channel = channel_for(url)
        self.id = secrets.token_hex(8)
        #: the latest version seen; read by every relayed request while :attr:`live`
        self.version = 0
        #: subscribed and the version read since: requests may take :attr:`version` without asking Redis
        self.live = False
        self._messages = 0  # versions received: a read of the version sent before one of them is older than it
        self._task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self) -> None:
        """Subscribe in the background (a Redis that is down now is retried; requests ask it meanwhile)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="auth-version-watch")

    async def aclose(self) -> None:
        self.live = False
        for task in [self._task, *self._tasks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, redis.RedisError):
                    await task
        self._task = None

    # -- inside ----------------------------------------------------------------------------------------
    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            conn: Subscriber | None = None
            try:
                conn = await open_connection(loop, self.options, self.timeout, Subscriber)
                lost = asyncio.Event()
                conn.on_message = self._message
                conn.on_lost = lost.set
                reply = await conn.call(self.timeout, b"SUBSCRIBE", self.channel)
                if not (isinstance(reply, list) and reply and reply[0] == b"subscribe"):
                    raise redis.ResponseError(f"unexpected reply to SUBSCRIBE: {reply!r:.80}")
                self.on_subscribed()
                await self._read_version()
                self.live = True
                while not lost.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), self.heartbeat)
                    if lost.is_set():
                        break
                    await conn.call(self.timeout, b"PING")  # a silent connection times out, and is dropped
                    await self._read_version()
            except (redis.RedisError, OSError) as exc:
                log.debug("the revocation version's subscription is down (%s); retrying", type(exc).__name__)
            except Exception:  # never the end of the watch: requests read the version themselves meanwhile
                log.exception("the revocation version's subscription failed; retrying")
            finally:
                self.live = False
                if conn is not None:
                    conn.close()
            await asyncio.sleep(RECONNECT_DELAY)

    async def _read_version(self) -> None:
        """The stored version — unless a published one arrived while it was read: that one is newer (Redis may
        have answered the read before raising the version, and sent the two replies in either order)."""
        messages = self._messages
        version = int(await self.client.call(b"GET", AUTH_VERSION_KEY) or 0)
        if self._messages == messages:
            self.version = version

    def _message(self, channel: bytes, payload: bytes) -> None:
        try:
            version = int(payload)
        except ValueError:
            return
        self._messages += 1
        self.version = version  # a lower one (Redis restarted) makes the cache forget everything: still safe
        task = asyncio.get_running_loop().create_task(self._ack(version))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _ack(self, version: int) -> None:
        with contextlib.suppress(redis.RedisError):
            await self.client.evalsha([ack_key(version)], [self.id, ACK_TTL_MS], ACK)
