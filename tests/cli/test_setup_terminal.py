"""``hermes setup terminal`` in a real terminal (tmux): choose ssh, answer the questions, test it against a
real sshd, save — comments of config.yaml kept; then the tools use what was saved. A backend whose test
fails (docker without an engine) is not saved unless the person says so."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.sshd import SSHServer, have_sshd
from fakes.terminal import TmuxTerminal, have_tmux
from hermes.config.yamlfile import ConfigFile

pytestmark = pytest.mark.skipif(not have_tmux(), reason="tmux is not installed")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SSHServer]:
    if not have_sshd():
        pytest.skip("needs sshd (Debian openssh-server)")
    with SSHServer(tmp_path_factory.mktemp("sshd-setup")) as server:
        yield server


def _terminal(home: Path) -> TmuxTerminal:
    env = {"HERMES_HOME": str(home), "PATH": os.environ.get("PATH", ""),
           "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "HOME": os.environ.get("HOME", "/root")}
    return TmuxTerminal([sys.executable, "-m", "hermes", "setup", "terminal"], env=env)


def test_choose_test_and_save_ssh(hermes_home: Path, sshd: SSHServer, tmp_path: Path) -> None:
    config = hermes_home / "config.yaml"
    config.write_text("# my settings\nmodel:\n  name: m1  # keep this comment\n", encoding="utf-8")
    s = sshd.settings()
    with _terminal(hermes_home) as term:
        term.wait_for("Backend [1]:")
        term.line("2")
        term.wait_for("Host [none]:")
        term.line(s["host"])
        term.wait_for("Port [22]:")
        term.line(str(s["port"]))
        term.wait_for("User [")
        term.line(s["user"])
        term.wait_for("Private key file")
        term.line(s["key_file"])
        term.wait_for("known_hosts file")
        term.line(s["known_hosts"])
        term.wait_for("Working directory there")
        term.line(str(tmp_path))
        term.wait_for("Test it now? [Y/n]:")
        term.line("")
        shown = term.wait_for("Saved terminal.backend")
        assert f"✓ ran on ssh {s['user']}@127.0.0.1:{s['port']}" in shown
        assert term.exit_status() == 0
    text = config.read_text(encoding="utf-8")
    assert "# my settings" in text and "# keep this comment" in text
    saved = ConfigFile.load(config)
    assert saved.get("terminal.backend") == "ssh" and saved.get("terminal.ssh.port") == s["port"]
    assert saved.get("terminal.ssh.key_file") == s["key_file"]
    # the tools now run there: the choice is the config's
    saved.set("approvals.allow", ["unproven"])
    saved.save()
    import subprocess

    script = ("import json, hermes.tools.terminal.tool\n"
              "from hermes.tools.registry import registry\n"
              "print(registry.dispatch('terminal', {'command': 'echo $SSH_CONNECTION'}, task_id='t'))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HERMES_HOME": str(hermes_home)})
    assert f"127.0.0.1 {s['port']}" in json.loads(out.stdout)["output"], out.stderr


def test_a_failed_test_saves_nothing_unless_asked(hermes_home: Path) -> None:
    config = hermes_home / "config.yaml"
    config.write_text("terminal:\n  backend: local  # as before\n", encoding="utf-8")
    with _terminal(hermes_home) as term:
        term.wait_for("Backend [1]:")
        term.line("docker")
        for prompt in ("Image [", "Memory limit [", "CPUs [", "Network ("):
            term.wait_for(prompt)
            term.line("")
        term.wait_for("Test it now? [Y/n]:")
        term.line("y")
        term.wait_for("Save it anyway? [y/N]:")
        term.line("")
        shown = term.wait_for("Nothing was saved.")
        assert "✗" in shown
        assert term.exit_status() == 1
    assert config.read_text(encoding="utf-8") == "terminal:\n  backend: local  # as before\n"
