"""Loopback stand-ins for chat platforms, each driven the same way by the adapter conformance suite.

A driver (:class:`Driver`) plays the people in the chat: ``say`` sends a message as a person,
``posted`` lists what the bot sent (text, files, edits), ``drop`` cuts the bot's connection and
``malformed`` makes the platform send the bot something it cannot understand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Posted:
    """One thing the bot did in a chat."""

    kind: str  # "text" | "file" | "edit" | "buttons"
    chat: str
    text: str
    thread: str = ""
    message_id: str = ""
    extra: Any = None


class Driver:
    """What every platform fake offers the conformance suite."""

    name = ""
    group = ""  # the group chat's id as the adapter reports it
    supports_threads = False
    #: why the thread check does not apply, where it does not
    thread_note = "the platform has no threads"
    #: why the reconnect check does not apply ("" where it does)
    reconnect_note = ""
    supports_files = True
    supports_edit = True
    #: secrets the adapter is given (they must never show up in a log)
    secrets: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.posts: list[Posted] = []
        self.cond = threading.Condition()

    def record(self, post: Posted) -> None:
        with self.cond:
            self.posts.append(post)
            self.cond.notify_all()

    def wait_for(self, check: Callable[[list[Posted]], Any], timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = check(list(self.posts))
                if found:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: not seen within {timeout}s; posts: {self.posts!r}")
                self.cond.wait(min(left, 0.5))

    def texts(self, chat: str | None = None) -> list[str]:
        with self.cond:
            return [p.text for p in self.posts if p.kind == "text" and (chat is None or p.chat == chat)]

    def allowed(self, users: list[str]) -> list[str]:
        """The allowlist entries (``allow_users``) that let these people in."""
        return users

    def after_reconnect(self) -> None:
        """Whatever the people must do after the bot came back (nothing on most platforms)."""
        return None

    # -- to implement ----------------------------------------------------------------------------------
    def adapter(self) -> Any:
        raise NotImplementedError

    def dm_chat(self, user: str) -> str:
        """The chat id the adapter reports for a direct conversation with ``user``."""
        raise NotImplementedError

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        raise NotImplementedError

    def press(self, user: str, post: Posted, choice: str) -> None:
        """Press the button ``choice`` of a ``buttons`` post."""
        raise NotImplementedError

    def drop(self) -> None:
        raise NotImplementedError

    def malformed(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return None
