"""docs/first-hour.md followed step by step, as a new user would: every command in a real terminal (tmux),
the gateway's login page and dashboard in a real Chromium (Playwright, ``/usr/bin/chromium``).

Stand-ins, all on loopback: the scripted model server for "your model", the SearXNG fake for "your search
engine". The walk records each command it types (ports written as the page writes them) and, at the end,
compares that list with the page's ``$`` lines: a page and a test that drift apart fail here.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import ScriptedModelServer, call, text
from fakes.pg_redis import free_port
from fakes.terminal import TmuxTerminal, have_tmux
from fakes.vendors import ServerThread, searxng_app
from hermes.agent.local_model import local_model_available
from tools.browser.support import need_browser

DOC = Path(__file__).resolve().parents[2] / "docs" / "first-hour.md"
DOC_GATEWAY, DOC_SEARXNG, DOC_MODEL = "http://127.0.0.1:8787", "http://127.0.0.1:8888", "http://127.0.0.1:8000/v1"
PROMPT = "you ›"
QUESTION = "What do people say about the hermes agent?"

pytestmark = [pytest.mark.skipif(not have_tmux(), reason="tmux is not installed"),
              pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")]


def doc_commands() -> list[str]:
    """The ``$`` lines of the page's ``console`` blocks, in order."""
    commands, inside = [], False
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```console"
            continue
        if inside and line.startswith("$ "):
            commands.append(line[2:].strip())
    return commands


class Walk:
    """One person's machine: a HERMES_HOME, their terminals, and the commands they typed."""

    def __init__(self, home: Path, spellings: dict[str, str]) -> None:
        self.home = home
        self.spellings = spellings  # the real address → how the page writes it
        self.typed: list[str] = []
        self.terminals: list[TmuxTerminal] = []
        self.env = {"HERMES_HOME": str(home), "HOME": str(home.parent), "LANG": "C.UTF-8",
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if os.environ.get("PYTHONPATH"):
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]

    def hermes(self, *args: str, as_typed: str | None = None, width: int = 160) -> TmuxTerminal:
        """``hermes ARGS`` in a new terminal; recorded as the page writes it (``as_typed`` when it differs)."""
        line = " ".join(f'"{a}"' if " " in a else a for a in args)
        for real, written in self.spellings.items():
            line = line.replace(real, written)
        self.typed.append(as_typed or f"hermes {line}")
        term = TmuxTerminal([sys.executable, "-m", "hermes", *args], env=self.env, width=width, height=50)
        self.terminals.append(term)
        return term

    def finished(self, term: TmuxTerminal, timeout: float = 60) -> str:
        assert term.exit_status(timeout) == 0, term.screen(history=True)
        return term.screen(history=True)

    def close(self) -> None:
        for term in self.terminals:
            term.close()


@pytest.fixture
def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Walk]:
    for name in [n for n in os.environ if n.startswith(("OPENAI_", "HERMES_", "OPENROUTER_", "TOOL_GATEWAY"))]:
        monkeypatch.delenv(name)
    home = tmp_path / ".hermes"
    home.mkdir()
    person = Walk(home, {})
    yield person
    person.close()


def _tool_result(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request["messages"] if m.get("role") == "tool")


@pytest.mark.timeout(600)
def test_the_first_hour_as_the_page_tells_it(walk: Walk) -> None:
    need_browser()
    from playwright.sync_api import sync_playwright

    searches = [call("web_search", {"query": "hermes agent"}), text("People like its tools.")]
    script = [text("Hello! I am your model."), *searches, *searches]
    with ScriptedModelServer(script, model="my-model") as model, ServerThread(searxng_app()) as searxng, \
            sync_playwright() as playwright:
        gateway = f"http://127.0.0.1:{free_port()}"
        walk.spellings.update({model.url: DOC_MODEL, searxng.url: DOC_SEARXNG, gateway: DOC_GATEWAY})
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            _install_and_first_answer(walk)
            _connect_a_model(walk, model)
            _pick_tools(walk, model, searxng.url)
            server = _host_a_gateway(walk, gateway, searxng.url)
            _log_in(walk, browser, gateway, model)
            _see_the_usage(walk, browser)
            server.press("C-c")
            assert walk.finished(server, 30)
        except BaseException:
            for typed, term in zip(walk.typed, walk.terminals, strict=False):  # what each terminal showed
                print(f"\n==== $ {typed}\n{term.screen(history=True)}")
            raise
        finally:
            browser.close()
    assert walk.typed == doc_commands()


def _install_and_first_answer(walk: Walk) -> None:
    term = walk.hermes("chat", "--demo", as_typed="bash scripts/run.sh chat --demo")
    if local_model_available():
        shown = walk.finished(term, 480)
        assert "⚙ read_file(" in shown and "demo_notes.txt" in shown
        assert "The nightly backup starts at 02:00" in shown
        assert "Next: connect a real model with 'hermes setup'." in shown
    else:  # without the local extra the demo says what to install instead of failing obscurely
        assert term.exit_status(60) != 0
        assert "hermes[local]" in term.screen(history=True)


def _connect_a_model(walk: Walk, model: ScriptedModelServer) -> None:
    term = walk.hermes("setup")
    term.wait_for("Provider [number or name")
    term.line("custom")
    term.wait_for("Base URL [required]:")
    term.line(model.url)
    term.wait_for("Model name [required]:")
    term.line("my-model")
    term.wait_for("Environment variable holding the API key")
    term.line("")
    term.wait_for("API key (saved in .env as OPENAI_API_KEY")
    term.line("sk-my-own-key")
    term.wait_for("Test the endpoint now? [Y/n]:")
    term.line("")
    term.wait_for("✓ the endpoint answered and lists my-model")
    term.wait_for("(Enter: skip, -: skip the rest):")
    term.line("-")
    shown = walk.finished(term)
    assert "Setup finished." in shown and "sk-my-own-key" not in shown
    assert "sk-my-own-key" not in (walk.home / "config.yaml").read_text()
    assert (walk.home / ".env").stat().st_mode & 0o777 == 0o600

    chat = walk.hermes("chat")
    shown = chat.wait_for_prompt(PROMPT, 1)
    assert f"hermes · my-model at {model.url}" in shown
    chat.line("hello")
    chat.wait_for("Hello! I am your model.")
    chat.wait_for_prompt(PROMPT, 2)
    chat.line("/model")
    chat.wait_for("model my-model at")
    chat.wait_for_prompt(PROMPT, 3)
    chat.press("C-d")
    assert "Resume with: hermes chat --resume" in walk.finished(chat)
    assert model.requests[-1]["model"] == "my-model"


def _pick_tools(walk: Walk, model: ScriptedModelServer, searxng: str) -> None:
    listing = walk.finished(walk.hermes("tools", "list"))
    assert "web_search" in listing

    picker = walk.hermes("tools")
    picker.wait_for("Tool backends — choose a tool category")
    picker.press("Enter")  # Web tools is the first row
    picker.wait_for("Web tools — choose a backend")
    _choose(picker, "SearXNG")
    picker.wait_for("SEARXNG_URL (saved in .env, shown as you type")
    picker.line(searxng)
    shown = picker.wait_for("Tool backends — choose a tool category", count=2)  # back at the first screen
    assert "Set web.backend = searxng." in shown
    assert "Web search        ○ active via SearXNG (SEARXNG_URL)" in shown
    picker.press("C-d")
    walk.finished(picker)

    asked = len(model.requests)
    answer = walk.finished(walk.hermes("chat", "-q", QUESTION))
    assert "People like its tools." in answer
    assert "Searx 1: hermes agent" in _tool_result(model.requests[asked + 1])


def _choose(picker: TmuxTerminal, label: str) -> None:
    """Move the picker's cursor down to the row starting with ``label`` and press Enter."""
    def cursor_row(shown: str) -> str:
        rows = [ln[3:] for ln in shown.splitlines() if ln.startswith(" ❯ ")]
        return rows[-1] if rows else ""

    at = cursor_row(picker.wait_until(cursor_row, "the picker's cursor", 10))
    for _ in range(20):
        if at.startswith(label):
            picker.press("Enter")
            return
        picker.press("Down")  # then wait for the redraw to finish: the cursor on another row
        at = cursor_row(picker.wait_until(lambda s, was=at: cursor_row(s) not in ("", was), "the cursor moving", 10))
    raise AssertionError(f"no row {label!r}:\n{picker.screen()}")


def _host_a_gateway(walk: Walk, gateway: str, searxng: str) -> TmuxTerminal:
    added = walk.finished(walk.hermes("toolgateway", "users", "add", "alice", "--plan", "paid"))
    assert "added alice" in added
    port = gateway.rsplit(":", 1)[1]
    walk.spellings[f"--port {port} "] = ""  # the page uses the default port; the test takes a free one
    server = walk.hermes("toolgateway", "serve", "--port", port, "--searxng-url", searxng, width=220)
    shown = server.wait_for("relay modal:")
    assert f"hermes Tool Gateway on {gateway}" in shown
    assert f"search via SearXNG ({searxng})" in shown
    assert "relay openai-audio: off — no vendor key (OPENAI_API_KEY)" in shown
    return server


def _log_in(walk: Walk, browser: Any, gateway: str, model: ScriptedModelServer) -> None:
    login = walk.hermes("portal", "login", "--portal-url", gateway)
    shown = login.wait_for("Waiting for approval…")
    assert f"{gateway}/device?user_code=" in shown
    code = re.search(r"code: ([A-Z]{4}-[A-Z]{4})", shown)
    assert code is not None, shown
    linked = walk.finished(walk.hermes("toolgateway", "users", "login-link", "alice"))
    link = linked.split("[exit status")[0].split()[-1]
    assert link.startswith(f"{gateway}/device?login=ll_")

    page = browser.new_page()
    page.goto(link)
    assert "Signed in as alice" in page.inner_text("body")
    page.fill('input[name="user_code"]', code.group(1))
    page.click('button[value="approve"]')
    page.wait_for_load_state()
    page.close()
    assert "✓ Logged in. Plan: paid" in walk.finished(login)

    picker = walk.hermes("tools")
    picker.wait_for("Tool backends — choose a tool category")
    picker.press("Enter")
    picker.wait_for("Web tools — choose a backend")
    _choose(picker, "Nous Subscription")
    shown = picker.wait_for("Tool backends — choose a tool category", count=2)  # back at the first screen
    assert "Set web.backend = nous." in shown
    assert f"Web tools         ✓ active via the Tool Gateway at {gateway}" in shown
    picker.press("C-d")
    walk.finished(picker)

    info = walk.finished(walk.hermes("portal", "info"))
    assert re.search(rf"Web tools\s+✓ active via the Tool Gateway at {re.escape(gateway)}", info), info
    assert f"Portal:  {gateway}" in info

    asked = len(model.requests)
    answer = walk.finished(walk.hermes("chat", "-q", QUESTION))
    assert "People like its tools." in answer
    assert "Searx 1: hermes agent" in _tool_result(model.requests[asked + 1])


def _see_the_usage(walk: Walk, browser: Any) -> None:
    linked = walk.finished(walk.hermes("toolgateway", "users", "login-link", "alice", "--dashboard"))
    link = linked.split("[exit status")[0].split()[-1]
    page = browser.new_page()
    page.goto(link)
    page.wait_for_load_state("networkidle")
    shown, rows = page.inner_text("body"), page.eval_on_selector_all(
        "#by-tool tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))")
    page.close()
    assert "Signed in as alice (plan paid)" in shown, shown
    searched = [row for row in rows if row[0] == "Web search"]
    assert searched and searched[0][3] == "1", rows  # one call: the question of step 5
