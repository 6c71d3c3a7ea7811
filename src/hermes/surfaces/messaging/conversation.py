"""One chat's side of a hosted session: answers, tool activity, clarify and approvals in the chat.

:class:`ChatConversation` is the :class:`~hermes.surfaces.host.HostListener` the gateway gives the
session host for a chat (or a thread of one). It runs on the host's worker threads and reaches the
platform adapter through the gateway's event loop (:class:`Outbound`):

* the final answer goes out when the turn ends, split at sensible boundaries within the platform's
  limit (:func:`~hermes.surfaces.messaging.split.split_text`); a line ``MEDIA: /path/to/file`` in the
  answer sends that file as an attachment instead (readable files only, as the file tools allow);
* while the answer streams it is shown in one message, edited as text arrives, where the platform
  allows edits (:mod:`hermes.surfaces.messaging.streaming`);
* tool activity is one progress message, edited as tools start (a new message where edits are refused);
* clarify runs the messaging engine (:mod:`hermes.surfaces.messaging.clarify`): one card per question
  (buttons where the platform has them, else the numbered plain-text form), replies from the chat;
* an approval for a dangerous command is asked in the chat, with buttons where the platform has them;
  no reply within the clarify timeout is a denial.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from hermes.agent.events import Event, Notice, Request, TextDelta, ToolStarted, TurnFinished
from hermes.surfaces.host import LiveSession, RoundTripCancelled
from hermes.surfaces.messaging.adapter import PlatformAdapter, Unsupported
from hermes.surfaces.messaging.clarify import ClarifyCancelled, run_messaging_clarify
from hermes.surfaces.messaging.split import split_text
from hermes.surfaces.messaging.streaming import StreamedReply
from hermes.tools.requests import APPROVAL_CHOICES, normalise_answer

logger = logging.getLogger(__name__)

T = TypeVar("T")
_MEDIA = re.compile(r"^\s*MEDIA:\s*(\S.*?)\s*$", re.MULTILINE)
#: how long a send may take before the turn gives up on it (seconds)
SEND_TIMEOUT = 60.0
APPROVAL_TIMEOUT = 300.0


class Outbound:
    """Runs an adapter's coroutines on the gateway's loop from a worker thread, retrying once after a
    reconnect (``connected`` is set by the supervisor while the platform is up)."""

    def __init__(self, adapter: PlatformAdapter, loop: asyncio.AbstractEventLoop,
                 connected: Callable[[], threading.Event | None]) -> None:
        self.adapter = adapter
        self.loop = loop
        self.connected = connected

    def call(self, make: Callable[[], Awaitable[T]], what: str) -> T:
        for attempt in (1, 2):
            async def run() -> T:
                return await make()

            try:
                return asyncio.run_coroutine_threadsafe(run(), self.loop).result(SEND_TIMEOUT)
            except Unsupported:
                raise
            except Exception as exc:
                up = self.connected()
                if attempt == 2 or up is None:
                    raise
                logger.warning("%s: %s failed (%s); retrying once the platform is back",
                               self.adapter.name, what, type(exc).__name__)
                up.wait(SEND_TIMEOUT)
        raise AssertionError("unreachable")


class ChatConversation:
    """The host listener of one chat or thread (see the module docstring)."""

    def __init__(self, out: Outbound, chat: str, thread: str = "", *, clarify_timeout: float | None = None,
                 stream_edits: bool = True) -> None:
        self.out = out
        self.adapter = out.adapter
        self.chat = chat
        self.thread = thread
        self.clarify_timeout = clarify_timeout
        self._progress_id = ""
        self._progress: list[str] = []
        #: the card (buttons) waiting for a press: its message id, "" while being sent; None when none
        self._open_card: str | None = None
        self._card_lock = threading.Lock()
        self.stream: StreamedReply | None = None
        #: speaks the next answer (set when the chat asked by voice; used once)
        self.speak_next: Callable[[str], Path] | None = None
        if stream_edits and self.adapter.supports_edit:
            self.stream = StreamedReply(self._send_one, self._edit_one, self.adapter.max_text, self.adapter.measure)

    # -- sending -------------------------------------------------------------------------------------

    def send_text(self, text: str) -> list[str]:
        """Send ``text``, split to the platform's limit; the message ids."""
        ids: list[str] = []
        for part in split_text(text, self.adapter.max_text, self.adapter.measure):
            ids.append(self.out.call(partial(self.adapter.send_text, self.chat, part, self.thread), "send"))
        return ids

    def _send_one(self, text: str) -> str:
        return self.out.call(partial(self.adapter.send_text, self.chat, text, self.thread), "send")

    def _edit_one(self, message_id: str, text: str) -> None:
        self.out.call(partial(self.adapter.edit_text, self.chat, message_id, text, self.thread), "edit")

    def send_answer(self, answer: str) -> None:
        files = [Path(m.group(1)) for m in _MEDIA.finditer(answer)]
        text = _MEDIA.sub("", answer).strip()
        streamed = self.stream is not None and self.stream.finish(text)
        if text and not streamed:
            self.send_text(text)
        for path in files:
            self._send_file(path)
        speak, self.speak_next = self.speak_next, None
        if speak is not None and text and not files and self.adapter.supports_files:
            self._send_spoken(speak, text)

    def _send_spoken(self, speak: Callable[[str], Path], text: str) -> None:
        """The answer as speech, for a chat that asked by voice (after the text; a failure is only logged)."""
        import contextlib
        import os

        from hermes.errors import HermesError

        try:
            path = speak(text)
        except HermesError as exc:
            logger.warning("the spoken reply could not be made: %s", exc)
            return
        try:
            self.out.call(lambda: self.adapter.send_file(self.chat, path, path.name, self.thread), "send a voice reply")
        except HermesError as exc:
            logger.warning("the spoken reply could not be sent: %s", exc)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _send_file(self, raw: Path) -> None:
        from hermes.errors import HermesError
        from hermes.tools.paths import check_read, resolve_path

        try:
            path = resolve_path(str(raw))
            check_read(path)
            if not path.is_file():
                raise HermesError(f"{raw} is not a file")
            self.out.call(lambda: self.adapter.send_file(self.chat, path, path.name, self.thread), "send a file")
        except Unsupported:
            self.send_text(f"[file {raw.name}: this platform cannot receive files]")
        except HermesError as exc:
            self.send_text(f"[file {raw.name} not sent: {exc}]")

    def _show_progress(self, line: str) -> None:
        self._progress.append(line)
        text = "\n".join(self._progress[-8:])
        if self._progress_id and self.adapter.supports_edit:
            try:
                self.out.call(lambda: self.adapter.edit_text(self.chat, self._progress_id, text, self.thread), "edit")
                return
            except Exception as exc:
                logger.info("%s: editing the progress message failed (%s)", self.adapter.name, type(exc).__name__)
        if not self.adapter.supports_edit:
            text = line  # no edits: each update is a new message of its own
        self._progress_id = self.out.call(lambda: self.adapter.send_text(self.chat, text, self.thread), "send")

    # -- HostListener -----------------------------------------------------------------------------------

    def agent_opened(self, session: LiveSession, agent: Any) -> None:
        """The session's tools learn which chat they answer in (platform tools scope themselves by it)."""
        from hermes.tools.context import CHAT_ORIGIN_KEY

        agent.state[CHAT_ORIGIN_KEY] = (self.adapter.name, self.chat)

    def on_event(self, session: LiveSession, event: Event) -> None:
        if isinstance(event, TextDelta):
            if self.stream is not None:
                self.stream.add(event.text)
        elif isinstance(event, ToolStarted):
            if self.stream is not None:
                self.stream.end_segment()
            if event.name != "clarify":
                self._show_progress(f"⚙ {event.name}")
        elif isinstance(event, Notice) and event.level == "error":
            self.send_text(event.message)
        elif isinstance(event, TurnFinished):
            self._progress, self._progress_id = [], ""
            if event.final.strip():
                self.send_answer(event.final)
            else:
                if self.stream is not None:
                    self.stream.end_segment()
                if event.reason == "interrupted":
                    self.send_text("(stopped)")

    def on_request(self, session: LiveSession, request: Request) -> Any | None:
        if request.kind == "clarify":
            return self._clarify(session, request)
        if request.kind == "approval":
            return self._approval(session, request)
        return None

    def started(self) -> None:
        """A turn begins: show the typing signal (failures only logged)."""
        try:
            self.out.call(lambda: self.adapter.typing(self.chat, self.thread), "typing")
        except Exception as exc:
            logger.info("%s: typing signal failed (%s)", self.adapter.name, type(exc).__name__)

    # -- round trips ----------------------------------------------------------------------------------------

    def _send_card(self, text: str, choices: Sequence[str], what: str) -> None:
        with self._card_lock:
            self._open_card = ""  # a press that arrives while the card is being sent is this card's
        sent = self.out.call(lambda: self.adapter.send_buttons(self.chat, text, choices, self.thread), what)
        with self._card_lock:
            if self._open_card == "":
                self._open_card = str(sent or "")

    def _close_card(self) -> None:
        with self._card_lock:
            self._open_card = None

    def take_press(self, card: str) -> bool:
        """Whether a press on the card ``card`` answers the open card (which it then closes): a press on a
        card answered before, or when no card waits, is refused."""
        with self._card_lock:
            if self._open_card is None or (card and self._open_card and card != self._open_card):
                return False
            self._open_card = None
            return True

    def _clarify(self, session: LiveSession, request: Request) -> dict[str, Any]:
        from hermes.tools.clarify.core import request_questions, request_timeout

        conversation = self

        class Transport:
            def send_card(self, question: str, choices: Sequence[str], index: int, total: int) -> bool:
                if not conversation.adapter.supports_buttons or not choices:
                    return False
                head = f"❓ ({index + 1}/{total}) {question}" if total > 1 else f"❓ {question}"
                conversation._send_card(head, [*choices, "skip"], "send a card")
                return True

            def send_text(self, text: str) -> bool:
                conversation.send_text(text)
                return True

            def next_reply(self, timeout: float) -> str | None:
                try:
                    reply = session.next_reply(timeout)
                except RoundTripCancelled:
                    raise ClarifyCancelled() from None
                return None if reply is None else str(reply)

        timeout = self.clarify_timeout or request_timeout(request)
        try:
            return run_messaging_clarify(request_questions(request), Transport(), timeout)
        finally:
            self._close_card()

    def _approval(self, session: LiveSession, request: Request) -> str | None:
        command = str(request.payload.get("command", ""))
        reason = str(request.payload.get("reason", ""))
        text = f"⚠ Approve this command?\n{command}\n({reason})"
        choices = list(APPROVAL_CHOICES)
        sent = False
        if self.adapter.supports_buttons:
            try:
                self._send_card(text, choices, "ask")
                sent = True
            except Exception as exc:
                self._close_card()
                logger.info("%s: approval buttons refused (%s)", self.adapter.name, type(exc).__name__)
        if not sent:
            self.send_text(f"{text}\nReply once, session, always or deny.")
        try:
            reply = session.next_reply(self.clarify_timeout or APPROVAL_TIMEOUT)
        except RoundTripCancelled:
            return "deny"
        finally:
            self._close_card()
        choice = normalise_answer(reply) if reply is not None else None
        self.send_text("approved" if choice not in (None, "deny") else "denied")
        return choice
