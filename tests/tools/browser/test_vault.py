"""The browser vault: the store on disk, `hermes browser vault`, and the five tools in a real Chromium
against login pages on 127.0.0.1 — the password and the TOTP secret reach the page and nothing else."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pyotp
import pytest

from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.errors import ConfigError
from hermes.tools.browser.vault import Vault, site_of
from hermes.tools.requests import Request
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import BROWSER_CORE, BROWSER_VAULT, Surface
from tools.browser.pages import VAULT_ROUTES as ROUTES
from tools.browser.pages import PageServer
from tools.browser.support import BrowserHarness, call, close, need_browser

PASSWORD = "correct-horse-7Qz!battery"
TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DP"


@pytest.fixture(autouse=True)
def no_os_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key goes to the 0600 key file whatever keyring the developer's machine has (keyring's own
    switch; the CLI subprocesses inherit it)."""
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture(scope="module")
def site() -> Iterator[PageServer]:
    server = PageServer(dict(ROUTES)).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[PageServer]:
    """Another origin (another port) serving the same pages."""
    server = PageServer(dict(ROUTES)).start()
    yield server
    server.stop()


class Person:
    """A sink whose person answers every question with ``answer`` and remembers the questions."""

    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.asked: list[Request] = []

    def emit(self, event: Any) -> None:
        return None

    def ask(self, request: Request) -> str | None:
        self.asked.append(request)
        return self.answer


@pytest.fixture(scope="module")
def vault_browser(tmp_path_factory: pytest.TempPathFactory, site: PageServer) -> Iterator[BrowserHarness]:
    need_browser()
    import hermes.tools.browser.vault_tools  # noqa: F401 - registers the vault tools

    home: Path = tmp_path_factory.mktemp("vault_home")
    harness = BrowserHarness(home, site)
    harness.configure("browser:\n  allow_private_urls: true\n  vault:\n    enabled: true\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HERMES_HOME", str(home))
        yield harness
    harness.shutdown()


def vault_session(harness: BrowserHarness, person: Person | None = None) -> ToolSession:
    settings = Settings.load(HermesPaths(harness.home))
    context = SessionContext.from_settings(settings, task_id=f"vault-{os.urandom(4).hex()}",
                                           surface=Surface.CLI if person else Surface.CRON, sink=person)
    return ToolSession(harness.registry, (*BROWSER_CORE, *BROWSER_VAULT), context)


