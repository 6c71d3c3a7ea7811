"""The kanban board inside ``hermes gateway run`` (requirement T-KAN): a dispatcher, and notices to chats.

When the messaging gateway runs and a board is in use (``kanban.gateway_dispatch``, a
``kanban.database_url``, or an existing ``HERMES_HOME/kanban.db``), :func:`start_for_gateway` starts one
thread beside the gateway's loop that, pass after pass:

1. **dispatches** (only with ``kanban.gateway_dispatch: true``) — one :class:`~hermes.agent.kanban.Dispatcher`
   ``tick``: the same claims, limits, reclaiming and reconciling as ``hermes kanban dispatch``; on a
   PostgreSQL board it is one more dispatcher beside any others, on any machine;
2. **tells chats** — every new event on the board that moves a task to one of ``kanban.notify`` (done,
   review, blocked by default) is sent to the chat that asked for the task: the task's ``origin`` is the
   creating session (``session:<id>``, recorded by ``kanban_create``) — looked up in this gateway's own
   conversations, so on a shared board each gateway tells only its own chats — or a chat named outright
   (``chat:<platform>:<chat>:<thread>``, ``hermes kanban create --notify``).

A pass starts when a task becomes ready (the board's wake-up), when one of its workers ends, and at the
latest every ``kanban.gateway_interval_seconds``. Which events were handled is kept in
``HERMES_HOME/gateway/kanban_notices.json``, so a restarted gateway neither repeats nor drops a notice; a
gateway's first start begins with the events that come after it. Stopping the gateway stops its workers
(their tasks are reclaimed after the heartbeat timeout, as with a stopped ``hermes kanban dispatch``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.errors import HermesError
from hermes.redact import redact

if TYPE_CHECKING:
    import asyncio

    from hermes.agent.kanban import Dispatcher
    from hermes.config.settings import Settings
    from hermes.store.kanban.board import Board
    from hermes.store.kanban.config import KanbanConfig
    from hermes.store.kanban.models import Event, Task
    from hermes.surfaces.messaging.adapter import PlatformAdapter

logger = logging.getLogger("hermes.kanban")

#: send(conversation key ``platform:chat:thread``, text) → whether it was sent
Send = Callable[[str, str], bool]
_MAX_DETAIL = 600


def notice_text(task: Task, event: Event) -> str:
    """What a chat is told about ``event`` (a move of ``task``)."""
    head = f"Kanban task {task.id} “{task.title}”"
    detail = ""
    if event.target == "done":
        line, detail = f"{head} is done", task.result or ""
    elif event.target == "review":
        line, detail = f"{head} is ready for review", task.result or ""
    elif event.target == "blocked":
        kind = event.payload.get("block_kind") or task.block_kind or "blocked"
        line = f"{head} is blocked ({'gave up after repeated failures' if kind == 'failed' else kind})"
        detail = str(event.payload.get("block_reason") or task.block_reason or "")
    else:
        line = f"{head} is now {event.target}"
    detail = detail.strip()
    if len(detail) > _MAX_DETAIL:
        detail = detail[:_MAX_DETAIL] + " …"
    return redact(f"{line}: {detail}" if detail else line)


class KanbanGatewayHook:
    """The gateway's kanban thread (see the module docstring)."""

    def __init__(self, board: Board, cfg: KanbanConfig, *, send: Send, key_for_session: Callable[[str], str | None],
                 cursor_path: Path, dispatcher: Dispatcher | None = None) -> None:
        self.board = board
        self.cfg = cfg
        self.send = send
        self.key_for_session = key_for_session
        self.cursor_path = cursor_path
        self.dispatcher = dispatcher
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: closed when the hook stops (the conversations store it looks chats up in)
        self.closing: list[Callable[[], None]] = []
        self._after = self._load_cursor()

    # ---- the cursor ----------------------------------------------------------------------------

    def _load_cursor(self) -> int:
        try:
            data = json.loads(self.cursor_path.read_text())
            if data.get("board") == self.board.label and isinstance(data.get("after"), int):
                return int(data["after"])
        except (OSError, ValueError, AttributeError):
            pass
        return self.board.last_event_id()  # a first start: only what happens from now on

    def _save_cursor(self) -> None:
        from hermes.config.atomic import atomic_write

        try:
            self.cursor_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.cursor_path, json.dumps({"board": self.board.label, "after": self._after}), mode=0o600)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.cursor_path, exc)

    # ---- one pass ------------------------------------------------------------------------------

    def destination(self, task: Task) -> str | None:
        """The conversation key of the chat that asked for ``task``, or None."""
        origin = task.origin or ""
        if origin.startswith("session:"):
            return self.key_for_session(origin.removeprefix("session:"))
        if origin.startswith("chat:"):
            return origin.removeprefix("chat:")
        return None

    def notify(self) -> int:
        """Send the notices of the events since the last pass; how many were sent."""
        sent = 0
        while True:
            events = self.board.events_since(self._after, limit=500)
            if not events:
                return sent
            for event in events:
                self._after = event.id
                if event.target not in self.cfg.notify or event.source == event.target:
                    continue
                task = self.board.get(event.task_id)
                key = self.destination(task)
                if key is None:
                    continue
                try:
                    delivered = self.send(key, notice_text(task, event))
                except Exception as exc:  # a platform down: this notice is lost, later ones are tried
                    logger.warning("kanban notice for %s to %s failed: %s", task.id, key.split(":", 1)[0], exc)
                    delivered = False
                if delivered:
                    sent += 1
                    logger.info("task %s: told %s it is %s", task.id, key.split(":", 1)[0], event.target)
            self._save_cursor()

    def pass_once(self) -> None:
        """One dispatcher pass (when dispatching here), then the notices; a board error is logged."""
        try:
            if self.dispatcher is not None:
                self.dispatcher.tick()
            self.notify()
        except HermesError as exc:
            logger.warning("kanban pass failed: %s", exc)

    # ---- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        from hermes.agent.kanban import wait_for_wake

        ended = self.dispatcher.worker_ended if self.dispatcher is not None else (lambda: False)
        while not self._stop.is_set():
            mark = self.board.wake_mark()
            self.pass_once()
            wait_for_wake(self.board, mark, self.cfg.gateway_interval_s, should_stop=self._stop.is_set, also=ended)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gateway-kanban", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread, stop this gateway's workers and close the board."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self.dispatcher is not None:
            self.dispatcher.stop_all()
        self.board.close()
        for close in self.closing:
            close()


