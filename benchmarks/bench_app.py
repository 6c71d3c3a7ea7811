"""App server streaming latency: the model's first token → the first ``text_delta`` a WebSocket client reads.

The model is an in-process provider that streams its answer through ``on_text``, stamping the moment it
hands over the first piece; the client (websockets, same process, 127.0.0.1) stamps when the first
``text_delta`` notification arrives. The reference is the same turn on the same session host without
the app server: the first ``TextDelta`` reaching a host listener directly. Figures: p50 / p95 of both,
and the app server's extra (the JSON-RPC notification over the WebSocket).

Then load: 50 sessions, 10 clients following each (one creates it, nine resume it), five turns per
session sent at once: every client checks it got every delta of every turn of its session, in order,
nothing twice and nothing of another session.

Last, ``hermes desktop`` to an interactive page: from starting ``hermes desktop --no-open`` to its page
in headless Chromium having connected, said hello and listed the sessions (``data-ready``). The
reference, in the same run and the same browser: ``python -m http.server`` started and a one-line page
loaded from it. Needs Playwright and ``chromium``; ``--no-desktop`` skips it.

Run: ``.venv/bin/python benchmarks/bench_app.py`` (figures in docs/performance.md).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hermes.agent.events import Event, Request, TextDelta, TurnFinished  # noqa: E402
from hermes.agent.provider import CallOptions, Completion  # noqa: E402

TURNS = 200
SESSIONS, CLIENTS, LOAD_TURNS, PIECES = 50, 10, 5, 10


class StreamingModel:
    """Streams ``re: <text>`` in three pieces; ``first_token`` holds when the first piece was handed over."""

    name = "streaming"
    model = "streaming"

    def __init__(self) -> None:
        self.first_token = 0.0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        pieces = ["re", ": ", str(text)]
        self.first_token = time.perf_counter()
        for piece in pieces:
            if options.on_text is not None:
                options.on_text(piece)
        return Completion(content="".join(pieces), finish_reason="stop")


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def direct(settings: Any, model: StreamingModel) -> list[float]:
    """First token → first TextDelta at a listener of the session host itself (the reference)."""
    from hermes.surfaces.host import LiveSession, SessionHost
    from hermes.tools.toolsets import Surface

    got = threading.Event()
    first: list[float] = []
    finished = threading.Event()

    class Listener:
        def on_event(self, session: LiveSession, event: Event) -> None:
            if isinstance(event, TextDelta) and not got.is_set():
                first.append(time.perf_counter() - model.first_token)
                got.set()
            elif isinstance(event, TurnFinished):
                finished.set()

        def on_request(self, session: LiveSession, request: Request) -> Any | None:
            return None

    host = SessionHost(settings, surface=Surface.DESKTOP, provider=model)
    listener = Listener()
    try:
        for i in range(TURNS):
            got.clear()
            finished.clear()
            host.submit("bench", f"hello {i}", listener, toolsets=["clarify"])
            finished.wait(10)
    finally:
        host.close()
    return first


def over_websocket(settings: Any, model: StreamingModel) -> list[float]:
    from websockets.sync.client import connect

    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import RPC_PATH, AppServer

    server = AppServer(AppApi(settings, provider=model), Gate("127.0.0.1", None), "127.0.0.1", 0)
    server.start()
    first: list[float] = []
    try:
        with connect(f"ws://127.0.0.1:{server.port}{RPC_PATH}") as ws:
            ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "sessions.create",
                                "params": {"toolsets": ["clarify"]}}))
            session = json.loads(ws.recv(10))["result"]["session"]
            for i in range(TURNS):
                ws.send(json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "message.send",
                                    "params": {"session": session, "text": f"hello {i}"}}))
                seen_delta = False
                while True:
                    message = json.loads(ws.recv(10))
                    kind = message.get("params", {}).get("type")
                    if kind == "text_delta" and not seen_delta:
                        first.append(time.perf_counter() - model.first_token)
                        seen_delta = True
                    elif kind == "turn_finished":
                        break
    finally:
        server.stop()
    return first


class PiecesModel:
    """Streams ``<text>#0`` … ``<text>#9`` so a client can check order and completeness."""

    name = model = "pieces"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        pieces = [f"{text}#{i};" for i in range(PIECES)]
        for piece in pieces:
            if options.on_text is not None:
                options.on_text(piece)
        return Completion(content="".join(pieces), finish_reason="stop")


