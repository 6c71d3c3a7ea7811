"""The adapter contract: what the messaging gateway needs from one chat platform.

An adapter is one small asyncio class per platform. The gateway's supervisor calls :meth:`connect`
then :meth:`listen`, which hands every incoming message to ``deliver`` as an :class:`Inbound` and
returns (or raises) when the connection drops; the supervisor then reconnects with backoff while the
other platforms keep working. Sending (text, files, edits, typing, buttons) is called from the
gateway's event loop. A malformed platform event is the adapter's to log and skip
(:meth:`PlatformAdapter.malformed`): ``listen`` goes on.

Capabilities an adapter lacks are said by its class attributes (``supports_edit``, ``supports_buttons``,
``supports_threads``, ``supports_files``); the gateway falls back (a new message instead of an edit,
numbered text instead of buttons, a file's name instead of the file).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.errors import HermesError

logger = logging.getLogger(__name__)


class PlatformError(HermesError):
    """A platform refused or failed a request (the message says which and why, without secrets)."""


class Unsupported(PlatformError):
    """The platform has no such feature (buttons, edits, files)."""


@dataclass(frozen=True)
class Inbound:
    """One message (or button press) that arrived from a platform."""

    platform: str
    chat: str
    user: str
    text: str
    #: the thread / topic inside the chat ("" for none)
    thread: str = ""
    user_name: str = ""
    #: a direct (one-to-one) conversation rather than a group or channel
    direct: bool = False
    #: the bot was addressed (mentioned, replied to, named) — what ``require_mention`` looks at
    mentioned: bool = False
    #: the sender is a bot (another bot's messages count against the loop cap)
    from_bot: bool = False
    message_id: str = ""
    #: a button press (``text`` is then the pressed choice)
    button: bool = False
    #: a button press: the message id of the card it was on ("" when the platform does not say); the
    #: gateway lets a press answer only the card the conversation is waiting on
    card: str = ""
    #: a voice message: the downloaded audio file (the gateway transcribes it, then deletes it)
    voice: str = ""
    #: a voice message not downloaded yet: the gateway awaits it only once the access gate lets the
    #: message run (a stranger's audio never reaches the disk); it returns the audio file's path
    fetch_voice: Callable[[], Awaitable[str]] | None = field(default=None, compare=False, repr=False)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The conversation key: one stored session per platform, chat and thread."""
        return f"{self.platform}:{self.chat}:{self.thread}"


Deliver = Callable[[Inbound], Awaitable[None]]


class PlatformAdapter(ABC):
    """One chat platform (see the module docstring)."""

    #: the platform's name in config (``gateway.platforms.NAME``) and conversation keys
    name: str = ""
    #: the longest text one message may carry, in the platform's own units (see :meth:`measure`)
    max_text: int = 4000
    supports_edit: bool = True
    supports_buttons: bool = False
    supports_threads: bool = False
    supports_files: bool = True

    def __init__(self) -> None:
        #: malformed events seen (logged and skipped)
        self.malformed_events = 0

    @abstractmethod
    async def connect(self) -> None:
        """Open the connection (log in, start polling); raise :class:`PlatformError` when it fails."""

    @abstractmethod
    async def listen(self, deliver: Deliver) -> None:
        """Hand every incoming message to ``deliver`` until the connection ends (return or raise)."""

    @abstractmethod
    async def close(self) -> None:
        """Leave the platform; closing twice is harmless."""

    @abstractmethod
    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        """Send ``text`` (at most :attr:`max_text`); returns the platform's message id ("" if none)."""

    async def send_file(self, chat: str, path: Path, caption: str = "", thread: str = "") -> str:
        raise Unsupported(f"{self.name} cannot send files")

    async def edit_text(self, chat: str, message_id: str, text: str, thread: str = "") -> None:
        raise Unsupported(f"{self.name} cannot edit messages")

    async def typing(self, chat: str, thread: str = "") -> None:
        """Show that an answer is being written (a no-op where the platform has no such signal)."""
        return None

    async def send_buttons(self, chat: str, text: str, choices: Sequence[str], thread: str = "") -> str:
        """``text`` with one button per choice; a press arrives as an :class:`Inbound` with ``button=True``."""
        raise Unsupported(f"{self.name} has no buttons")

    def measure(self, text: str) -> int:
        """The length of ``text`` as the platform counts it (characters unless overridden)."""
        return len(text)

    def malformed(self, what: str, detail: object) -> None:
        """Log a platform event that could not be understood (it is skipped; the connection goes on)."""
        self.malformed_events += 1
        logger.warning("%s: skipped a malformed event (%s): %.200r", self.name, what, detail)


MAX_VOICE_BYTES = 25 * 1024 * 1024  # a voice message larger than this is not downloaded


async def download_voice(url: str, headers: dict[str, str] | None = None, *,
                         limit: int = MAX_VOICE_BYTES) -> tuple[int, bytes | None]:
    """``(status, body)`` of a GET of ``url`` without following redirects, the body read as a stream and
    None once it passes ``limit`` (so a huge or endless answer never sits in memory) or when the status is
    not 200. Transport errors are httpx's own."""
    import httpx

    async with httpx.AsyncClient(timeout=30.0, follow_redirects=False) as plain, \
            plain.stream("GET", url, headers=headers) as response:
        if response.status_code != 200:
            return response.status_code, None
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                return response.status_code, None
            chunks.append(chunk)
        return response.status_code, b"".join(chunks)


def save_voice(folder: Path | None, name: str, data: bytes) -> str:
    """Keep a downloaded voice message for the gateway to transcribe (0600; the gateway deletes it)."""
    import tempfile

    from hermes.config.atomic import atomic_write

    where = folder or Path(tempfile.gettempdir())
    where.mkdir(parents=True, exist_ok=True)
    target = where / name
    atomic_write(target, data, mode=0o600)
    return str(target)


async def close_connections(ws: Any, http: Any) -> None:
    """Close a WebSocket (waiting at most 5 s, errors ignored) and an httpx client; either may be None."""
    import asyncio
    import contextlib

    if ws is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(), 5)
    if http is not None:
        await http.aclose()