def gateway_sender(adapters: Mapping[str, PlatformAdapter], loop: asyncio.AbstractEventLoop) -> Send:
    """A :data:`Send` over the gateway's adapters: ``platform:chat:thread`` → that adapter's ``send_text``, run
    on the gateway's loop (from the kanban thread)."""
    import asyncio

    def send(key: str, text: str) -> bool:
        platform, _, rest = key.partition(":")
        chat, _, thread = rest.rpartition(":")
        adapter = adapters.get(platform)
        if adapter is None or not chat:
            return False
        asyncio.run_coroutine_threadsafe(adapter.send_text(chat, text, thread), loop).result(timeout=60)
        return True

    return send


def wanted(settings: Settings, cfg: KanbanConfig) -> bool:
    """Whether the gateway has a board to work with (never creates one just to look)."""
    import os

    from hermes.store.kanban.config import URL_ENV

    if cfg.gateway_dispatch or cfg.database_url or os.environ.get(URL_ENV):
        return True
    return (settings.paths.home / "kanban.db").exists()


def start_for_gateway(settings: Settings, send: Send) -> KanbanGatewayHook | None:
    """Start the kanban thread of a running gateway (None when there is no board to work with)."""
    from hermes.store.conversations import ConversationStore
    from hermes.store.kanban.config import KanbanConfig

    cfg = KanbanConfig.from_config(settings.config.data)
    if not wanted(settings, cfg):
        return None
    try:
        board = cfg.open_board()
    except HermesError as exc:  # the chats still work; the board's trouble is said, not hidden
        logger.warning("kanban: the board cannot be opened, no dispatching or notices: %s", exc)
        return None
    dispatcher = None
    if cfg.gateway_dispatch:
        import os

        from hermes.agent.kanban import Dispatcher

        dispatcher = Dispatcher(board, cfg, name=f"gateway:{os.uname().nodename}:{os.getpid()}")
    conversations = ConversationStore(settings.paths.database)
    hook = KanbanGatewayHook(board, cfg, send=send, key_for_session=conversations.key_for,
                             cursor_path=settings.paths.home / "gateway" / "kanban_notices.json",
                             dispatcher=dispatcher)
    hook.closing.append(conversations.close)
    hook.start()
    logger.info("kanban: %s on %s", "dispatching and notifying" if dispatcher else "notifying", board.label)
    return hook
