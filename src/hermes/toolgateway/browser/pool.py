"""A pool of local headless Chromium processes: the ``local`` backend of the ``browser-use`` relay.

Every browser session is one Chromium with a fresh directory (its log; ``profile``, ``downloads`` and
``home`` — its HOME, TMPDIR and working directory), started in its own process group with
``--remote-debugging-pipe``: it speaks the DevTools protocol only over two pipes the gateway holds
(:mod:`hermes.toolgateway.browser.cdppipe`) and opens **no** DevTools port, so no other process of the host
(another user's sandbox command, say) can find and drive it. ``sh`` puts the pipes on the descriptors
Chromium reads (3) and writes (4) and then becomes Chromium. Clients reach the browser through the
gateway's WebSocket proxy (:mod:`hermes.toolgateway.browser.cdpproxy`). Every connection the browser itself
opens goes through the pool's network fence (:mod:`hermes.toolgateway.browser.fence`),
which keeps it off loopback and private networks.

Chromium never runs as root: a gateway running as root needs ``run_as``, an unprivileged user
(:func:`browser_identity`). The session directory then stays the gateway's (mode 0711, so that user can
pass through it but not list it; the log is the gateway's, 0600), its three folders are created 0700
and handed to that user, and the child drops to it (no supplementary groups, ``setgid``, ``setuid``)
in a ``preexec_fn`` — ``subprocess``'s ``user=``/``group=`` are ignored under uvloop — before ``sh``
starts. The pipes are already open then, so they keep working; the gateway, as root, still kills the
group. Chromium's own sandbox stays on (unless ``chromium_sandbox = false``).

A session ends — its whole process group is killed and its directory removed — when its owner
releases it, after ``idle_timeout`` seconds without a CDP command from any client, when its lifetime
runs out, when Chromium exits by itself, or when the gateway stops (:meth:`BrowserPool.aclose`).
Closing a client's WebSocket does not end the session. Limits: ``max_sessions`` Chromiums at once
(503 ``browser_pool_full`` beyond) and ``max_sessions_per_user`` per user (429 ``too_many_sessions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import pwd
import secrets
import shutil
import signal
import tempfile
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from hermes.errors import ConfigError
from hermes.net.address_policy import FetchPolicy
from hermes.net.fence import NetworkFence
from hermes.toolgateway.browser.cdppipe import MAX_MESSAGE, CDPPipe, PipeClosed, PipeError
from hermes.toolgateway.browser.config import BrowserUseConfig
from hermes.toolgateway.errors import GatewayHTTPError
from hermes.toolgateway.sandbox.fs import reachable_by
from hermes.toolgateway.sandbox.proc import Identity

log = logging.getLogger("hermes.toolgateway")

ENDED_KEPT = 1000  # stopped sessions remembered, so a late stop or status answers "stopped" rather than 404
#: runs Chromium with the pipes on fds 3 (stdin: commands) and 4 (stdout: replies), its own stdio on /dev/null
PIPE_SHIM = ("/bin/sh", "-c", 'exec "$@" 3<&0 4>&1 </dev/null >/dev/null', "hermes-browser")
SESSION_FOLDERS = ("profile", "downloads", "home")  # the run_as user's, mode 0700
_RUN_AS = "gateway config: relays.browser-use.run_as"


def iso(ts: float | None) -> str | None:
    """``2026-01-31T12:00:00Z`` (UTC), or None."""
    return None if ts is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def browser_identity(config: BrowserUseConfig) -> Identity | None:
    """The user pooled Chromiums are switched to, or None (they run as the gateway's own, unprivileged, user).

    A ConfigError when the gateway runs as root without ``run_as``, when ``run_as`` is no user or root, when
    it names another user while the gateway is not root, or when that user cannot reach ``work_dir``.
    """
    euid = os.geteuid()
    if not config.run_as:
        if euid == 0:
            raise ConfigError(f"{_RUN_AS}: the gateway runs as root; set run_as to a dedicated unprivileged user "
                              "for the local browsers (they never run as root)")
        return None
    try:
        entry = pwd.getpwuid(int(config.run_as)) if config.run_as.isdigit() else pwd.getpwnam(config.run_as)
    except (KeyError, ValueError):
        raise ConfigError(f"{_RUN_AS}: there is no user {config.run_as!r} here") from None
    if entry.pw_uid == 0:
        raise ConfigError(f"{_RUN_AS} must be an unprivileged user, not root")
    if entry.pw_uid == euid:
        return None
    if euid != 0:
        raise ConfigError(f"{_RUN_AS} = {config.run_as!r} needs the gateway to run as root (it switches to that "
                          "user for each browser)")
    identity = Identity(entry.pw_name, entry.pw_uid, entry.pw_gid, True)
    work = (config.work_dir or Path(tempfile.gettempdir())).resolve()
    blocked = reachable_by(work / "hermes-browser-", identity)  # work_dir itself included
    if blocked is not None:
        raise ConfigError(f"gateway config: relays.browser-use.work_dir: user {entry.pw_name} cannot reach {work} "
                          f"({blocked} is closed to it)")
    return identity


def _preexec(identity: Identity | None, home: Path) -> Callable[[], None]:
    """Run in the child before ``exec``: ``umask(077)``, the user switch (groups, gid, uid), ``chdir(home)``."""
    switch = (identity.uid, identity.gid) if identity is not None and identity.switch else None
    folder = str(home)

    def apply() -> None:
        os.umask(0o077)
        if switch is not None:
            os.setgroups([])
            os.setgid(switch[1])
            os.setuid(switch[0])
        os.chdir(folder)

    return apply


def chromium_argv(config: BrowserUseConfig, profile: Path, fence_port: int,
                  identity: Identity | None = None) -> list[str]:
    """The command line of one session's Chromium (all its traffic through the fence on ``fence_port``)."""
    argv = [config.chromium, "--headless"]
    if not config.chromium_sandbox or (identity is None and os.geteuid() == 0):
        argv.append("--no-sandbox")  # Chromium's sandbox refuses to run as root
    argv += ["--disable-gpu", "--disable-quic", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--mute-audio", f"--user-data-dir={profile}", "--remote-debugging-pipe",
             # every connection through the fence; <-loopback>: loopback too (it is bypassed by default)
             f"--proxy-server=socks5://127.0.0.1:{fence_port}", "--proxy-bypass-list=<-loopback>",
             "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "about:blank"]
    return argv


@dataclass(eq=False)
class BrowserSession:
    """One Chromium and what the gateway knows about it."""

    id: str
    owner: str
    jti: str
    secret: str = field(repr=False)
    directory: Path
    process: asyncio.subprocess.Process
    started_at: float
    timeout_at: float
    deadline: float  # time.monotonic() when the lifetime ends
    pipe: CDPPipe | None = None
    cdp_url: str = field(default="", repr=False)
    last_active: float = field(default_factory=time.monotonic)
    connections: int = 0
    ended: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def downloads(self) -> Path:
        return self.directory / "downloads"

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def view(self, status: str = "active", finished_at: float | None = None) -> dict[str, Any]:
        """The session as the Browser Use API describes one."""
        return {"id": self.id, "status": status, "cdpUrl": self.cdp_url if status == "active" else None,
                "liveUrl": None, "startedAt": iso(self.started_at), "timeoutAt": iso(self.timeout_at),
                "finishedAt": iso(finished_at)}


def _stragglers(pgid: int, marker: str) -> list[int]:
    """Live processes of group ``pgid`` whose command line contains ``marker`` (Linux ``/proc``; else none)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z" and \
                        marker.encode() in Path(entry.path, "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


class BrowserPool:
    """The running sessions of one gateway process."""

    def __init__(self, config: BrowserUseConfig) -> None:
        self.config = config
        self.identity = browser_identity(config)
        self.sessions: dict[str, BrowserSession] = {}
        self._starting: dict[str, int] = {}
        self._ended: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
        self._reaper: asyncio.Task[None] | None = None
        self._closed = False
        self.fence = NetworkFence(FetchPolicy(allow_loopback=config.allow_loopback,
                                              allow_private=config.allow_private))

    # -- creating ------------------------------------------------------------------------------------
    def _reserve(self, owner: str) -> None:
        mine = sum(1 for s in self.sessions.values() if s.owner == owner) + self._starting.get(owner, 0)
        if mine >= self.config.max_sessions_per_user:
            raise GatewayHTTPError(
                429, "too_many_sessions",
                f"you already have {mine} browser sessions (at most {self.config.max_sessions_per_user}); "
                "stop one first", headers={"retry-after": "30"}, extra={"retry_after": 30})
        if len(self.sessions) + sum(self._starting.values()) >= self.config.max_sessions:
            raise GatewayHTTPError(503, "browser_pool_full",
                                   "every browser of this gateway is in use; try again shortly",
                                   headers={"retry-after": "30"}, extra={"retry_after": 30})
        self._starting[owner] = self._starting.get(owner, 0) + 1

    def _unreserve(self, owner: str) -> None:
        left = self._starting.get(owner, 0) - 1
        if left > 0:
            self._starting[owner] = left
        else:
            self._starting.pop(owner, None)

    async def create(self, owner: str, jti: str, lifetime: float, deadline: float) -> BrowserSession:
        """Start a Chromium for ``owner`` (503/429 when the pool or the owner's share is full)."""
        if self._closed:
            raise GatewayHTTPError(503, "browser_unavailable", "the gateway is shutting down")
        self._reserve(owner)
        try:
            session = await self._launch(owner, jti, lifetime, deadline)
        finally:
            self._unreserve(owner)
        if self._closed:
            await self._kill(session)
            raise GatewayHTTPError(503, "browser_unavailable", "the gateway is shutting down")
        self.sessions[session.id] = session
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.create_task(self._reap_loop(), name="browser-pool-reaper")
        return session

    async def _launch(self, owner: str, jti: str, lifetime: float, deadline: float) -> BrowserSession:
        try:
            directory = self._session_directory()
        except OSError as exc:
            log.error("browser pool: cannot create a session directory: %s", exc)
            raise GatewayHTTPError(503, "browser_unavailable", "the gateway could not start a browser") from None
        home = directory / "home"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(home),
               "LANG": "C.UTF-8"}  # nothing of the gateway's own environment (vendor keys) reaches the browser
        try:
            argv = chromium_argv(self.config, directory / "profile", await self.fence.start(), self.identity)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            with open(os.open(directory / "chromium.log", flags, 0o600), "wb") as logfile:
                process = await asyncio.create_subprocess_exec(
                    *PIPE_SHIM, *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                    stderr=logfile, env=env, start_new_session=True, preexec_fn=_preexec(self.identity, home),
                    limit=MAX_MESSAGE)
        except OSError as exc:
            shutil.rmtree(directory, ignore_errors=True)
            log.error("browser pool: cannot start %s: %s", self.config.chromium, exc)
            raise GatewayHTTPError(503, "browser_unavailable", "the gateway could not start a browser") from None
        now = time.time()
        assert process.stdout is not None and process.stdin is not None
        session = BrowserSession(id=str(uuid.uuid4()), owner=owner, jti=jti, secret=secrets.token_urlsafe(32),
                                 directory=directory, process=process, started_at=now, timeout_at=now + lifetime,
                                 deadline=time.monotonic() + lifetime, pipe=CDPPipe(process.stdout, process.stdin))
        try:
            await self._wait_ready(session, min(deadline, time.monotonic() + self.config.start_timeout))
        except BaseException:
            await self._kill(session)
            raise
        return session

    def _session_directory(self) -> Path:
        """A fresh session directory; with a user switch, its folders handed to that user inside a 0711 one."""
        work, identity = self.config.work_dir, self.identity
        if work is not None and not work.is_dir():
            work.mkdir(parents=True, exist_ok=True)
            if identity is not None:
                work.chmod(0o711)
        directory = Path(tempfile.mkdtemp(prefix="hermes-browser-", dir=work))  # 0700, nobody else can enter yet
        try:
            for name in SESSION_FOLDERS:
                folder = directory / name
                folder.mkdir(mode=0o700)
                folder.chmod(0o700)
                if identity is not None:
                    os.chown(folder, identity.uid, identity.gid)
            if identity is not None:
                directory.chmod(0o711)
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return directory

    async def _wait_ready(self, session: BrowserSession, until: float) -> None:
        """Chromium answers ``Browser.getVersion`` on its pipe before ``until``."""
        assert session.pipe is not None
        try:
            await session.pipe.call("Browser.getVersion", timeout=max(0.1, until - time.monotonic()))
        except PipeClosed:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(session.process.wait(), 2)
            self._start_failed(session, f"Chromium exited with status {session.process.returncode}")
        except (TimeoutError, PipeError) as exc:
            self._start_failed(session, f"Chromium did not answer on its DevTools pipe ({type(exc).__name__})")

    def _start_failed(self, session: BrowserSession, why: str) -> NoReturn:
        tail = ""
        with contextlib.suppress(OSError):
            tail = (session.directory / "chromium.log").read_bytes()[-600:].decode("utf-8", "replace")
        log.error("browser pool: %s; log tail: %s", why, tail.strip())
        raise GatewayHTTPError(503, "browser_unavailable", "the gateway's browser failed to start; try again")

    # -- finding and ending --------------------------------------------------------------------------
    def get(self, session_id: str, owner: str) -> dict[str, Any] | None:
        """The session's view if ``owner`` has (or had) it; None otherwise."""
        session = self.sessions.get(session_id)
        if session is not None and session.owner == owner:
            return session.view()
        ended = self._ended.get(session_id)
        return ended[1] if ended is not None and ended[0] == owner else None

    def knows(self, session_id: str) -> bool:
        """Whether this process holds (or held) a session of that id, whoever owns it."""
        return session_id in self.sessions or session_id in self._ended

    def connectable(self, session_id: str, secret: str) -> BrowserSession | None:
        """The running session whose capability secret is ``secret`` (compared in constant time)."""
        session = self.sessions.get(session_id)
        if session is None or not hmac.compare_digest(session.secret.encode(), secret.encode()):
            return None
        return session

    async def release(self, session_id: str, owner: str) -> dict[str, Any] | None:
        """Stop ``owner``'s session; its final view, or None if ``owner`` has no such session."""
        session = self.sessions.get(session_id)
        if session is not None and session.owner == owner:
            await self._end(session, "released")
        return self.get(session_id, owner)

    async def _end(self, session: BrowserSession, reason: str) -> None:
        if self.sessions.pop(session.id, None) is None:
            return
        session.ended.set()  # the proxies close their clients' sockets
        self._ended[session.id] = (session.owner, session.view("stopped", time.time()))
        while len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)
        await self._kill(session)
        log.info("browser session %s ended (%s)", session.id, reason)

    async def _kill(self, session: BrowserSession) -> None:
        """SIGKILL the whole process group (browser, zygote, renderers), reap it, remove the directory."""
        process = session.process
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # the group leader is not reaped yet: its id is ours
        else:  # the browser died by itself; its id may be reused, so only processes naming our directory go
            for pid in await asyncio.to_thread(_stragglers, process.pid, str(session.directory)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        if session.pipe is not None:  # first: wait() also waits for the pipes to close
            await session.pipe.aclose()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), 10)
        await asyncio.to_thread(shutil.rmtree, session.directory, True)

    async def _reap_loop(self) -> None:
        interval = max(0.1, min(1.0, self.config.idle_timeout / 4))
        while self.sessions:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.process.returncode is not None:
                    reason = "Chromium exited"
                elif now >= session.deadline:
                    reason = "lifetime over"
                elif now - session.last_active >= self.config.idle_timeout:
                    reason = "idle"
                else:
                    continue
                try:
                    await self._end(session, reason)
                except Exception:  # one failing cleanup must not stop the reaper
                    log.exception("browser pool: ending session %s failed", session.id)

    async def aclose(self) -> None:
        """End every session (the gateway is stopping)."""
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        await asyncio.gather(*(self._end(s, "gateway stopping") for s in list(self.sessions.values())),
                             return_exceptions=True)
        await self.fence.aclose()


__all__ = ["BrowserPool", "BrowserSession", "browser_identity", "chromium_argv"]