def load(settings: Any) -> tuple[float, int, int]:
    """(seconds, deliveries checked, problems) for SESSIONS x CLIENTS clients, LOAD_TURNS turns each."""
    import asyncio

    from websockets.asyncio.client import connect

    from hermes.surfaces.appserver.auth import Gate
    from hermes.surfaces.appserver.rpc import AppApi
    from hermes.surfaces.appserver.server import RPC_PATH, AppServer

    server = AppServer(AppApi(settings, provider=PiecesModel(), max_concurrent_turns=16),
                       Gate("127.0.0.1", None), "127.0.0.1", 0)
    server.start()
    url = f"ws://127.0.0.1:{server.port}{RPC_PATH}"
    expected = "".join(f"t{t}#{i};" for t in range(LOAD_TURNS) for i in range(PIECES))

    async def rpc(ws: Any, method: str, params: dict[str, Any]) -> Any:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        while True:
            message = json.loads(await ws.recv())
            if message.get("id") == 1:
                return message["result"]

    async def collect(ws: Any, session: str, turns: int) -> tuple[str, int]:
        text, finished, foreign = "", 0, 0
        while finished < turns:
            params = json.loads(await ws.recv()).get("params", {})
            if params.get("session") not in (None, session):
                foreign += 1
            elif params.get("type") == "text_delta":
                text += params["text"]
            elif params.get("type") == "turn_finished":
                finished += 1
        return text, foreign

    async def one_session() -> tuple[int, int]:
        first = await connect(url, max_queue=None)
        session = (await rpc(first, "sessions.create", {}))["session"]
        await rpc(first, "message.send", {"session": session, "text": "warm"})
        _, foreign = await collect(first, session, 1)
        opened = (await rpc(first, "sessions.list", {}))["open"]
        sid = next(o["session_id"] for o in opened if o["session"] == session)
        others = [await connect(url, max_queue=None) for _ in range(CLIENTS - 1)]
        for ws in others:
            await rpc(ws, "sessions.resume", {"session_id": sid})
        clients = [first, *others]
        for t in range(LOAD_TURNS):
            await first.send(json.dumps({"jsonrpc": "2.0", "id": 2 + t, "method": "message.send",
                                         "params": {"session": session, "text": f"t{t}"}}))
        results = await asyncio.gather(*(collect(ws, session, LOAD_TURNS) for ws in clients))
        problems = foreign + sum(f for _, f in results) + sum(1 for text, _ in results if text != expected)
        for ws in clients:
            await ws.close()
        return len(clients), problems

    async def everything() -> list[tuple[int, int]]:
        return await asyncio.gather(*(one_session() for _ in range(SESSIONS)))

    try:
        start = time.perf_counter()
        outcome = asyncio.run(everything())
        seconds = time.perf_counter() - start
    finally:
        server.stop()
    return seconds, sum(n for n, _ in outcome) * LOAD_TURNS * PIECES, sum(p for _, p in outcome)


DESKTOP_RUNS = 5


def _first_line(command: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[Any, str]:
    import subprocess

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    assert proc.stdout is not None
    return proc, proc.stdout.readline()


def _stop(proc: Any) -> None:
    proc.terminate()
    proc.wait(20)
    proc.stdout.close()


def desktop_to_interactive(home: Path) -> tuple[list[float], list[float]]:
    """Seconds from starting ``hermes desktop --no-open`` to an interactive page, and the reference's."""
    import shutil

    from playwright.sync_api import sync_playwright

    env = {**os.environ, "HERMES_HOME": str(home), "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
    static = home / "static"
    static.mkdir(exist_ok=True)
    (static / "index.html").write_text("<!doctype html><title>ref</title><p id=ok>ok</p>")
    desktop, reference = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page()
        for _ in range(DESKTOP_RUNS):
            start = time.perf_counter()
            proc, line = _first_line([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"], env,
                                     cwd=str(static))
            port = line.split(" port ")[1].split()[0]
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#ok")
            reference.append(time.perf_counter() - start)
            _stop(proc)
            start = time.perf_counter()
            proc, line = _first_line([sys.executable, "-m", "hermes", "desktop", "--no-open"], env)
            token = (Path(env["HERMES_HOME"]) / "serve_token").read_text().strip()  # the page wants it
            page.goto(line.split(" on ", 1)[1].strip() + "#token=" + token)
            page.wait_for_function("document.documentElement.dataset.ready === 'true'")
            desktop.append(time.perf_counter() - start)
            _stop(proc)
        browser.close()
    return desktop, reference


def main() -> None:
    from hermes.config.settings import Overrides, Settings

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["HERMES_HOME"] = str(home)
        (home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: streaming\n")
        settings = Settings.load(overrides=Overrides())
        model = StreamingModel()
        reference = direct(settings, model)
        served = over_websocket(settings, model)
        seconds, deliveries, problems = load(settings)
        started = None if "--no-desktop" in sys.argv else desktop_to_interactive(home)
    ms = 1000.0
    print(f"first token → first delta, {TURNS} turns each")
    for label, values in (("session host listener (reference)", reference), ("app server WebSocket client", served)):
        print(f"  {label:<34} p50 {pct(values, 50) * ms:.3f} ms  p95 {pct(values, 95) * ms:.3f} ms")
    print(f"  extra of the app server (p50): {(pct(served, 50) - pct(reference, 50)) * ms:.3f} ms; "
          f"ratio {pct(served, 50) / max(pct(reference, 50), 1e-9):.1f}x")
    print(f"{SESSIONS} sessions x {CLIENTS} clients, {LOAD_TURNS} turns each: {deliveries} deltas delivered "
          f"in {seconds:.2f} s; problems (missing, out of order, doubled, foreign): {problems}")
    if started is not None:
        desktop, reference = started
        print(f"hermes desktop --no-open → interactive page, {DESKTOP_RUNS} runs: median "
              f"{statistics.median(desktop):.2f} s (min {min(desktop):.2f}); reference (python -m http.server + a "
              f"static page): median {statistics.median(reference):.2f} s; ratio "
              f"{statistics.median(desktop) / statistics.median(reference):.1f}x")


if __name__ == "__main__":
    main()

