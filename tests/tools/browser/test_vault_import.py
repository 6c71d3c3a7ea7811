"""``hermes browser vault import``: logins from the 1Password (``op``) and Bitwarden (``bw``) CLIs.

The CLIs are stand-ins on PATH that print what the real ones print (``op item list/get --format json``,
``bw status`` / ``bw list items``) and log how they were called; hermes runs as a real subprocess."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes.tools.browser.vault import Vault

PASSWORD_1P = "op-secret-Pa55!word"
PASSWORD_BW = "bw-secret-Pa55!word"
TOTP = "JBSWY3DPEHPK3PXP"

OP_ITEMS = [
    {"id": "aaaa1111", "title": "Example shop", "category": "LOGIN",
     "urls": [{"label": "website", "href": "https://shop.example.com/login"}]},
    {"id": "bbbb2222", "title": "Router", "category": "LOGIN", "urls": [{"href": "ssh://router.local"}]},
    {"id": "cccc3333", "title": "Half a login", "category": "LOGIN", "urls": [{"href": "https://half.example"}]},
]
OP_FULL = {
    "aaaa1111": {"id": "aaaa1111", "title": "Example shop", "category": "LOGIN",
                 "urls": [{"href": "https://old.example.com"}, {"primary": True, "href": "https://shop.example.com/x"}],
                 "fields": [{"id": "username", "type": "STRING", "purpose": "USERNAME", "value": "ada@example.com"},
                            {"id": "password", "type": "CONCEALED", "purpose": "PASSWORD", "value": PASSWORD_1P},
                            {"id": "TOTP_x", "type": "OTP", "label": "one-time password",
                             "value": f"otpauth://totp/Shop:ada?secret={TOTP}&issuer=Shop", "totp": "123456"}]},
    "bbbb2222": {"id": "bbbb2222", "title": "Router", "urls": [{"href": "ssh://router.local"}],
                 "fields": [{"purpose": "USERNAME", "value": "admin"}, {"purpose": "PASSWORD", "value": "x"}]},
    "cccc3333": {"id": "cccc3333", "title": "Half a login", "urls": [{"href": "https://half.example"}],
                 "fields": [{"purpose": "USERNAME", "value": "bob"}, {"purpose": "PASSWORD", "value": ""}]},
}
BW_ITEMS = [
    {"object": "item", "id": "1", "type": 1, "name": "Forum",
     "login": {"username": "grace", "password": PASSWORD_BW, "totp": TOTP.lower(),
               "uris": [{"match": None, "uri": "https://forum.example.org/"}]}},
    {"object": "item", "id": "2", "type": 2, "name": "A secure note", "notes": "hello"},
]


def fake_cli(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body), encoding="utf-8")
    path.chmod(0o755)


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "calls.jsonl"
    fake_cli(folder, "op", f"""
        import json, sys
        open({str(log)!r}, "a").write(json.dumps(["op", *sys.argv[1:]]) + "\\n")
        items, full = {json.dumps(OP_ITEMS)!r}, {json.dumps(OP_FULL)!r}
        args = sys.argv[1:]
        if args[:2] == ["item", "list"]:
            print(items)
        elif args[:2] == ["item", "get"]:
            print(json.dumps(json.loads(full)[args[2]]))
        else:
            sys.exit("[ERROR] unknown command")
    """)
    fake_cli(folder, "bw", f"""
        import json, os, sys
        open({str(log)!r}, "a").write(json.dumps(["bw", *sys.argv[1:]]) + "\\n")
        unlocked = os.environ.get("BW_SESSION") == "session-key-1"
        if sys.argv[1:] == ["status"]:
            print(json.dumps({{"serverUrl": None, "userEmail": "g@example.org",
                               "status": "unlocked" if unlocked else "locked"}}))
        elif sys.argv[1:] == ["list", "items"] and unlocked:
            print({json.dumps(BW_ITEMS)!r})
        else:
            sys.exit("You are not logged in.")
    """)
    return folder


def hermes(home: Path, bin_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**{k: v for k, v in os.environ.items() if k != "BW_SESSION"}, "HERMES_HOME": str(home),
               "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
               "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", **env}
    return subprocess.run([sys.executable, "-m", "hermes", "browser", "vault", "import", *args], env=environ,
                          capture_output=True, text=True, timeout=120, check=False)


def test_1password_logins_are_imported_with_their_totp_and_no_secret_is_printed(tmp_path: Path,
                                                                                 bin_dir: Path) -> None:
    home = tmp_path / "home"
    dry = hermes(home, bin_dir, "--from", "1password", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would import 1 login(s)" in dry.stdout and not (home / "browser").exists()
    done = hermes(home, bin_dir, "--from", "1password", "--vault", "Private")
    assert done.returncode == 0, done.stderr
    assert "https://shop.example.com  ada@example.com  [totp]" in done.stdout
    assert "skipped Router: no http(s) address" in done.stdout and "skipped Half a login" in done.stdout
    assert PASSWORD_1P not in done.stdout + done.stderr and TOTP not in done.stdout + done.stderr
    (entry,) = Vault(home).entries()
    assert (entry.site, entry.username, entry.password, entry.totp_secret) == (
        "https://shop.example.com", "ada@example.com", PASSWORD_1P, TOTP)
    vault = Vault(home)
    assert {stat.S_IMODE(p.stat().st_mode) for p in (vault.path, vault.key_path)} == {0o600}
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert ["op", "item", "get", "aaaa1111", "--format", "json", "--reveal", "--vault", "Private"] in calls
    again = hermes(home, bin_dir, "--from", "1password")
    assert again.returncode == 0 and len(Vault(home).entries()) == 1, "an import replaces, never duplicates"


def test_bitwarden_must_be_unlocked_and_then_its_logins_come_in(tmp_path: Path, bin_dir: Path) -> None:
    home = tmp_path / "home"
    locked = hermes(home, bin_dir, "--from", "bitwarden")
    assert locked.returncode == 1 and "bw unlock" in locked.stderr and "locked" in locked.stderr, locked.stderr
    done = hermes(home, bin_dir, "--from", "bitwarden", BW_SESSION="session-key-1")
    assert done.returncode == 0, done.stderr
    assert "imported 1 login(s) from bitwarden; skipped 0" in done.stdout, done.stdout
    assert PASSWORD_BW not in done.stdout + done.stderr
    (entry,) = Vault(home).entries()
    assert (entry.site, entry.username, entry.password, entry.totp_secret) == (
        "https://forum.example.org", "grace", PASSWORD_BW, TOTP)


def test_a_missing_cli_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "nothing"
    empty.mkdir()
    environ = {**os.environ, "HERMES_HOME": str(tmp_path / "home"), "PATH": str(empty)}
    done = subprocess.run([sys.executable, "-m", "hermes", "browser", "vault", "import", "--from", "1password"],
                          env=environ, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1 and "'op' is not installed" in done.stderr, done.stderr