# -- the store ------------------------------------------------------------------------------------------------
def test_the_vault_file_holds_no_secret_and_both_files_are_private(tmp_path: Path) -> None:
    vault = Vault(tmp_path)
    entry = vault.add("https://Example.COM:443/login?x=1", "alice", PASSWORD, TOTP_SECRET.lower())
    assert entry.site == "https://example.com" and entry.handle.startswith("v-")
    for path in (vault.path, vault.key_path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    blob = vault.path.read_bytes()
    assert PASSWORD.encode() not in blob and TOTP_SECRET.encode() not in blob and b"alice" not in blob
    again = Vault(tmp_path).find(entry.handle)
    assert again is not None and again.password == PASSWORD and again.totp_secret == TOTP_SECRET
    assert PASSWORD not in json.dumps(again.public()) and "key file" in vault.key_store()


def test_a_changed_key_or_a_bad_totp_secret_is_a_clear_error(tmp_path: Path) -> None:
    vault = Vault(tmp_path)
    vault.add("http://127.0.0.1:9", "bob", PASSWORD)
    with pytest.raises(ConfigError, match="TOTP secret is not base32"):
        vault.add("http://127.0.0.1:9", "bob", PASSWORD, "not base32 at all!")
    vault.key_path.write_text("A" * 44 + "\n")
    with pytest.raises(ConfigError, match="cannot be decrypted"):
        vault.entries()
    with pytest.raises(ConfigError, match="not a site address"):
        site_of("ftp://example.com")


def test_the_cli_adds_from_stdin_lists_and_removes(tmp_path: Path) -> None:
    env = {**os.environ, "HERMES_HOME": str(tmp_path)}

    def hermes(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hermes", "browser", "vault", *argv], input=stdin,
                              capture_output=True, text=True, env=env, timeout=60)

    added = hermes("add", "http://127.0.0.1:8000/signin", "carol", "--totp", stdin=f"{PASSWORD}\n{TOTP_SECRET}\n")
    assert added.returncode == 0, added.stderr
    assert "carol at http://127.0.0.1:8000 (with TOTP)" in added.stdout and PASSWORD not in added.stdout
    listed = hermes("list", "--json")
    data = json.loads(listed.stdout)
    assert data["key"].startswith("key file") and PASSWORD not in listed.stdout
    (entry,) = data["entries"]
    assert entry["username"] == "carol" and entry["has_totp"] is True
    assert hermes("add", "http://127.0.0.1:8000", "dave", "--password", PASSWORD).returncode == 2
    assert hermes("remove", entry["handle"], stdin="n\n").returncode == 1
    removed = hermes("remove", entry["handle"], "--yes")
    assert removed.returncode == 0 and "deleted" in removed.stdout
    assert json.loads(hermes("list", "--json").stdout)["entries"] == []


# -- the tools in Chromium -------------------------------------------------------------------------------------
def test_the_vault_tools_are_offered_only_when_the_vault_is_on(vault_browser: BrowserHarness) -> None:
    session = vault_session(vault_browser)
    assert set(BROWSER_VAULT) <= {d["function"]["name"] for d in session.definitions()}
    vault_browser.configure("browser:\n  allow_private_urls: true\n")
    try:
        offered = {d["function"]["name"] for d in vault_session(vault_browser).definitions()}
        assert "browser_navigate" in offered and not offered & set(BROWSER_VAULT)
    finally:
        vault_browser.configure("browser:\n  allow_private_urls: true\n  vault:\n    enabled: true\n")


def test_a_login_form_is_filled_from_the_vault_and_the_password_stays_out_of_results(
        vault_browser: BrowserHarness, site: PageServer, elsewhere: PageServer) -> None:
    entry = Vault(vault_browser.home).add(site.url("/"), "alice@example.com", PASSWORD)
    session = vault_session(vault_browser)
    results: list[str] = []
    try:
        results.append(json.dumps(call(session, "browser_navigate", url=site.url("/signin"))))
        listed = call(session, "browser_vault_list")
        results.append(json.dumps(listed))
        assert listed["entries"] == [entry.public()]
        filled = call(session, "browser_vault_fill", handle=entry.handle)
        results.append(json.dumps(filled))
        assert "filled username and password" in filled["result"], filled
        # a script could read the filled field back in any encoding: none runs on this page any more
        for expression in ("btoa(document.querySelector('input[type=password]').value)",
                           "document.querySelector('input[type=password]').value"):
            read_back = call(session, "browser_console", expression=expression)
            results.append(json.dumps(read_back))
            assert "refused" in read_back["error"] and "vault filled a secret" in read_back["error"], read_back
        results.append(json.dumps(call(session, "browser_press", key="Enter")))
        assert "\n2\n" in call(session, "browser_console", expression="1 + 1")["result"], "scripts run again"
        body = dict(site.posts)["/welcome"]
        assert parse_qs(body) == {"login": ["alice@example.com"], "pw": [PASSWORD]}
        # another origin: listed as nothing, and a fill by handle is refused inside the page
        results.append(json.dumps(call(session, "browser_navigate", url=elsewhere.url("/signin"))))
        assert call(session, "browser_vault_list")["entries"] == []
        refused = call(session, "browser_vault_fill", handle=entry.handle)
        results.append(json.dumps(refused))
        assert "refused: the page is at" in refused["error"] and entry.site in refused["error"]
        assert elsewhere.posts == []
        status = call(session, "browser_vault_status")
        assert status["usable"] is True and status["entries_for_this_site"] == 0
        assert "no vault entry v-00" in call(session, "browser_vault_fill", handle="v-00")["error"]
    finally:
        close(session)
    assert all(PASSWORD not in text for text in results)


def test_password_change_and_sign_up_forms_are_never_filled(vault_browser: BrowserHarness, site: PageServer) -> None:
    entry = Vault(vault_browser.home).add(site.url("/"), "erin", PASSWORD)
    session = vault_session(vault_browser)
    try:
        for page in ("/change", "/signup"):
            call(session, "browser_navigate", url=site.url(page))
            refused = call(session, "browser_vault_fill", handle=entry.handle)
            assert "new password" in refused["error"], refused
            values = call(session, "browser_console",
                          expression="'VALUES<' + Array.from(document.querySelectorAll('input'))"
                                                ".map(i => i.value).join('') + '>'")
            assert "VALUES<>" in values["result"], values
    finally:
        close(session)


def test_a_totp_field_gets_a_valid_code_that_no_result_shows(vault_browser: BrowserHarness, site: PageServer) -> None:
    entry = Vault(vault_browser.home).add(site.url("/"), "frank", PASSWORD, TOTP_SECRET)
    plain = Vault(vault_browser.home).add(site.url("/"), "gina", PASSWORD)
    session = vault_session(vault_browser)
    try:
        call(session, "browser_navigate", url=site.url("/two-step"))
        assert "no TOTP secret" in call(session, "browser_vault_totp", handle=plain.handle)["error"]
        filled = call(session, "browser_vault_totp", handle=entry.handle)
        assert filled == {"result": f"filled the one-time code of frank for {entry.site}"}
        call(session, "browser_press", key="Enter")
        body = dict(site.posts)["/verified"]
        form = parse_qs(body)
        assert "mail" not in form and pyotp.TOTP(TOTP_SECRET).verify(form["otp"][0], valid_window=1)
        call(session, "browser_navigate", url=site.url("/signin"))
        assert "no one-time-code field" in call(session, "browser_vault_totp", handle=entry.handle)["error"]
    finally:
        close(session)


def test_saving_a_typed_login_needs_the_person(vault_browser: BrowserHarness, site: PageServer) -> None:
    typed = "typed-by-the-person-9x"

    def type_login(session: ToolSession) -> None:
        call(session, "browser_navigate", url=site.url("/signin"))
        call(session, "browser_console", expression=(
            f"(document.querySelector('[name=login]').value = 'henry', "
            f"document.querySelector('[name=pw]').value = '{typed}', 1)"))

    nobody = vault_session(vault_browser)
    saying_no, saying_yes = Person("deny"), Person("once")
    try:
        type_login(nobody)
        assert "nobody can be asked" in call(nobody, "browser_vault_save")["error"]
        no = vault_session(vault_browser, saying_no)
        type_login(no)
        assert "did not confirm" in call(no, "browser_vault_save")["error"]
        yes = vault_session(vault_browser, saying_yes)
        type_login(yes)
        saved = call(yes, "browser_vault_save")
        close(no)
        close(yes)
    finally:
        close(nobody)
    assert saved["entry"]["username"] == "henry" and typed not in json.dumps(saved)
    (question,) = saying_yes.asked
    assert question.kind == "approval" and "henry" in question.payload["command"]
    assert typed not in json.dumps(question.payload)
    stored = Vault(vault_browser.home).find(saved["entry"]["handle"])
    assert stored is not None and stored.password == typed and stored.site == site_of(site.url("/"))
