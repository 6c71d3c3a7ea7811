"""The browser-use relay's parts that need no browser: its config table, Chromium's command line, the CDP
screen (which commands may reach a pooled Chromium), the network fence (a real SOCKS5 proxy on
loopback, asked by a real client) and the DevTools pipe (against a small fake browser process speaking
NUL-delimited JSON on its stdio). The relay itself, with real Chromium processes, is tested in
``test_browser_use.py`` and ``test_browser_safety.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import struct
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import ConfigError
from hermes.net.address_policy import FetchPolicy
from hermes.net.fence import NetworkFence
from hermes.toolgateway.browser.cdppipe import MAX_MESSAGE, CDPPipe, PipeClosed
from hermes.toolgateway.browser.cdpproxy import screen, url_allowed
from hermes.toolgateway.browser.pool import BrowserPool, chromium_argv
from hermes.toolgateway.config import load_config
from hermes.toolgateway.sandbox.proc import Identity

CHROMIUM = "/usr/bin/chromium"


def test_fence_decides_every_connection() -> None:
    async def scenario() -> dict[str, Any]:
        async def site(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"hello " + await reader.readexactly(4))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(site, "127.0.0.1", 0)
        site_port = server.sockets[0].getsockname()[1]
        results: dict[str, Any] = {}

        async def ask(fence: NetworkFence, request: bytes, greeting: bytes = b"\x05\x01\x00") -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", fence.port)
            writer.write(greeting)
            answer = await reader.read(2)
            if answer != b"\x05\x00":
                writer.close()
                return answer
            writer.write(request)
            reply = await reader.readexactly(10)
            if reply[1] == 0:
                writer.write(b"ping")
                reply += await reader.read(100)
            writer.close()
            return reply

        def ipv4(port: int) -> bytes:
            return b"\x05\x01\x00\x01" + bytes([127, 0, 0, 1]) + struct.pack("!H", port)

        strict = NetworkFence(FetchPolicy(), lambda: set())
        loose = NetworkFence(FetchPolicy(allow_loopback=True), lambda: {site_port + 1})
        await strict.start()
        await loose.start()
        try:
            name = b"localhost"
            results["strict_ip"] = await ask(strict, ipv4(site_port))
            results["strict_name"] = await ask(strict, b"\x05\x01\x00\x03" + bytes([len(name)]) + name
                                               + struct.pack("!H", site_port))
            results["metadata"] = await ask(loose, b"\x05\x01\x00\x01" + bytes([169, 254, 169, 254])
                                            + struct.pack("!H", 80))
            results["loose"] = await ask(loose, ipv4(site_port))
            results["devtools"] = await ask(loose, ipv4(site_port + 1))
            results["itself"] = await ask(loose, ipv4(loose.port))
            results["no_auth_offered"] = await ask(loose, b"", greeting=b"\x05\x01\x02")
            results["bind"] = await ask(loose, b"\x05\x02\x00\x01" + bytes([127, 0, 0, 1]) + b"\x00\x50")
        finally:
            await strict.aclose()
            await loose.aclose()
            server.close()
            await server.wait_closed()
        return results

    results = asyncio.run(scenario())
    for key in ("strict_ip", "strict_name", "metadata", "devtools", "itself"):
        assert results[key][:2] == b"\x05\x02", key  # 2: connection not allowed by ruleset
    assert results["loose"][:2] == b"\x05\x00" and results["loose"][10:] == b"hello ping"
    assert results["no_auth_offered"] == b"\x05\xff" and results["bind"][:2] == b"\x05\x07"


def test_config_and_command_line(tmp_path: Path) -> None:
    off = load_config(None, env={}, home=tmp_path)
    assert off.browser_use.backend == "off"
    vendor = load_config(None, env={"BROWSER_USE_API_KEY": "bu-env"}, home=tmp_path)
    assert vendor.browser_use.backend == "vendor" and vendor.browser_use.api_key == "bu-env"
    assert vendor.browser_use.url == "https://api.browser-use.com/api/v3" and "bu-env" not in repr(vendor)
    for key, value in (("backend", "cloud"), ("max_sessions", 0), ("idle_timeout", "soon"), ("url", "ftp://x"),
                       ("allow_loopback", "yes")):
        with pytest.raises(ConfigError, match=f"relays.browser-use.{key}"):
            load_config(None, overrides={f"browser-use.{key}": value}, env={}, home=tmp_path)
    local = load_config(None, overrides={"browser-use.backend": "local"}, env={}, home=tmp_path).browser_use
    assert not local.allow_loopback and not local.allow_private
    argv = chromium_argv(local, tmp_path / "profile", 4321)
    assert argv[0] == CHROMIUM and "--headless" in argv and "--remote-debugging-pipe" in argv
    assert not any(arg.startswith("--remote-debugging-port") for arg in argv)  # no DevTools port, ever
    assert f"--user-data-dir={tmp_path / 'profile'}" in argv and "--proxy-server=socks5://127.0.0.1:4321" in argv
    assert "--proxy-bypass-list=<-loopback>" in argv and "--disable-quic" in argv
    assert ("--no-sandbox" in argv) == (os.geteuid() == 0)  # only ever as root, which the pool never runs as
    nobody = Identity("nobody", 65534, 65534, True)  # (not a real user needed: only the command line is built)
    assert "--no-sandbox" not in chromium_argv(local, tmp_path, 4321, nobody)
    assert "--no-sandbox" in chromium_argv(replace(local, chromium_sandbox=False), tmp_path, 4321, nobody)


def test_run_as(tmp_path: Path) -> None:
    local = load_config(None, overrides={"browser-use.backend": "local"}, env={}, home=tmp_path).browser_use
    assert local.run_as is None and local.chromium_sandbox
    named = load_config(None, overrides={"browser-use.backend": "local", "browser-use.run_as": "nobody",
                                         "browser-use.chromium_sandbox": False}, env={}, home=tmp_path).browser_use
    assert named.run_as == "nobody" and not named.chromium_sandbox
    with pytest.raises(ConfigError, match=r"relays\.browser-use\.run_as"):
        load_config(None, overrides={"browser-use.run_as": ""}, env={}, home=tmp_path)
    for run_as in ("no-such-user-here", "root", "0"):
        with pytest.raises(ConfigError, match=r"relays\.browser-use\.run_as"):
            BrowserPool(replace(local, run_as=run_as))
    if os.geteuid() != 0:  # without root there is no switching: run_as may only name the gateway's own user
        assert BrowserPool(replace(local, run_as=str(os.getuid()))).identity is None
        with pytest.raises(ConfigError, match=r"run_as = 'nobody' needs the gateway to run as root"):
            BrowserPool(named)
        return
    with pytest.raises(ConfigError, match=r"relays\.browser-use\.run_as: the gateway runs as root"):
        BrowserPool(local)  # Chromium would run as root
    identity = BrowserPool(named).identity
    assert identity is not None and identity.switch and identity.uid == pwd.getpwnam("nobody").pw_uid
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    with pytest.raises(ConfigError, match=r"relays\.browser-use\.work_dir: user nobody cannot reach"):
        BrowserPool(replace(named, work_dir=closed / "browsers"))


def test_cdp_screen() -> None:
    for url in ("https://example.com", "about:blank", "", "data:text/html,hi", "HTTP://X"):
        assert url_allowed(url), url
    for url in ("file:///etc/passwd", " file:///x", "fi\tle:///x", "\x00file:/x", "chrome://settings",
                "view-source:http://x", "javascript:alert(1)", "example.com"):
        assert not url_allowed(url), url
    forward, reply = screen('{"id":3,"method":"Page.navigate","params":{"url":"https://e.com"},"sessionId":"S"}', "/d")
    assert reply is None and forward is not None and json.loads(forward)["params"]["url"] == "https://e.com"
    forward, reply = screen('{"id":4,"method":"Page.navigate","params":{"url":"file:///etc"},"sessionId":"S"}', "/d")
    assert forward is None and reply is not None
    assert json.loads(reply)["id"] == 4 and json.loads(reply)["sessionId"] == "S" and "error" in json.loads(reply)
    # the command forwarded is the one the screen read: a duplicate key cannot hide a method
    forward, reply = screen('{"id":5,"method":"Runtime.evaluate","method":"DOM.setFileInputFiles","params":{}}', "/d")
    assert forward is None and reply is not None
    forward, _ = screen('{"id":6,"method":"Browser.setDownloadBehavior","params":{"behavior":"allow",'
                        '"downloadPath":"/etc"}}', "/sessions/x/downloads")
    assert forward is not None and json.loads(forward)["params"]["downloadPath"] == "/sessions/x/downloads"
    for text in ("not json", "[1]", '{"id":1}', '{"id":1,"method":"X.y","params":[]}',
                 '{"id":1,"method":"Tethering.bind","params":{"port":22}}',
                 '{"id":1,"method":"Input.dispatchDragEvent","params":{"data":{"files":["/etc/passwd"]}}}',
                 '{"id":1,"method":"Target.createBrowserContext","params":{"proxyServer":"direct://"}}'):
        assert screen(text, "/d")[0] is None, text


FAKE_BROWSER = r"""
import json, sys
buf, out, sessions = b"", sys.stdout.buffer, 0
while chunk := sys.stdin.buffer.read1(65536):
    buf += chunk
    while b"\0" in buf:
        raw, _, buf = buf.partition(b"\0")
        msg = json.loads(raw)
        ident, sid, method = msg["id"], msg.get("sessionId"), msg["method"]
        if method == "Target.attachToBrowserTarget":
            sessions += 1
            reply = {"id": ident, "result": {"sessionId": f"B{sessions}"}}
        elif method == "Big.reply":  # over the gateway's limit: the sender gets an error instead
            out.write(b'{"id":%d,"result":{"blob":"' % ident + b"x" * int(msg["params"]["size"]) + b'"}}\0')
            continue
        elif method == "Big.event":  # an event over the limit, then one for the same session and the reply
            out.write(b'{"method":"Big.event","params":{"blob":"' + b"y" * int(msg["params"]["size"])
                      + b'"},"sessionId":"' + sid.encode() + b'"}\0')
            out.write(json.dumps({"method": "Small.event", "params": {}, "sessionId": sid}).encode() + b"\0")
            reply = {"id": ident, "result": {}, "sessionId": sid}
        else:
            reply = {"id": ident, "result": {"echo": method}, "sessionId": sid}
        out.write(json.dumps(reply).encode() + b"\0")
        out.flush()
