"""Running async tool handlers from synchronous code, wherever that code runs.

Coroutines are executed on one long-lived event loop in a daemon thread. ``run_sync`` works the same
from the main thread, from worker threads, and from inside a running event loop (where
``asyncio.run`` would fail): it hands the coroutine to the bridge loop and waits for it. Because the
loop lives as long as the process, async clients (HTTP connection pools) can be reused between calls.
"""

from __future__ import annotations

import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _bridge_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    global _loop, _thread
    with _lock:
        if _loop is not None and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="hermes-async-bridge", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread = loop, thread
        return loop


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` to completion and return its result, from any thread or loop."""
    import asyncio

    loop = _bridge_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("run_sync called from inside the bridge loop; await the coroutine instead")
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise
