"""The messaging gateway: every configured platform in one process, each chat a hosted session.

:class:`Gateway` runs on one asyncio loop. Each adapter gets a supervisor (:meth:`Gateway._supervise`)
that connects and listens; when the connection drops or fails the platform is marked
``reconnecting`` and tried again after a backoff that doubles from ``backoff_initial`` up to
``backoff_max`` (reset after a connection that lasted), while the other platforms keep working. A
malformed event, or a message whose handling fails, is logged and skipped: the process stays up.

Every incoming message passes the access gate (:mod:`hermes.surfaces.messaging.access`) and then goes
to the session host (:mod:`hermes.surfaces.host`) under the key ``platform:chat:thread``; the chat's
:class:`~hermes.surfaces.messaging.conversation.ChatConversation` sends the answers. ``/new`` starts a
fresh session for the chat, ``/stop`` stops the running turn.

The state of each platform (``connecting``, ``connected``, ``reconnecting``, ``stopped``), with its
last error and counters, is written atomically to ``HERMES_HOME/gateway/status.json`` for
``hermes gateway status``. Log lines never carry a secret: the gateway's :class:`RedactingFilter` masks
the platforms' tokens on every log handler while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hermes.redact import redact
from hermes.surfaces.host import SessionHost
from hermes.surfaces.messaging.access import AccessGate
from hermes.surfaces.messaging.adapter import Inbound, PlatformAdapter
from hermes.surfaces.messaging.conversation import ChatConversation, Outbound

logger = logging.getLogger(__name__)

#: a connection that lasted this long resets the backoff
STABLE_SECONDS = 30.0


class RedactingFilter(logging.Filter):
    """Masks the given secrets (and well-known key shapes) in every record it sees."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if s]

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self.secrets)
        clean = redact(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return True


@dataclass
class PlatformStatus:
    name: str
    state: str = "connecting"
    since: float = 0.0
    last_error: str = ""
    reconnects: int = 0
    messages_in: int = 0
    malformed_events: int = 0


class Gateway:
    """Connects the adapters, gates and routes their messages to hosted sessions (module docstring)."""

    def __init__(
        self,
        host: SessionHost,
        adapters: list[PlatformAdapter],
        access: AccessGate,
        *,
        toolsets: dict[str, list[str]] | None = None,
        secrets: Iterable[str] = (),
        backoff_initial: float = 1.0,
        backoff_max: float = 60.0,
        status_path: Path | None = None,
        clarify_timeout: float | None = None,
        idle_evict_seconds: float = 0.0,
        stream_edits: bool = True,
        voice_replies: bool = False,
    ) -> None:
        self.stream_edits = stream_edits
        #: answer a voice message with speech too (an audio file after the text)
        self.voice_replies = voice_replies
        self.host = host
        self.idle_evict_seconds = idle_evict_seconds
        self.adapters = {a.name: a for a in adapters}
        self.access = access
        self.toolsets = toolsets or {}
        self.secrets = [s for s in secrets if s]
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.status_path = status_path
        self.clarify_timeout = clarify_timeout
        self.status = {name: PlatformStatus(name) for name in self.adapters}
        self._up = {name: threading.Event() for name in self.adapters}
        self._conversations: dict[str, ChatConversation] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = asyncio.Event()
        self._filter = RedactingFilter(self.secrets)
        for adapter in adapters:
            use_host = getattr(adapter, "use_host", None)
            if callable(use_host):  # a platform that talks to the host itself (the API server)
                use_host(host)

    def safe(self, text: object) -> str:
        return redact(str(text), self.secrets)

    # -- running ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until :meth:`stop`; then close every platform and the host."""
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        handlers = logging.getLogger().handlers
        for handler in handlers:
            handler.addFilter(self._filter)
        tasks = [asyncio.create_task(self._supervise(a), name=f"gateway-{a.name}") for a in self.adapters.values()]
        if self.idle_evict_seconds > 0:
            tasks.append(asyncio.create_task(self._evict_idle(), name="gateway-evict"))
        try:
            await self._stop.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for adapter in self.adapters.values():
                try:
                    await adapter.close()
                except Exception as exc:
                    logger.warning("%s: closing failed: %s", adapter.name, self.safe(exc))
            await asyncio.to_thread(self.host.close)
            for name in self.status:
                self._set(name, "stopped")
            for handler in handlers:
                handler.removeFilter(self._filter)

    async def _evict_idle(self) -> None:
        """Let go of idle conversations now and then (they resume from the store when they speak again)."""
        while True:
            await asyncio.sleep(min(60.0, self.idle_evict_seconds))
            await asyncio.to_thread(self.evict_idle, self.idle_evict_seconds)

    def evict_idle(self, idle_seconds: float) -> int:
        """Let go of chats idle for ``idle_seconds``: their live sessions, listeners and loop counts."""
        gone = self.host.evict_idle(idle_seconds)
        for key in [k for k in self._conversations if self.host.get(k) is None]:
            self._conversations.pop(key, None)
        self.access.prune()
        if gone:
            self.write_status()
        return gone

    def stop(self) -> None:
        """Ask :meth:`run` to end (thread-safe)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)

    async def _supervise(self, adapter: PlatformAdapter) -> None:
        delay = self.backoff_initial
        name = adapter.name
        while not self._stop.is_set():
            self._set(name, "connecting")
            started = time.monotonic()
            try:
                await adapter.connect()
                self._set(name, "connected")
                self._up[name].set()
                await adapter.listen(self._deliver)
                error = "the connection ended"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = f"{type(exc).__name__}: {self.safe(exc)}"
            self._up[name].clear()
            try:
                await adapter.close()
            except Exception as exc:
                logger.debug("%s: close after a drop failed: %s", name, self.safe(exc))
            if self._stop.is_set():
                return
            if time.monotonic() - started >= STABLE_SECONDS:
                delay = self.backoff_initial
            status = self.status[name]
            status.reconnects += 1
            status.last_error = error[:500]
            self._set(name, "reconnecting")
            logger.warning("%s: %s; reconnecting in %.1fs", name, error, delay)
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
                return
            except TimeoutError:
                pass
            delay = min(self.backoff_max, delay * 2)

    def _set(self, name: str, state: str) -> None:
        status = self.status[name]
        status.state, status.since = state, time.time()
        status.malformed_events = self.adapters[name].malformed_events
        self.write_status()

    def write_status(self) -> None:
        if self.status_path is None:
            return
        from hermes.config.atomic import atomic_write

        data = {"pid": os.getpid(), "updated_at": time.time(),
                "platforms": {n: asdict(s) for n, s in self.status.items()},
                "live_conversations": self.host.live_count}
        try:
            atomic_write(self.status_path, json.dumps(data, indent=1), mode=0o600)
        except OSError as exc:
            logger.warning("cannot write %s: %s", self.status_path, exc)

    # -- incoming ----------------------------------------------------------------------------------------

    async def _deliver(self, msg: Inbound) -> None:
        """Handle one incoming message; a failure is logged and never ends the platform's listener."""
        try:
            await self._handle(msg)
        except Exception as exc:
            logger.warning("%s: a message could not be handled: %s", msg.platform, self.safe(exc),
                           exc_info=logger.isEnabledFor(logging.DEBUG))

    async def _handle(self, msg: Inbound) -> None:
        status = self.status.get(msg.platform)
        if status is not None:
            status.messages_in += 1
        decision = await asyncio.to_thread(self.access.check, msg)
        adapter = self.adapters[msg.platform]
        if decision.reply:
            await adapter.send_text(msg.chat, decision.reply, msg.thread)
        if decision.verdict != "run":
            return
        if msg.button:  # a press answers only the card its conversation waits on, once
            waiting = self._conversations.get(msg.key)
            if waiting is None or not waiting.take_press(msg.card):
                await adapter.send_text(msg.chat, "[that button belongs to a question that is no longer open]",
                                        msg.thread)
                return
        text = msg.text.strip()
        voice = msg.voice
        if not voice and msg.fetch_voice is not None:
            try:
                voice = await msg.fetch_voice()
            except Exception as exc:  # the platform's error or the download's: this message only
                logger.warning("%s: a voice message could not be downloaded: %s", msg.platform, self.safe(exc))
                await adapter.send_text(msg.chat, "[voice message could not be downloaded]", msg.thread)
                return
        if voice:
            heard = await asyncio.to_thread(self._transcribe, voice)
            if heard is None:
                await adapter.send_text(msg.chat, "[voice message could not be transcribed]", msg.thread)
                return
            text = f'[voice message] "{heard}"' + (f"\n{text}" if text else "")
        command = text.split()[0].lower() if text.startswith("/") and text.split() else ""
        if command in ("/new", "/reset"):
            await asyncio.to_thread(self.host.reset, msg.key)
            await adapter.send_text(msg.chat, "New session started.", msg.thread)
            return
        if command == "/stop":
            stopped = self.host.interrupt(msg.key)
            if not stopped:
                await adapter.send_text(msg.chat, "Nothing is running.", msg.thread)
            return
        conversation = self._conversation(adapter, msg)
        if voice and self.voice_replies:  # the message was spoken (downloaded here or by the adapter)
            live = self.host.get(msg.key)
            if live is None or not live.running:  # the answer to come is this message's
                conversation.speak_next = self._speak
        outcome = self.host.submit(msg.key, text, conversation, toolsets=self.toolsets.get(msg.platform),
                                   title=f"{msg.platform} {msg.user_name or msg.chat}")
        if outcome == "started":
            asyncio.get_running_loop().run_in_executor(None, conversation.started)

    def _speak(self, text: str) -> Path:
        """``text`` as speech through the ``tts.provider`` route (a file the conversation sends and deletes)."""
        from hermes.tools.audio.tts import speak_file

        return speak_file(text, self.host.settings)

    def _transcribe(self, path: str) -> str | None:
        """The words of a voice message through the speech-to-text route (``stt.provider``); None when
        it cannot be transcribed (why is logged). The audio file is deleted either way."""
        from hermes.errors import HermesError
        from hermes.tools.audio.stt import transcribe_file

        try:
            return transcribe_file(path, self.host.settings).text.strip() or None
        except HermesError as exc:
            logger.warning("a voice message could not be transcribed: %s", self.safe(exc))
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _conversation(self, adapter: PlatformAdapter, msg: Inbound) -> ChatConversation:
        found = self._conversations.get(msg.key)
        if found is None:
            assert self._loop is not None
            out = Outbound(adapter, self._loop, lambda: self._up.get(adapter.name))
            found = self._conversations[msg.key] = ChatConversation(
                out, msg.chat, msg.thread, clarify_timeout=self.clarify_timeout, stream_edits=self.stream_edits)
        return found

    def snapshot(self) -> dict[str, Any]:
        return {n: asdict(s) for n, s in self.status.items()}
