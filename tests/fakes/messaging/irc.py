"""A real IRC server (ngircd, from Debian) on loopback, and IRC users who talk to the bot through it."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from fakes.messaging import Driver, Posted

NGIRCD = shutil.which("ngircd") or ("/usr/sbin/ngircd" if Path("/usr/sbin/ngircd").exists() else None)
CHANNEL = "#hermes"
BOT = "hermesbot"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NgircdServer:
    """``ngircd -n`` with a scratch config: loopback only, no limits per IP, an operator ``op``/``oppass``."""

    def __init__(self) -> None:
        if NGIRCD is None:
            raise RuntimeError("ngircd is not installed")
        self.dir = Path(tempfile.mkdtemp(prefix="ngircd-"))
        self.port = _free_port()
        conf = self.dir / "ngircd.conf"
        (self.dir / "motd").write_text("test\n")
        conf.write_text(f"""[Global]
Name = irc.test
Info = hermes tests
Listen = 127.0.0.1
Ports = {self.port}
MotdFile = {self.dir}/motd
[Limits]
MaxConnectionsIP = 0
MaxNickLength = 30
PingTimeout = 120
PongTimeout = 60
[Options]
PAM = no
Ident = no
DNS = no
[Operator]
Name = op
Password = oppass
""")
        self.proc = subprocess.Popen([NGIRCD, "-n", "-f", str(conf)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("ngircd did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class IrcUser:
    """A person on the IRC server (a plain socket client on a reader thread)."""

    def __init__(self, port: int, nick: str, on_line: Any) -> None:
        self.nick = nick
        self.sock = socket.create_connection(("127.0.0.1", port), 10)
        self.on_line = on_line
        self.welcome = threading.Event()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.send(f"NICK {nick}")
        self.send(f"USER {nick} 0 * :{nick}")
        if not self.welcome.wait(15):
            raise RuntimeError(f"{nick}: no welcome from ngircd")

    def send(self, line: str | bytes) -> None:
        data = line if isinstance(line, bytes) else line.encode()
        self.sock.sendall(data + b"\r\n")

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\r\n" in buf:
                raw, buf = buf.split(b"\r\n", 1)
                line = raw.decode(errors="replace")
                self.lines.append(line)
                parts = line.split(" ")
                if parts[0] == "PING":
                    self.send("PONG " + " ".join(parts[1:]))
                elif len(parts) > 1 and parts[1] == "001":
                    self.welcome.set()
                self.on_line(self, line)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.send("QUIT :bye")
        self.sock.close()


class IrcDriver(Driver):
    name = "irc"
    group = CHANNEL
    supports_files = False
    supports_edit = False

    def __init__(self, server: NgircdServer) -> None:
        super().__init__()
        self.server = server
        self.users: dict[str, IrcUser] = {}
        self.op = self._user("ircop")
        self.op.send("OPER op oppass")

    def _on_line(self, user: IrcUser, line: str) -> None:
        if not line.startswith(f":{BOT}") or " PRIVMSG " not in line:
            return
        target, _, text = line.split(" PRIVMSG ", 1)[1].partition(" :")
        if target == CHANNEL:
            if user.nick != "ircop":
                return  # every member sees channel lines; record them once
            chat = CHANNEL
        else:
            chat = user.nick
        self.record(Posted("text", chat, text))

    def _user(self, nick: str) -> IrcUser:
        if nick not in self.users:
            user = self.users[nick] = IrcUser(self.server.port, nick, self._on_line)
            user.send(f"JOIN {CHANNEL}")
            deadline = time.monotonic() + 10
            while not any("JOIN" in ln and CHANNEL in ln for ln in user.lines) and time.monotonic() < deadline:
                time.sleep(0.02)
        return self.users[nick]

    def adapter(self) -> Any:
        from hermes.surfaces.messaging.platforms.irc import IrcAdapter

        return IrcAdapter("127.0.0.1", self.server.port, nick=BOT, channels=[CHANNEL])

    def dm_chat(self, user: str) -> str:
        return user

    def allowed(self, users: list[str]) -> list[str]:
        return [f"{u}!*" for u in users]

    def bot_in_channel(self) -> bool:
        self.op.send(f"NAMES {CHANNEL}")
        time.sleep(0.1)
        return any(" 353 " in ln and BOT in ln for ln in self.op.lines[-20:])

    def say(self, user: str, text: str, *, direct: bool = False, mention: bool = True, thread: str = "") -> None:
        who = self._user(user)
        if direct:
            who.send(f"PRIVMSG {BOT} :{text}")
        else:
            who.send(f"PRIVMSG {CHANNEL} :{BOT}: {text}" if mention else f"PRIVMSG {CHANNEL} :{text}")

    def drop(self) -> None:
        self.op.send(f"KILL {BOT} :test drop")

    def malformed(self) -> None:
        self._user("mallory").send(b"PRIVMSG " + BOT.encode() + b" :\xff\xfe not utf-8")

    def close(self) -> None:
        for user in self.users.values():
            user.close()
