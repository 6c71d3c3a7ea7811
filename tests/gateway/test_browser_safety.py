"""The local browser pool's isolation, with real Chromium processes behind a real gateway (uvicorn).

* A pooled Chromium opens **no TCP listener** (it is driven over ``--remote-debugging-pipe``): no process
  of its group owns a listening TCP socket, so another local user cannot find a DevTools port and drive
  it (the verified attack: /proc/net/tcp, then /json/version, then ``file:///etc/shadow``). Its only
  listening Unix socket (the profile's singleton socket) lies in the session's 0700 directory.
* Several clients share one session's pipe without seeing each other: each has its own command ids,
  events and sessions, and a session attached by one client is unknown to another.
* Chromium never runs as root: under a root gateway every process of a session runs as ``run_as``
  (``nobody`` here), with Chromium's own sandbox on, in folders that user owns (0700) inside a session
  directory the gateway keeps (0711); the gateway still kills the group and removes the directory.
* The per-session connection limit holds under concurrent connects (the slot is taken before the
  gateway waits for the browser) and a connect that fails gives its slot back.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from fakes.cdp import cdp_call as call
from fakes.cdp import live_group, wait_until
from fakes.vendors.harness import GatewayHarness

CHROMIUM = "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK) and not os.environ.get("CI"),
                                reason="needs /usr/bin/chromium (CI installs it)")
LIMIT = 8  # connections per session (relays/browser_use.py MAX_CONNECTIONS)
AS_ROOT = os.geteuid() == 0
RUN_AS = {"browser-use.run_as": "nobody"} if AS_ROOT else {}  # as root, Chromium runs as nobody


def listening_inodes() -> dict[int, int]:
    """Socket inode → port of every TCP socket in LISTEN state on this host (IPv4 and IPv6)."""
    found: dict[int, int] = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # TCP_LISTEN
                found[int(fields[9])] = int(fields[1].rsplit(":", 1)[1], 16)
    return found


def listening_unix() -> dict[int, str]:
    """Socket inode → path of every listening Unix socket with a name (``@…``: the abstract namespace)."""
    found: dict[int, str] = {}
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) > 7 and int(fields[3], 16) & 0x10000:  # __SO_ACCEPTCON: listening
            found[int(fields[6])] = fields[7]
    return found


def socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    try:
        entries = list(os.scandir(f"/proc/{pid}/fd"))
    except OSError:
        return inodes
    for entry in entries:
        try:
            target = os.readlink(entry.path)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def create(gw: GatewayHarness, token: str) -> dict[str, Any]:
    resp = httpx.post(f"{gw.relay_url('browser-use')}/browsers", json={"timeout": 5},
                      headers={"X-Browser-Use-API-Key": token}, timeout=30)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def stop(gw: GatewayHarness, token: str, session_id: str) -> None:
    resp = httpx.patch(f"{gw.relay_url('browser-use')}/browsers/{session_id}", json={"action": "stop"},
                       headers={"X-Browser-Use-API-Key": token}, timeout=30)
    assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_browser_safety"), **{
        "browser-use.backend": "local", "browser-use.chromium": CHROMIUM, "browser-use.max_sessions": 2,
        "browser-use.max_sessions_per_user": 1, "browser-use.idle_timeout": 120, **RUN_AS})
    with harness:
        harness.user("alice", "paid")
        harness.user("bob", "paid")
        yield harness


def test_pooled_chromium_opens_no_tcp_listener(gw: GatewayHarness) -> None:
    session = create(gw, gw.token("alice"))
    try:
        no_listener(gw, session)
    finally:
        stop(gw, gw.token("alice"), session["id"])


def no_listener(gw: GatewayHarness, session: dict[str, Any]) -> None:
    pooled = gw.app.state.relays["browser-use"].pool.sessions[session["id"]]

    assert "HeadlessChrome" in asyncio.run(user_agent(session["cdpUrl"]))
    processes = live_group(pooled.pid)
    assert len(processes) > 1, "expected the browser and its helpers"
    listening = listening_inodes()
    # the check sees listeners at all: this test process's own gateway (uvicorn) listens
    assert any(listening.get(inode) == gw.server.port for inode in socket_inodes(os.getpid()))
    unix = listening_unix()
    for pid in processes:
        owned = {listening[inode] for inode in socket_inodes(pid) if inode in listening}
        assert not owned, f"pooled Chromium process {pid} listens on TCP ports {owned}"
        # Unix listeners only inside the session's own directory (mode 0700): no abstract ones, none in /tmp
        for path in (unix[inode] for inode in socket_inodes(pid) if inode in unix):
            assert path.startswith(f"{pooled.directory}/"), f"pooled Chromium process {pid} listens on {path}"
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert b"--remote-debugging-port" not in cmdline
    assert b"--remote-debugging-pipe" in Path(f"/proc/{pooled.pid}/cmdline").read_bytes()
    assert not (pooled.directory / "profile" / "DevToolsActivePort").exists()
    assert pooled.directory.stat().st_mode & 0o777 == (0o711 if AS_ROOT else 0o700)


def status_field(pid: int, name: str) -> list[str]:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split()[1:]
    raise AssertionError(f"no {name} in /proc/{pid}/status")


def test_pooled_chromium_runs_as_the_run_as_user(gw: GatewayHarness) -> None:
    uid = pwd.getpwnam("nobody").pw_uid if AS_ROOT else os.getuid()
    session = create(gw, gw.token("alice"))
    try:
        pooled = gw.app.state.relays["browser-use"].pool.sessions[session["id"]]
        assert "HeadlessChrome" in asyncio.run(user_agent(session["cdpUrl"]))  # a renderer runs too
        processes = live_group(pooled.pid)
        assert len(processes) > 1
        for pid in processes:  # real, effective, saved and filesystem uid: all run_as's
            assert status_field(pid, "Uid") == [str(uid)] * 4, pid
            assert not AS_ROOT or status_field(pid, "Groups") == [], pid  # no supplementary groups (root's)
            assert b"--no-sandbox" not in Path(f"/proc/{pid}/cmdline").read_bytes()
        assert any(status_field(pid, "Seccomp") == ["2"] for pid in processes), "no sandboxed renderer"
        for name in ("profile", "downloads", "home"):
            info = (pooled.directory / name).stat()
            assert (info.st_uid, info.st_mode & 0o777) == (uid, 0o700), name
        log = (pooled.directory / "chromium.log").stat()
        assert (log.st_uid, log.st_mode & 0o777) == (os.getuid(), 0o600)
        directory = pooled.directory
    finally:
        stop(gw, gw.token("alice"), session["id"])
    assert wait_until(lambda: not live_group(pooled.pid)) and not directory.exists()  # killed and removed as root


async def user_agent(url: str) -> str:
    """``navigator.userAgent`` of a new tab: a page running, so renderers and the network service exist too."""
    async with connect(url, proxy=None, compression=None) as ws:
        tab = await call(ws, 1, "Target.createTarget", {"url": "data:text/html,<title>t</title>"})
        attached = await call(ws, 2, "Target.attachToTarget", {"targetId": tab["result"]["targetId"],
                                                              "flatten": True})
        reply = await call(ws, 3, "Runtime.evaluate", {"expression": "navigator.userAgent", "returnByValue": True},
                           attached["result"]["sessionId"])
        return str(reply["result"]["result"]["value"])


def test_clients_share_a_pipe_without_seeing_each_other(gw: GatewayHarness) -> None:
    session = create(gw, gw.token("bob"))

    async def scenario() -> None:
        async with connect(session["cdpUrl"], proxy=None, compression=None) as a, \
                connect(session["cdpUrl"], proxy=None, compression=None) as b:
            a_seen: list[dict[str, Any]] = []
            b_seen: list[dict[str, Any]] = []
            assert "result" in await call(a, 1, "Target.setDiscoverTargets", {"discover": True}, seen=a_seen)
            tab = await call(b, 1, "Target.createTarget", {"url": "about:blank"}, seen=b_seen)  # the same id: fine
            target = tab["result"]["targetId"]
            attached = await call(b, 2, "Target.attachToTarget", {"targetId": target, "flatten": True}, seen=b_seen)
            page = attached["result"]["sessionId"]
            assert "sessionId" not in tab and attached.get("sessionId") is None  # b's browser session is hidden
            two = await call(b, 3, "Runtime.evaluate", {"expression": "1+1"}, page, seen=b_seen)
            assert two["sessionId"] == page and two["result"]["result"]["value"] == 2
            # a cannot use b's page session; the answer is Chromium's own for an unknown session
            stolen = await call(a, 2, "Runtime.evaluate", {"expression": "1+1"}, page, seen=a_seen)
            assert stolen["error"]["code"] == -32001 and stolen["sessionId"] == page
            bad = await call(a, "x", "Browser.getVersion", seen=a_seen)
            assert bad["error"]["code"] == -32600
            await call(a, 3, "Browser.getVersion", seen=a_seen)  # after b's events, if any, were sent
            created = [m for m in a_seen if m.get("method") == "Target.targetCreated"]
            assert any(m["params"]["targetInfo"]["targetId"] == target for m in created)  # a discovers
            assert all("sessionId" not in m for m in a_seen)
            # b asked for no discovery and gets none; its events are its own attach only
            assert {m.get("method") for m in b_seen} <= {"Target.attachedToTarget"}, b_seen
        async with connect(session["cdpUrl"], proxy=None, compression=None) as c:
            gone = await call(c, 1, "Runtime.evaluate", {"expression": "1"}, page)  # b left: its sessions too
            assert gone["error"]["code"] == -32001

    try:
        asyncio.run(scenario())
    finally:
        stop(gw, gw.token("bob"), session["id"])


def test_concurrent_connects_respect_the_connection_limit(gw: GatewayHarness) -> None:
    session = create(gw, gw.token("alice"))
    try:
        connection_limit(session, gw.app.state.relays["browser-use"].pool.sessions[session["id"]])
    finally:
        stop(gw, gw.token("alice"), session["id"])


def connection_limit(session: dict[str, Any], pooled: Any) -> None:
    async def attempt(opened: list[ClientConnection]) -> int:
        try:
            ws = await connect(session["cdpUrl"], proxy=None, compression=None, open_timeout=40)
        except InvalidStatus as exc:
            return exc.response.status_code
        opened.append(ws)
        return 101

    async def burst() -> list[int]:
        opened: list[ClientConnection] = []
        try:
            return list(await asyncio.gather(*(attempt(opened) for _ in range(40))))
        finally:
            await asyncio.gather(*(ws.close() for ws in opened))

    # the browser is stopped: every accepted connect waits for it, so each one's slot is held meanwhile
    os.kill(pooled.pid, signal.SIGSTOP)
    try:
        stalled = asyncio.run(burst())
    finally:
        os.kill(pooled.pid, signal.SIGCONT)
    assert sorted(stalled) == [429] * (40 - LIMIT) + [502] * LIMIT, stalled
    assert wait_until(lambda: pooled.connections == 0)  # the failed connects gave their slots back
    statuses = asyncio.run(burst())  # a browser that answers: at most LIMIT at once, as many as that
    assert statuses.count(101) == LIMIT and statuses.count(429) == 40 - LIMIT, statuses

    async def after() -> dict[str, Any]:
        async with connect(session["cdpUrl"], proxy=None, compression=None) as ws:
            return await call(ws, 1, "Browser.getVersion")

    assert wait_until(lambda: pooled.connections == 0)  # the gateway noticed the clients leave
    assert "result" in asyncio.run(after())  # every slot is free again
