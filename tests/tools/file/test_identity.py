"""Protection by identity: a hard link (or a symlink) to a protected file is refused like the file itself,
and SSH key material is sensitive in any user's ``.ssh`` folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.file.patch
import hermes.tools.file.read
import hermes.tools.file.search
import hermes.tools.file.write  # noqa: F401  (registers the tools)
from hermes.tools.registry import registry
from hermes.tools.sensitive import credential_store, sensitive_by_name


def call(tool: str, **args: Any) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(registry.dispatch(tool, args, task_id="t1"))
    return result


def refused(tool: str, **args: Any) -> str:
    result = call(tool, **args)
    assert "error" in result, (tool, args, result)
    return str(result["error"])


@pytest.mark.parametrize("name", [".env", "auth.json"])
def test_a_hard_link_to_a_hermes_secret_is_refused_like_the_file(ws: Path, hermes_home: Path, name: str) -> None:
    secret = hermes_home / name
    secret.write_text("OPENAI_API_KEY=sk-live-needle-0123456789\n")
    os.link(secret, ws / "notes.txt")  # same device and inode, an innocent name
    (ws / "plain.txt").write_text("nothing here\n")
    assert "hard link to" in refused("read_file", path="notes.txt")
    assert "hard link to" in refused("write_file", path="notes.txt", content="x\n")
    assert "hard link to" in refused("patch", path="notes.txt", old_string="OPENAI", new_string="X")
    assert "hard link to" in refused("search_files", pattern="needle", path="notes.txt")
    assert secret.read_text() == "OPENAI_API_KEY=sk-live-needle-0123456789\n"
    assert os.stat(ws / "notes.txt").st_ino == os.stat(secret).st_ino  # nothing replaced the link either
    (ws / "plain.txt").write_text("x\n")
    assert "error" not in call("read_file", path="plain.txt")


def test_search_results_never_show_a_hard_link_to_a_secret(ws: Path, hermes_home: Path, engine: str) -> None:
    secret = hermes_home / ".env"
    secret.write_text("TOKEN=needle\n")
    os.link(secret, ws / "copy.txt")
    os.link(secret, os.fsencode(ws) + b"/\xff-link.txt")  # a name that is not UTF-8 is found again
    (ws / "mine.txt").write_text("needle\n")
    os.link(ws / "mine.txt", ws / "mine-too.txt")  # two names of an ordinary file both show
    content = call("search_files", pattern="needle")
    assert content["engine"] == engine
    assert [m["file"] for m in content["matches"]] == ["mine-too.txt", "mine.txt"]
    names = call("search_files", pattern="*", target="files")
    assert names["files"] == ["mine-too.txt", "mine.txt"]


def test_a_hard_link_to_config_yaml_is_never_written_but_may_be_read(ws: Path, hermes_home: Path) -> None:
    config = hermes_home / "config.yaml"
    config.write_text("model:\n  name: m\n")
    os.link(config, ws / "settings.yaml")
    assert "error" not in call("read_file", path="settings.yaml")
    assert "hard link to" in refused("patch", path="settings.yaml", old_string="name: m", new_string="name: n")
    assert config.read_text() == "model:\n  name: m\n"


def test_a_hard_link_to_a_private_ssh_key_is_refused(ws: Path, tmp_path: Path) -> None:
    ssh = tmp_path / "home/.ssh"
    ssh.mkdir()
    key = ssh / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    os.link(key, ws / "key.txt")
    assert "hard link to" in refused("read_file", path="key.txt")
    known = ssh / "known_hosts"
    known.write_text("host ssh-ed25519 AAAA\n")
    os.link(known, ws / "hosts.txt")  # public material read through a link stays readable...
    assert "error" not in call("read_file", path="hosts.txt")
    assert "hard link to" in refused("write_file", path="hosts.txt", content="x\n")  # ...but never written


def test_a_symlink_to_a_hermes_secret_is_refused(ws: Path, hermes_home: Path) -> None:
    secret = hermes_home / ".env"
    secret.write_text("TOKEN=needle\n")
    (ws / "link").symlink_to(secret)
    assert "hermes's own secrets" in refused("read_file", path="link")
    assert "hermes's own" in refused("write_file", path="link", content="x")
    assert "hermes's own" in refused("patch", path="link", old_string="TOKEN", new_string="X")
    assert "not allowed" in refused("search_files", pattern="needle", path="link")


def test_key_material_in_any_users_ssh_folder(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "srv/bob/.ssh"
    other.mkdir(parents=True)
    for name in ("id_work", "github", "deploy.pem", "known_hosts", "authorized_keys", "config", "id_work.pub"):
        (other / name).write_text("needle\n")
    for name in ("id_work", "github", "deploy.pem"):
        assert "SSH key material" in refused("read_file", path=str(other / name)), name
    for name in ("known_hosts", "authorized_keys", "config", "id_work.pub"):
        assert "error" not in call("read_file", path=str(other / name)), name
    assert "credential store" in refused("write_file", path=str(other / "authorized_keys"), content="ssh-rsa X\n")
    assert "credential store" in refused("write_file", path=str(other / "new_key"), content="x\n")
    found = call("search_files", pattern="needle", path=str(other))
    assert sorted(Path(m["file"]).name for m in found["matches"]) == [
        "authorized_keys", "config", "id_work.pub", "known_hosts"]  # fmt: skip


def test_the_rules_cover_every_home_folder() -> None:
    assert sensitive_by_name(Path("/root/.ssh/id_rsa")) == "it is SSH key material"
    assert sensitive_by_name(Path("/home/bob/.ssh/id_ecdsa")) == "it is SSH key material"
    assert sensitive_by_name(Path("/etc/ssh/ssh_host_ed25519_key")) == "it is SSH key material"
    assert sensitive_by_name(Path("/etc/ssh/ssh_host_ed25519_key.pub")) is None
    assert sensitive_by_name(Path("/home/bob/.aws/credentials")) == "it is a credential store"
    assert sensitive_by_name(Path("/root/.netrc")) == "it is a credential store"
    assert sensitive_by_name(Path("/home/bob/.gnupg/private-keys-v1.d/x.key")) == "it is a credential store"
    assert sensitive_by_name(Path("/home/bob/project/.netrc")) is None  # a project file, not a home's
    assert credential_store(Path("/home/bob/.aws/config")) == Path("/home/bob/.aws")
    assert credential_store(Path("/root/.ssh/authorized_keys")) == Path("/root/.ssh")
    assert credential_store(Path("/home/bob/.npmrc")) == Path("/home/bob/.npmrc")
    assert credential_store(Path("/home/bob/src/app.py")) is None
