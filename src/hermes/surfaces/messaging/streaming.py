"""Showing an answer while it streams: one message, edited as text arrives (platforms with edits).

The first message goes out once ``min_chars`` have arrived (with a cursor ``▌``); it is edited when
``every_chars`` more arrived and ``every_seconds`` passed since the last edit, and never past the
platform's limit (the rest waits for the end). At the end the message is edited to the final text's
first part and the other parts follow as new messages. A tool call ends the streamed segment (its
text stays, without the cursor); a failed edit stops streaming for the turn and the final answer is
sent as new messages.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from hermes.surfaces.messaging.split import split_text

logger = logging.getLogger(__name__)

CURSOR = " ▌"


class StreamedReply:
    def __init__(self, send: Callable[[str], str], edit: Callable[[str, str], None], limit: int,
                 measure: Callable[[str], int] = len, *, min_chars: int = 40, every_chars: int = 120,
                 every_seconds: float = 0.8, clock: Callable[[], float] = time.monotonic) -> None:
        self._send, self._edit = send, edit
        self.limit, self.measure = limit, measure
        self.min_chars, self.every_chars, self.every_seconds = min_chars, every_chars, every_seconds
        self.clock = clock
        self.edits = 0
        self._clear()
        self.broken = False

    def _clear(self) -> None:
        self.text = ""
        self.message_id = ""
        self._shown = 0
        self._when = 0.0

    def add(self, piece: str) -> None:
        if self.broken:
            return
        self.text += piece
        shown = self.text + CURSOR
        if self.measure(shown) > self.limit:
            return  # past one message: the rest is sent at the end
        try:
            if not self.message_id:
                if len(self.text.strip()) >= self.min_chars:
                    self.message_id = self._send(shown)
                    self._shown, self._when = len(self.text), self.clock()
            elif len(self.text) - self._shown >= self.every_chars and self.clock() - self._when >= self.every_seconds:
                self._edit(self.message_id, shown)
                self.edits += 1
                self._shown, self._when = len(self.text), self.clock()
        except Exception as exc:
            logger.info("streaming stopped: %s", type(exc).__name__)
            self.broken = True

    def end_segment(self) -> None:
        """A tool call: the streamed text so far stays as it is (without the cursor)."""
        if self.message_id and not self.broken:
            try:
                self._edit(self.message_id, self.text[:self._shown])
            except Exception as exc:
                logger.info("streaming stopped: %s", type(exc).__name__)
                self.broken = True
        self._clear()

    def finish(self, final: str) -> bool:
        """Show ``final`` in the streamed message (and new ones after it); False when nothing was
        streamed (or streaming broke) and the caller must send ``final`` itself."""
        message_id, broken = self.message_id, self.broken
        self._clear()
        self.broken = False
        if not message_id or broken:
            return False
        parts = split_text(final, self.limit, self.measure) or [final]
        try:
            self._edit(message_id, parts[0])
        except Exception as exc:
            logger.info("the final edit failed (%s); sending the answer anew", type(exc).__name__)
            return False
        for part in parts[1:]:
            self._send(part)
        return True
