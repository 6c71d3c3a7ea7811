"""Throw-away PostgreSQL and Redis servers for the gateway's multi-host tests (fixtures in conftest.py).

:class:`PostgresServer` runs ``initdb`` into a fresh temporary directory and ``pg_ctl start`` on a free
port of 127.0.0.1 (its unix socket in the same directory, fsync off); :meth:`PostgresServer.database`
creates an empty database owned by a password-protected role and returns its URL. PostgreSQL refuses
to run as root, so as root both programs run as the ``postgres`` system user (``runuser``, else ``su``), in a
directory that user owns. :class:`RedisServer` is a ``redis-server`` with a password and no
persistence. Both are stopped and their directories removed at teardown. :func:`gateways` runs two
``hermes toolgateway serve`` processes sharing one database and one Redis, as two hosts would.

A missing program skips the tests — unless the ``CI`` variable is set: CI installs them, so there a
missing program is a failure.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest


def unavailable(reason: str) -> None:
    """Skip (on a developer machine) or fail (under CI) for a missing program."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the CI script installs it)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pg_program(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return candidates[-1] if candidates else None


class PostgresServer:
    """One PostgreSQL cluster for the whole test session."""

    ROLE = "gw"

    def __init__(self) -> None:
        initdb, pg_ctl = _pg_program("initdb"), _pg_program("pg_ctl")
        if not initdb or not pg_ctl:
            unavailable("PostgreSQL (initdb, pg_ctl) is not installed")
        assert initdb and pg_ctl
        self.pg_ctl = pg_ctl
        self.as_postgres = False
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root and there is no 'postgres' user to run PostgreSQL as")
            if not shutil.which("runuser") and not shutil.which("su"):
                unavailable("running as root and neither runuser(1) nor su(1) is there")
            self.as_postgres = True
        self.root = Path(tempfile.mkdtemp(prefix="hermes-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.password = "pw-" + secrets.token_hex(8)
        try:
            self._start(initdb)
        except BaseException:
            self.stop()
            raise

    def _start(self, initdb: str) -> None:
        if self.as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(initdb, "-D", str(self.data), "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
                  "--no-sync", "--no-instructions", "-E", "UTF8", "--locale=C")
        options = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=60")
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "30", "-o", options,
                  "start")
        self.admin(f"CREATE ROLE {self.ROLE} LOGIN PASSWORD '{self.password}'")

    def _command(self, *args: str) -> list[str]:
        """``args`` as a command line, run as the ``postgres`` user when we are root."""
        if not self.as_postgres:
            return list(args)
        runuser = shutil.which("runuser")
        if runuser:
            return [runuser, "-u", "postgres", "--", *args]
        return [str(shutil.which("su")), "postgres", "-s", "/bin/sh", "-c", shlex.join(args)]

    def _run(self, *args: str) -> None:
        proc = subprocess.run(self._command(*args), capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {proc.stderr or proc.stdout}")

    def admin(self, sql: str, dbname: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser (over the unix socket) and return its rows."""
        import psycopg

        with psycopg.connect(host=str(self.root), port=self.port, user="postgres", dbname=dbname,
                             autocommit=True) as conn:
            cur = conn.execute(sql.encode())
            return list(cur.fetchall()) if cur.description else []

    def database(self) -> str:
        """A new empty database owned by the password role; its URL (with the password)."""
        name = "gw_" + secrets.token_hex(5)
        self.admin(f"CREATE DATABASE {name} OWNER {self.ROLE}")
        return f"postgresql://{self.ROLE}:{self.password}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        subprocess.run(self._command(self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                       capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


class RedisServer:
    """A password-protected ``redis-server`` on a free port, nothing saved to disk."""

    def __init__(self, port: int | None = None) -> None:
        self.program = shutil.which("redis-server")
        if not self.program:
            unavailable("redis-server is not installed")
        self.root = Path(tempfile.mkdtemp(prefix="hermes-redis-"))
        self.port = port or free_port()
        self.password = "rpw-" + secrets.token_hex(8)
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        assert self.program
        self.proc = subprocess.Popen(
            [self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--requirepass", self.password, "--dir", str(self.root), "--daemonize", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        import redis

        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                if client.ping():
                    client.close()
                    return self
            except redis.RedisError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(15)
            self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


# -- gateway processes sharing them ----------------------------------------------------------------------
GATEWAY_CONFIG = """
access_log = "off"
[rate_limit]
per_second = {rate}
burst = {burst}
[plans.free]
monthly = {{ firecrawl = 100 }}
[relays.firecrawl]
scrape = "local"
search = "off"
allow_loopback = true
"""


def hermes(home: Path, *args: str, env: dict[str, str] | None = None,
           check: bool = True) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "HERMES_HOME": str(home)}
    for name in ("HERMES_GATEWAY_ADMIN_TOKEN", "HERMES_GATEWAY_DATABASE_URL", "HERMES_GATEWAY_REDIS_URL"):
        full.pop(name, None)
    full.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "hermes", "toolgateway", *args], env=full, capture_output=True,
                          text=True, timeout=60)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@dataclass
class Gateways:
    """Gateway processes sharing one database and one Redis (each with its own HERMES_HOME)."""

    db_url: str
    homes: list[Path]
    urls: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = hermes(self.homes[0], *args, "--database-url", self.db_url, check=check)
        self.output += [proc.stdout, proc.stderr]
        return proc


@contextmanager
def gateways(tmp_path: Path, db_url: str, redis_url: str, *, rate: float, burst: int,
             extra: str = "") -> Iterator[Gateways]:
    """Two ``serve`` processes on two ports: one given the URLs as flags, one through the environment
    (``extra``: more TOML appended to their config file; ``@HOST@`` in it becomes ``host-a``/``host-b``).

    Like two hosts, each has its own HERMES_HOME; the signing secret and admin token are copied from the
    first (docs/gateway/server.md: every host needs the same ``secret``)."""
    config = tmp_path / "gateway.toml"
    config.write_text(GATEWAY_CONFIG.format(rate=rate, burst=burst))
    homes = [tmp_path / "host-a", tmp_path / "host-b"]
    group = Gateways(db_url, homes)
    group.cli("admin-token")  # creates host A's secret and admin token
    (homes[1] / "toolgateway").mkdir(parents=True)
    for name in ("secret", "admin_token"):
        shutil.copy2(homes[0] / "toolgateway" / name, homes[1] / "toolgateway" / name)
    procs = group.procs
    for i, home in enumerate(homes):
        port = free_port()
        own = config
        if extra:
            own = tmp_path / f"gateway-{home.name}.toml"
            own.write_text(config.read_text() + extra.replace("@HOST@", home.name))
        args = ["serve", "--port", str(port), "--config", str(own)]
        env = {**os.environ, "HERMES_HOME": str(home)}
        if i == 0:
            args += ["--database-url", db_url, "--redis-url", redis_url]
        else:
            env.update(HERMES_GATEWAY_DATABASE_URL=db_url, HERMES_GATEWAY_REDIS_URL=redis_url)
        procs.append(subprocess.Popen([sys.executable, "-m", "hermes", "toolgateway", *args], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        group.urls.append(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 40
        for proc, url in zip(procs, group.urls, strict=True):
            while True:
                try:
                    if httpx.get(url + "/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"a gateway did not start: {proc.communicate(timeout=10)[1]}")
                time.sleep(0.05)
        yield group
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                out, err = proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            group.output += [out, err]
