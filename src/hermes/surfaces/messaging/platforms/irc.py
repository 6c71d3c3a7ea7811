"""IRC (RFC 1459/2812 over asyncio streams): TLS optional, SASL PLAIN login when a password is set.

The bot joins the configured channels; a channel is a group chat (``require_mention`` applies: a
line starting with the bot's nick, ``hermes: ...``, addresses it), a private message is a direct
conversation with its sender. IRC has no edits, buttons, threads, typing or files: the gateway sends
new messages, numbered plain text, and a note instead of a file. A line of an answer is one
``PRIVMSG`` (at most :data:`LINE_BYTES` bytes of text each, split at spaces).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import ssl
from collections.abc import Sequence

from hermes.surfaces.messaging.adapter import Deliver, Inbound, PlatformAdapter, PlatformError
from hermes.surfaces.messaging.split import split_text

logger = logging.getLogger(__name__)

LINE_BYTES = 400
CONNECT_TIMEOUT = 20.0


def parse_line(line: str) -> tuple[str, str, list[str]]:
    """``(prefix, command, params)`` of one IRC line (the trailing parameter last); ValueError if empty."""
    prefix = ""
    if line.startswith(":"):
        prefix, _, line = line[1:].partition(" ")
    head, sep, trailing = line.partition(" :")
    words = head.split()
    if not words:
        raise ValueError("no command")
    params = words[1:] + ([trailing] if sep else [])
    return prefix, words[0].upper(), params


class IrcAdapter(PlatformAdapter):
    name = "irc"
    max_text = 1500
    supports_edit = False
    supports_files = False

    def __init__(self, server: str, port: int = 6667, *, nick: str = "hermes", channels: Sequence[str] = (),
                 tls: bool = False, password: str = "", sasl_user: str = "", name: str = "irc") -> None:
        super().__init__()
        self.name = name
        self.server, self.port, self.tls = server, port, tls
        self.wanted_nick = self.nick = nick
        self.channels = list(channels)
        self.password, self.sasl_user = password, sasl_user or nick
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    def measure(self, text: str) -> int:
        return len(text.encode())

    async def _send(self, line: str) -> None:
        if self._writer is None:
            raise PlatformError(f"{self.name}: not connected")
        self._writer.write(line.replace("\r", " ").replace("\n", " ").encode()[:510] + b"\r\n")
        await self._writer.drain()

    async def _read(self) -> str | None:
        assert self._reader is not None
        raw = await self._reader.readline()
        if not raw:
            return None
        try:
            return raw.decode().rstrip("\r\n")
        except UnicodeDecodeError:
            self.malformed("not UTF-8", raw[:80])
            return raw.decode("utf-8", errors="replace").rstrip("\r\n")

    async def connect(self) -> None:
        context = ssl.create_default_context() if self.tls else None
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.server, self.port, ssl=context), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise PlatformError(f"{self.name}: cannot reach {self.server}:{self.port}: {exc}") from exc
        self.nick = self.wanted_nick
        if self.password:
            await self._send("CAP REQ :sasl")
        await self._send(f"NICK {self.nick}")
        await self._send(f"USER {self.wanted_nick} 0 * :hermes agent")
        await asyncio.wait_for(self._register(), CONNECT_TIMEOUT)
        for channel in self.channels:
            await self._send(f"JOIN {channel}")

    async def _register(self) -> None:
        while True:
            line = await self._read()
            if line is None:
                raise PlatformError(f"{self.name}: the server closed the connection during login")
            try:
                _, command, params = parse_line(line)
            except ValueError:
                continue
            if command == "PING":
                await self._send(f"PONG :{params[-1] if params else ''}")
            elif command == "CAP" and len(params) >= 2 and params[1] == "ACK":
                await self._send("AUTHENTICATE PLAIN")
            elif command == "CAP" and len(params) >= 2 and params[1] == "NAK":
                raise PlatformError(f"{self.name}: the server offers no SASL login")
            elif command == "AUTHENTICATE" and params == ["+"]:
                blob = f"{self.sasl_user}\0{self.sasl_user}\0{self.password}".encode()
                await self._send(f"AUTHENTICATE {base64.b64encode(blob).decode()}")
            elif command == "903":
                await self._send("CAP END")
            elif command in ("904", "905", "906"):
                raise PlatformError(f"{self.name}: SASL login refused")
            elif command == "433":  # nick in use
                self.nick += "_"
                await self._send(f"NICK {self.nick}")
            elif command == "001":
                self.nick = params[0] if params else self.nick
                return
            elif command == "ERROR":
                raise PlatformError(f"{self.name}: the server refused the login: {params[-1] if params else ''}")

    async def listen(self, deliver: Deliver) -> None:
        while True:
            line = await self._read()
            if line is None:
                return
            try:
                prefix, command, params = parse_line(line)
            except ValueError:
                self.malformed("no command", line)
                continue
            if command == "PING":
                await self._send(f"PONG :{params[-1] if params else ''}")
            elif command == "PRIVMSG":
                msg = self._inbound(prefix, params, line)
                if msg is not None:
                    await deliver(msg)
            elif command == "ERROR":
                return

    def _inbound(self, prefix: str, params: list[str], line: str) -> Inbound | None:
        if len(params) < 2 or not prefix:
            self.malformed("PRIVMSG without target or text", line)
            return None
        sender, _, host = prefix.partition("!")
        target, text = params[0], params[1]
        if text.startswith("\x01"):  # CTCP (ACTION, VERSION): not a message to answer
            return None
        direct = target.casefold() == self.nick.casefold()
        mentioned = direct
        for sep in (":", ","):
            lead = f"{self.nick}{sep}"
            if text.casefold().startswith(lead.casefold()):
                text, mentioned = text[len(lead):].lstrip(), True
                break
        return Inbound(platform=self.name, chat=sender if direct else target, user=f"{sender}!{host}",
                       user_name=sender, text=text, direct=direct, mentioned=mentioned)

    async def send_text(self, chat: str, text: str, thread: str = "") -> str:
        for line in text.split("\n"):
            for piece in split_text(line, LINE_BYTES, self.measure) if line.strip() else []:
                await self._send(f"PRIVMSG {chat} :{piece}")
        return ""

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is None:
            return
        with contextlib.suppress(Exception):
            writer.write(b"QUIT :bye\r\n")
            await asyncio.wait_for(writer.drain(), 2)
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), 2)
