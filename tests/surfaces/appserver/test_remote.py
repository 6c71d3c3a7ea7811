"""A remote backend: the app server started over SSH on a real throw-away sshd (tests/fakes/sshd.py) and
reached through a forwarded local port; and the same server by URL."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from fakes.model_server import Reply
from fakes.sshd import SSHServer, have_sshd
from fakes.terminal import TmuxTerminal, have_tmux
from hermes.errors import HermesError, UsageError
from hermes.store.sessions import SessionStore
from hermes.surfaces.appserver.remote import by_url, over_ssh
from surfaces.appserver.harness import Rpc

pytestmark = [pytest.mark.skipif(not have_sshd(), reason="needs sshd (Debian openssh-server)"),
              pytest.mark.timeout(180)]
SRC = str(Path(__file__).resolve().parents[3] / "src")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    with SSHServer(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def ssh_options(server: SSHServer) -> list[str]:
    return ["-p", str(server.port), "-i", str(server.user_key), "-o", f"UserKnownHostsFile={server.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-F", "/dev/null"]


def remote_hermes(home: Path) -> str:
    """How "the remote machine" runs hermes: its own HERMES_HOME, this checkout."""
    return (f"env HERMES_HOME={shlex.quote(str(home))} PYTHONPATH={shlex.quote(SRC)} "
            f"{shlex.quote(sys.executable)} -m hermes")


def serve_processes(home: Path) -> list[int]:
    """The ``hermes serve --token-stdin`` processes whose HERMES_HOME is ``home``."""
    found = []
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--token-stdin" in args and f"HERMES_HOME={home}".encode() in environ:
            found.append(pid)
    return found


def test_over_ssh_the_remote_server_runs_the_session_and_needs_the_token(
        sshd: SSHServer, model_server: Any, tmp_path: Path) -> None:
    remote_home = tmp_path / "remote_home"
    remote_home.mkdir()
    model = model_server([Reply(content="answered on the remote machine")])
    (remote_home / "config.yaml").write_text(f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n")
    backend = over_ssh(f"{sshd.user}@127.0.0.1", ssh_options=ssh_options(sshd),
                       remote_command=remote_hermes(remote_home))
    try:
        assert backend.url.startswith("ws://127.0.0.1:") and backend.token
        assert all(backend.token not in line for line in subprocess.run(
            ["ps", "-eo", "args"], capture_output=True, text=True, timeout=10).stdout.splitlines())
        with pytest.raises(InvalidStatus):  # loopback on the remote, still refused without the token
            Rpc(backend.url)
        with pytest.raises(InvalidStatus):
            Rpc(backend.url, additional_headers={"Authorization": "Bearer wrong"})
        rpc = Rpc(backend.url, additional_headers={"Authorization": f"Bearer {backend.token}"})
        session = rpc.call("sessions.create")["session"]
        rpc.call("message.send", {"session": session, "text": "hi"})
        final = rpc.finished(session)
        assert final["final"] == "answered on the remote machine"
        rpc.close()
        with SessionStore(remote_home / "state.db") as store:  # stored where the server runs
            assert store.get_session(final["session_id"]).surface == "desktop"
        assert serve_processes(remote_home)
    finally:
        backend.close()
    deadline = time.monotonic() + 20
    while serve_processes(remote_home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not serve_processes(remote_home)  # closing the SSH session stops the remote server


def test_a_host_without_hermes_is_named_with_what_it_said(sshd: SSHServer) -> None:
    with pytest.raises(HermesError, match=r"did not start on .* over SSH.*no-such-hermes"):
        over_ssh(f"{sshd.user}@127.0.0.1", ssh_options=ssh_options(sshd), remote_command="no-such-hermes",
                 timeout=30)
    with pytest.raises(UsageError):
        over_ssh("-oProxyCommand=evil", ssh_options=[])


def test_by_url_checks_the_address() -> None:
    assert by_url("ws://127.0.0.1:8765", None).url == "ws://127.0.0.1:8765/rpc"
    with pytest.raises(UsageError, match="WebSocket address"):
        by_url("http://127.0.0.1:8765/rpc", None)


def test_hermes_serve_ssh_holds_a_tunnel_and_keeps_the_token_in_a_0600_file(
        sshd: SSHServer, model_server: Any, tmp_path: Path, hermes_home: Path) -> None:
    remote_home = tmp_path / "remote_home"
    remote_home.mkdir()
    model = model_server([Reply(content="through the tunnel")])
    (remote_home / "config.yaml").write_text(f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n")
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "serve", "--ssh", f"{sshd.user}@127.0.0.1",
                             "--remote-command", remote_hermes(remote_home),
                             *(f"--ssh-option={o}" for o in ssh_options(sshd))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert " is at ws://127.0.0.1:" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
        url = first.rsplit(" ", 1)[1].strip()
        second = proc.stdout.readline()
        token_file = hermes_home / "remote_token"
        assert str(token_file) in second and token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert token not in first + second
        rpc = Rpc(url, additional_headers={"Authorization": f"Bearer {token}"})
        session = rpc.call("sessions.create")["session"]
        rpc.call("message.send", {"session": session, "text": "hi"})
        assert rpc.finished(session)["final"] == "through the tunnel"
        rpc.close()
    finally:
        proc.terminate()
        code = proc.wait(30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert code == 0


@pytest.mark.skipif(not have_tmux(), reason="needs tmux")
def test_hermes_tui_over_ssh_talks_to_the_remote_server(sshd: SSHServer, model_server: Any, tmp_path: Path,
                                                        hermes_home: Path) -> None:
    pytest.importorskip("textual")
    remote_home = tmp_path / "remote_home"
    remote_home.mkdir()
    model = model_server([Reply(content="the remote TUI answer")])
    (remote_home / "config.yaml").write_text(f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n")
    env = {"HERMES_HOME": str(hermes_home), "HOME": str(hermes_home), "LANG": "C.UTF-8", "PYTHONPATH": SRC,
           "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    argv = [sys.executable, "-m", "hermes", "tui", "--ssh", f"{sshd.user}@127.0.0.1",
            "--remote-command", remote_hermes(remote_home), *(f"--ssh-option={o}" for o in ssh_options(sshd))]
    with TmuxTerminal(argv, env=env, width=160, height=40) as term:
        term.wait_for("over SSH", timeout=90)
        term.wait_for("new session — say something", timeout=60)
        term.line("hello there")
        term.wait_for("the remote TUI answer")
        term.press("C-q")
        assert term.exit_status() == 0
    with SessionStore(remote_home / "state.db") as store:
        assert [s.surface for s in store.list_sessions()] == ["tui"]
    assert not (hermes_home / "state.db").exists()  # nothing ran locally


def test_hermes_desktop_over_ssh_opens_the_remote_servers_page_and_runs_there(
        sshd: SSHServer, model_server: Any, tmp_path: Path, hermes_home: Path) -> None:
    """``hermes desktop --ssh HOST --no-open``: the page at the tunnel's local port is the remote server's,
    it takes the token from the 0600 file, and the turn runs and is stored on the remote machine; then
    ``--url`` names the same server's page, and a path that is not the root is refused."""
    import shutil

    from surfaces.desktop.harness import need_browser

    need_browser()
    from playwright.sync_api import sync_playwright

    remote_home = tmp_path / "remote_home"
    remote_home.mkdir()
    model = model_server([Reply(content="the remote desktop answer")])
    (remote_home / "config.yaml").write_text(f"model:\n  base_url: {model.url}\n  name: m\n  max_retries: 0\n")
    env = {**os.environ, "HERMES_HOME": str(hermes_home), "PYTHONPATH": SRC}
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "desktop", "--no-open", "--ssh", f"{sshd.user}@127.0.0.1",
                             "--remote-command", remote_hermes(remote_home),
                             *(f"--ssh-option={o}" for o in ssh_options(sshd))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("hermes desktop on http://127.0.0.1:") and "over SSH" in first, (
            first, proc.stderr.read() if proc.poll() is not None else "")
        url = first.split()[3]
        second = proc.stdout.readline()
        token_file = hermes_home / "remote_token"
        assert str(token_file) in second and token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert token not in first + second
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(f"{url}#token={token}")
                page.wait_for_function("document.documentElement.dataset.ready === 'true'", timeout=30_000)
                page.fill('[data-tour="composer-input"]', "hello from the desktop")
                page.press('[data-tour="composer-input"]', "Enter")
                page.wait_for_function("[...document.querySelectorAll('.message[data-role=\"assistant\"]')]"
                                       ".some(m => m.textContent === 'the remote desktop answer')", timeout=30_000)
            finally:
                browser.close()
        with SessionStore(remote_home / "state.db") as store:
            assert [s.surface for s in store.list_sessions()] == ["desktop"]
        assert not (hermes_home / "state.db").exists()  # nothing ran locally

        ws_url = "ws://" + url.split("://", 1)[1] + "rpc"
        by_address = subprocess.Popen([sys.executable, "-m", "hermes", "desktop", "--no-open", "--url", ws_url,
                                       "--token-file", str(token_file)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert by_address.stdout is not None
            assert by_address.stdout.readline().startswith(f"hermes desktop on {url} ")
        finally:
            by_address.terminate()
            by_address.communicate(timeout=30)
        refused = subprocess.run([sys.executable, "-m", "hermes", "desktop", "--no-open", "--url",
                                  ws_url.replace("/rpc", "/hermes/rpc")],
                                 capture_output=True, text=True, env=env, timeout=60)
        assert refused.returncode != 0 and "served at the server's root" in refused.stderr
    finally:
        proc.terminate()
        code = proc.wait(30)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    assert code == 0
    deadline = time.monotonic() + 20
    while serve_processes(remote_home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not serve_processes(remote_home)  # leaving hermes desktop stops the remote server


def test_hermes_desktop_refuses_a_plain_ws_address_of_another_machine(tmp_path: Path) -> None:
    """The page and its token would travel without TLS: refused before anything connects (192.0.2.0/24 is
    a documentation range: nothing answers there, so a connect attempt would show as a timeout instead)."""
    env = {**os.environ, "HERMES_HOME": str(tmp_path / "home")}
    refused = subprocess.run([sys.executable, "-m", "hermes", "desktop", "--no-open", "--url",
                              "ws://192.0.2.10:8787/rpc"], capture_output=True, text=True, env=env, timeout=60)
    assert refused.returncode != 0 and "ws:// has no TLS" in refused.stderr and "--ssh HOST" in refused.stderr