"""


def test_pipe_routes_replies_and_survives_oversized_messages() -> None:
    async def scenario() -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-c", FAKE_BROWSER, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, limit=MAX_MESSAGE)
        assert proc.stdin is not None and proc.stdout is not None
        pipe = CDPPipe(proc.stdout, proc.stdin)
        got: dict[str, Any] = {}
        try:
            a, b = await pipe.connect(), await pipe.connect()
            assert (a.session_id, b.session_id) == ("B1", "B2")

            async def ask(client: Any, message: dict[str, Any]) -> Any:
                assert await client.send(message) is None
                return json.loads(await asyncio.wait_for(client.receive(), 20))

            got["a"] = await ask(a, {"id": 1, "method": "Echo.a"})
            got["b"] = await ask(b, {"id": 1, "method": "Echo.b"})  # the same id on another client
            got["big"] = await ask(a, {"id": 2, "method": "Big.reply", "params": {"size": MAX_MESSAGE + 10}})
            got["after"] = await ask(a, {"id": 3, "method": "Echo.after"})
            got["event"] = await ask(b, {"id": 2, "method": "Big.event", "params": {"size": MAX_MESSAGE * 3}})
            got["reply"] = json.loads(await asyncio.wait_for(b.receive(), 20))
            got["foreign"] = json.loads(await a.send({"id": 4, "method": "X.y", "sessionId": "B2"}) or "{}")
            proc.kill()
            await proc.wait()
            got["eof"] = await asyncio.wait_for(a.receive(), 10)
            try:
                await a.send({"id": 5, "method": "Echo.late"})
            except PipeClosed:
                got["closed"] = True
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            await pipe.aclose()
        return got

    got = asyncio.run(scenario())
    assert got["a"] == {"id": 1, "result": {"echo": "Echo.a"}}  # its browser session is not shown
    assert got["b"] == {"id": 1, "result": {"echo": "Echo.b"}}
    assert got["big"]["id"] == 2 and got["big"]["error"]["code"] == -32000 and "limit" in got["big"]["error"]["message"]
    assert got["after"] == {"id": 3, "result": {"echo": "Echo.after"}}  # the stream found its footing again
    assert got["event"] == {"method": "Small.event", "params": {}} and got["reply"] == {"id": 2, "result": {}}
    assert got["foreign"]["error"]["code"] == -32001 and got["foreign"]["sessionId"] == "B2"
    assert got["eof"] is None and got["closed"]
