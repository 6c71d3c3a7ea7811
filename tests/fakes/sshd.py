"""A real OpenSSH server for tests: ``sshd`` on a loopback port with throw-away host and user keys.

::

    with SSHServer(tmp_path) as server:
        settings = server.settings()    # terminal.ssh.* for the backend: host, port, user, key_file, known_hosts

The server runs as the test's own user (root in CI: logins as root with a key only; otherwise sshd
serves its own user). The known_hosts file lists the throw-away host key, so host-key checking stays
on. :meth:`SSHServer.drop_connections` kills the per-connection sshd processes (children of the
listener) — a real dropped connection for whatever client was connected.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


def have_sshd() -> bool:
    return SSHD is not None and shutil.which("ssh-keygen") is not None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SSHServer:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        self.port = _free_port()
        self.user = getpass.getuser()
        self.host_key = folder / "host_ed25519"
        self.user_key = folder / "user_ed25519"
        self.known_hosts = folder / "known_hosts"
        self.authorized = folder / "authorized_keys"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = folder / "sshd.log"

    def _keys(self) -> None:
        for path in (self.host_key, self.user_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30)
        self.authorized.write_text((self.user_key.with_suffix(".pub")).read_text())
        os.chmod(self.authorized, 0o600)
        host_pub = self.host_key.with_suffix(".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")

    def start(self) -> SSHServer:
        assert SSHD is not None
        self._keys()
        config = self.folder / "sshd_config"
        config.write_text("\n".join([
            "ListenAddress 127.0.0.1", f"Port {self.port}", f"HostKey {self.host_key}",
            f"AuthorizedKeysFile {self.authorized}", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes", "PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no",
            "AllowStreamLocalForwarding yes", "StreamLocalBindUnlink yes", "Subsystem sftp internal-sftp",
            "PidFile none", "LogLevel ERROR", "MaxStartups 50", "MaxSessions 50", "PrintMotd no",
        ]) + "\n")
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {self.log.read_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def settings(self, **extra: Any) -> dict[str, Any]:
        return {"host": "127.0.0.1", "port": self.port, "user": self.user, "key_file": str(self.user_key),
                "known_hosts": str(self.known_hosts), "use_agent": False, **extra}

    def connection_pids(self) -> list[int]:
        """The per-connection sshd processes (children of the listener)."""
        assert self.proc is not None
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    def drop_connections(self) -> int:
        pids = self.connection_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        return len(pids)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.drop_connections()
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def __enter__(self) -> SSHServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
