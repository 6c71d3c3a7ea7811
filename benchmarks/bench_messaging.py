"""Messaging gateway overhead and load: fake platform → instant model → fake platform, in one process.

The model is an in-process provider that answers at once, so what is measured is the gateway itself:
the access gate, the session host's queue and worker pool, the agent loop with its SQLite writes,
splitting and sending. Figures:

* overhead per message (one chat at a time): p50 / p95 from the platform handing the message over to
  the answer being sent, next to the same turn run directly on an Agent (the reference, same process);
* 200 concurrent chats, three messages each: every answer checked — none lost, none twice, each in
  its own chat, in order;
* memory per idle chat (tracemalloc), with its live agent held, and after the host let it go.

Run: ``.venv/bin/python benchmarks/bench_messaging.py`` (figures in docs/performance.md).
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hermes.agent.provider import CallOptions, Completion  # noqa: E402
from hermes.surfaces.messaging.adapter import Deliver, Inbound, PlatformAdapter  # noqa: E402


class InstantModel:
    """Answers ``re: <last user message>`` at once."""

    name = "instant"
    model = "instant"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        text = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        return Completion(content=f"re: {text}", finish_reason="stop")


class MemoryPlatform(PlatformAdapter):
    """A platform in memory: ``inject`` hands a message over, ``sent`` keeps (chat, text, time)."""

    name = "mem"
    supports_edit = False

    def __init__(self) -> None:
        super().__init__()
        self.inbox: asyncio.Queue[Inbound] = asyncio.Queue()
        self.sent: list[tuple[str, str, float]] = []
        self.lock = threading.Lock()
        self.got = threading.Condition(self.lock)

    async def connect(self) -> None:
        return None

    async def listen(self, deliver: Deliver) -> None:
        while True:
            await deliver(await self.inbox.get())

    async def close(self) -> None:
        return None

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        now = time.perf_counter()
        with self.got:
            self.sent.append((chat, text, now))
            self.got.notify_all()
        return ""

    def wait(self, count: int, timeout: float = 120) -> None:
        with self.got:
            if not self.got.wait_for(lambda: len(self.sent) >= count, timeout):
                raise SystemExit(f"only {len(self.sent)} of {count} answers arrived")


def start(home: Path) -> tuple[Any, MemoryPlatform, asyncio.AbstractEventLoop, threading.Thread]:
    from hermes.config.settings import Overrides, Settings
    from hermes.store.conversations import ConversationStore
    from hermes.surfaces.host import SessionHost
    from hermes.surfaces.messaging.access import AccessGate, PlatformAccess
    from hermes.surfaces.messaging.gateway import Gateway

    (home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: instant\n")
    settings = Settings.load(overrides=Overrides())
    platform = MemoryPlatform()
    host = SessionHost(settings, provider=InstantModel(), max_concurrent_turns=16)
    access = AccessGate(ConversationStore(settings.paths.database),
                        {"mem": PlatformAccess(allow_users=frozenset({"*"}))}, loop_max_events=1000)
    gateway = Gateway(host, [platform], access, toolsets={"mem": ["todo"]})
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=lambda: loop.run_until_complete(gateway.run()), daemon=True)
    thread.start()
    while gateway.status["mem"].state != "connected":
        time.sleep(0.01)
    return gateway, platform, loop, thread


def inject(loop: asyncio.AbstractEventLoop, platform: MemoryPlatform, chat: str, text: str) -> float:
    msg = Inbound(platform="mem", chat=chat, user="u-" + chat, text=text, direct=True)
    started = time.perf_counter()
    loop.call_soon_threadsafe(platform.inbox.put_nowait, msg)
    return started


def reference_turns(home: Path, n: int) -> list[float]:
    """The same turn straight on an Agent (no gateway): the reference."""
    from hermes.agent.events import NullSink
    from hermes.agent.session import new_agent
    from hermes.config.settings import Overrides, Settings
    from hermes.store.sessions import SessionStore
    from hermes.tools.toolsets import Surface

    settings = Settings.load(overrides=Overrides())
    store = SessionStore(settings.paths.database)
    agent = new_agent(settings, Surface.MESSAGING, NullSink(), requested=["todo"], provider=InstantModel(), store=store)
    times = []
    for i in range(n):
        started = time.perf_counter()
        agent.run_turn(f"ref {i}")
        times.append(time.perf_counter() - started)
    store.close()
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["HERMES_HOME"] = str(home)
        gateway, platform, loop, thread = start(home)

        # 1. overhead per message, one at a time (first message of each chat opens its session: warm up)
        for i in range(20):
            inject(loop, platform, f"warm{i % 4}", "warm")
            platform.wait(i + 1)
        base = len(platform.sent)
        latencies = []
        for i in range(300):
            started = inject(loop, platform, f"warm{i % 4}", f"m{i}")
            platform.wait(base + i + 1)
            latencies.append(platform.sent[-1][2] - started)
        ref = reference_turns(home, 300)
        p50, p95, r50 = pct(latencies, 0.5), pct(latencies, 0.95), statistics.median(ref)
        print(f"overhead per message: p50 {p50 * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms "
              f"(a bare Agent turn: p50 {r50 * 1000:.2f} ms; gateway/agent {p50 / r50:.1f}x, "
              f"gateway's own share {(p50 - r50) * 1000:.2f} ms)")

        # 2. 200 concurrent chats, 3 messages each
        base = len(platform.sent)
        started = time.perf_counter()
        for round_ in range(3):
            for chat in range(200):
                inject(loop, platform, f"c{chat}", f"c{chat} #{round_}")
        platform.wait(base + 600)
        took = time.perf_counter() - started
        answers = platform.sent[base:]
        by_chat: dict[str, list[str]] = {}
        for chat, text, _ in answers:
            by_chat.setdefault(chat, []).append(text)
        lost = sum(1 for c in range(200) if len(by_chat.get(f"c{c}", [])) < 3)
        doubled = sum(1 for texts in by_chat.values() if len(texts) > 3)
        wrong = sum(1 for chat, texts in by_chat.items()
                    if texts != [f"re: {chat} #{r}" for r in range(3)])
        print(f"200 concurrent chats x 3 messages: {len(answers)} answers in {took:.2f} s "
              f"({len(answers) / took:.0f}/s); lost {lost}, answered twice {doubled}, wrong or out of order {wrong}")

        # 3. memory per idle chat (the access gate forgets a chat's message counts after a quiet minute:
        # a clock a minute ahead stands for that minute)
        time.sleep(0.2)
        gateway.access.clock = lambda: time.monotonic() + 61.0
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        base = len(platform.sent)
        for chat in range(200):
            inject(loop, platform, f"idle{chat}", "hello")
        platform.wait(base + 200)
        time.sleep(0.2)
        gc.collect()
        held = tracemalloc.take_snapshot()
        gone = gateway.evict_idle(0)
        gc.collect()  # an evicted agent and its session point at each other: freed by the cycle collector
        after = tracemalloc.take_snapshot()
        if os.environ.get("BENCH_MEMORY_TOP"):
            for stat in after.compare_to(before, "lineno")[:12]:
                print("   ", stat)
        tracemalloc.stop()
        live = sum(s.size_diff for s in held.compare_to(before, "filename")) / 200
        evicted = sum(s.size_diff for s in after.compare_to(before, "filename")) / 200
        print(f"memory per idle chat: {live / 1024:.1f} KiB with its agent live, "
              f"{evicted / 1024:.1f} KiB after the host let {gone} idle chats go")
        gateway.stop()
        thread.join(30)


if __name__ == "__main__":
    main()
