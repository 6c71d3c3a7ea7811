"""Choosing backends: ``hermes tools set``, the arrow-key picker (pipe and tmux) and the GW-7 checklist.

* ``tools set`` writes one selection key round-trip (comments kept), removes a legacy ``use_gateway``,
  clears the web split keys when the whole web tool is set, and keeps the other web function's route;
* the picker lists "Nous Subscription" first and every vendor, logged in or not, asks for a missing key,
  and writes only the chosen category (driven through a pipe, and in a real terminal under tmux);
* the GW-7 checklist as a table, and ``tool_gateway_declined_tools`` remembered and cleared.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import PipeInput
from prompt_toolkit.output import DummyOutput
from ruamel.yaml import YAML

from hermes.cli.tools import run_picker
from hermes.config.paths import HermesPaths
from hermes.config.settings import Settings
from hermes.errors import ConfigError, GatewayError
from hermes.routing import CATEGORIES, resolve_route
from hermes.routing.choose import apply_selection, choices_for, parse_target
from hermes.routing.credentials import Credentials, load_credentials
from hermes.routing.declined import apply_checklist, build_checklist, default_choice
from hermes.surfaces.picker import Option, checklist, select

DOWN, UP, ENTER, SPACE = "\x1b[B", "\x1b[A", "\r", " "
VENDOR_ENV = sorted({n for c in CATEGORIES.values() for v in c.vendors for n in v.env_names})
GATEWAY_ENV = ["TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_URL",
               "HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL", "FIRECRAWL_GATEWAY_URL"]

COMMENTED = """\
# my hermes config — hand-written
model:
  provider: openai   # inference stays here
  name: gpt-4o

# web tools
web:
  backend: firecrawl   # my own key
  use_gateway: true    # left over from an old version

# images
image_gen:
  provider: fal   # FAL_KEY in .env
  model: fal-ai/flux-2/klein/9b
tts:
  provider: elevenlabs  # my voice
"""


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


PAID_TOKEN = f"{b64(b'{}')}.{b64(json.dumps({'exp': 4_000_000_000, 'paid_access': True}).encode())}.sig"


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [*VENDOR_ENV, *GATEWAY_ENV]:
        monkeypatch.delenv(name, raising=False)
    (hermes_home / "config.yaml").write_text(COMMENTED, encoding="utf-8")
    return hermes_home


def load(home: Path) -> dict[str, Any]:
    data = YAML(typ="safe").load((home / "config.yaml").read_text(encoding="utf-8")) or {}
    assert isinstance(data, dict)
    return data


def set_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in VENDOR_ENV and k not in GATEWAY_ENV}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", "tools", "set", *args], capture_output=True, text=True,
                          env=env, timeout=60)


# -- tools set (ruamel keeps each end-of-line comment at its column) ------------------------------
def test_set_web_search_keeps_every_comment_and_the_other_function(home: Path) -> None:
    proc = set_cli(home, "web.search", "tavily")
    assert proc.returncode == 0, proc.stderr
    # the legacy flag routed web to the gateway: it goes, and web.backend: nous keeps extract there
    assert (home / "config.yaml").read_text() == COMMENTED.replace(
        "  backend: firecrawl   # my own key\n  use_gateway: true    # left over from an old version\n",
        "  backend: nous        # my own key\n  search_backend: tavily\n")
    assert "removed web.use_gateway" in proc.stdout
    assert "Web search        ✗ web.search is configured to use tavily (set via hermes tools), but " \
           "TAVILY_API_KEY is not set." in proc.stdout
    config = load(home)
    creds = Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": PAID_TOKEN})
    assert resolve_route("web.extract", config, {}, creds).kind == "gateway"
    assert resolve_route("web.search", config, {"TAVILY_API_KEY": "t"}, creds).vendor == "tavily"


def test_set_whole_web_clears_split_keys_and_legacy_flag(home: Path) -> None:
    text = COMMENTED.replace("  backend: firecrawl   # my own key\n",
                             "  backend: firecrawl   # my own key\n  search_backend: searxng  # mine\n"
                             "  extract_backend: nous\n")
    (home / "config.yaml").write_text(text)
    proc = set_cli(home, "web", "NOUS")
    assert proc.returncode == 0, proc.stderr
    assert (home / "config.yaml").read_text() == COMMENTED.replace(
        "  backend: firecrawl   # my own key\n  use_gateway: true    # left over from an old version\n",
        "  backend: nous        # my own key\n")
    assert "Not logged in to Nous Portal: run 'hermes portal login'" in proc.stdout


def test_set_image_gen_removes_legacy_only_in_that_category(home: Path) -> None:
    text = COMMENTED.replace("  provider: fal   # FAL_KEY in .env\n",
                             "  provider: fal   # FAL_KEY in .env\n  use_gateway: true\n")
    (home / "config.yaml").write_text(text)
    assert set_cli(home, "image", "nous").returncode == 0
    assert (home / "config.yaml").read_text() == text.replace(
        "  provider: fal   # FAL_KEY in .env\n  use_gateway: true\n", "  provider: nous  # FAL_KEY in .env\n")
    again = set_cli(home, "image_gen", "nous")
    assert "image_gen.provider was already nous." in again.stdout


def test_set_refuses_unknown_names(home: Path) -> None:
    bad = set_cli(home, "web.extract", "brave")
    assert bad.returncode == 1
    assert "'brave' is not a backend for web.extract; choose one of: nous, firecrawl, tavily, exa, local" in bad.stderr
    assert "unknown tool category 'speech'" in set_cli(home, "speech", "nous").stderr
    assert (home / "config.yaml").read_text() == COMMENTED


def test_nous_for_a_category_takes_it_off_the_declined_list(home: Path) -> None:
    path = home / "config.yaml"
    path.write_text(COMMENTED + "tool_gateway_declined_tools: [tts, browser]  # not now\n")
    change = apply_selection(path, parse_target("tts"), "nous")
    assert "tool_gateway_declined_tools[tts]" in change.removed
    assert load(home)["tool_gateway_declined_tools"] == ["browser"]
    assert "tool_gateway_declined_tools: [browser]" in path.read_text()  # the flow style is kept
    apply_selection(path, parse_target("browser"), "nous")
    assert "tool_gateway_declined_tools" not in load(home)
    assert path.read_text().startswith("# my hermes config — hand-written\n")


# -- the GW-7 checklist ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("config", "env", "category", "offered", "checked", "note"), [
    ({"web": {"backend": "searxng"}}, {"SEARXNG_URL": "http://s"}, "web", False, False, "uses searxng (web.backend)"),
    ({"browser": {"cloud_provider": "camofox"}}, {}, "browser", False, False, "uses camofox"),
    ({}, {"SEARXNG_URL": "http://s"}, "web", True, False, "keeps your own backend (SEARXNG_URL)"),
    ({}, {"CAMOFOX_URL": "http://c"}, "browser", True, False, "keeps your own backend (CAMOFOX_URL)"),
    ({}, {}, "tts", True, True, ""),
    ({}, {"FAL_KEY": "k"}, "image_gen", True, True, "your FAL_KEY is kept, unused while on the gateway"),
    ({"tool_gateway_declined_tools": ["tts"]}, {}, "tts", True, False, "you declined this before"),
    ({"tool_gateway_declined_tools": "stt, tts"}, {}, "stt", True, False, "you declined this before"),
    ({"tts": {"provider": "nous"}}, {}, "tts", False, True, "already via Nous subscription"),
    ({"tts": {"use_gateway": True}}, {}, "tts", False, True, "already via Nous subscription"),
    ({"tts": {"provider": 5}}, {}, "tts", False, False, "uses another backend"),
])
def test_checklist_rules(config: dict[str, Any], env: dict[str, str], category: str, offered: bool, checked: bool,
                         note: str) -> None:
    items = {item.category: item for item in build_checklist(config, env)}
    assert "video_gen" not in items  # opt-in categories are not part of it
    item = items[category]
    assert (item.offered, item.checked) == (offered, checked)
    assert note in item.note


def test_checklist_leaves_out_what_the_plan_does_not_cover() -> None:
    claims = {"tool_access": {"enabled": True, "coverage": {"firecrawl": True}}}
    token = f"{b64(b'{}')}.{b64(json.dumps(claims).encode())}.s"
    free = Credentials.from_sources(None, {"TOOL_GATEWAY_USER_TOKEN": token})
    items = {i.category: i for i in build_checklist({}, {}, free)}
    assert items["web"].offered and items["web"].checked
    assert not items["tts"].offered and items["tts"].note == "not covered by your plan"


def test_declined_is_remembered_never_prechecked_and_cleared_by_checking(home: Path) -> None:
    path = home / "config.yaml"
    path.write_text("# top\nmodel:\n  provider: nous  # kept\n")
    items = build_checklist(load(home), {"CAMOFOX_URL": "http://c"})
    assert default_choice(items) == {"web", "image_gen", "tts", "stt"}
    outcome = apply_checklist(path, items, {"web", "image_gen"})
    assert outcome.enabled == ["web", "image_gen"] and outcome.declined == ["tts", "stt", "browser"]
    config = load(home)
    assert config["web"] == {"backend": "nous"} and config["image_gen"] == {"provider": "nous"}
    assert config["tool_gateway_declined_tools"] == ["tts", "stt", "browser"]
    assert path.read_text().startswith("# top\nmodel:\n  provider: nous  # kept\n")
    # next time: declined ones are offered but never pre-checked
    again = {i.category: i for i in build_checklist(config, {"CAMOFOX_URL": "http://c"})}
    assert again["tts"].offered and not again["tts"].checked and not again["web"].offered
    # checking one later removes it from the record; the others stay declined
    apply_checklist(path, list(again.values()), {"tts"})
    assert load(home)["tool_gateway_declined_tools"] == ["stt", "browser"]
    assert load(home)["tts"] == {"provider": "nous"}
    apply_checklist(path, build_checklist(load(home), {}), {"stt", "browser"})
    assert "tool_gateway_declined_tools" not in load(home)
    # nobody saw the checklist (non-interactive defaults): nothing is recorded as declined
    path.write_text("model:\n  provider: nous\n")
    apply_checklist(path, build_checklist({}, {"CAMOFOX_URL": "c"}), {"web"}, remember=False)
    assert "tool_gateway_declined_tools" not in load(home)


def test_the_checklist_moves_exactly_what_it_checks(home: Path) -> None:
    """requirement GW-8 with GW-7: after the checklist, the checked categories use the gateway, the
    unchecked ones stay on their own backends although the login covers them."""
    path = home / "config.yaml"
    path.write_text("model:\n  provider: nous\n")
    apply_checklist(path, build_checklist(load(home), {}), {"tts", "image_gen"})
    config = load(home)
    paid = Credentials.from_sources({"version": 1, "providers": {"nous": {"access_token": PAID_TOKEN}}}, {})
    kinds = {name: resolve_route(name, config, {}, paid).kind for name in ("tts", "image_gen", "stt", "web.search")}
    assert kinds == {"tts": "gateway", "image_gen": "gateway", "stt": "local", "web.search": "local"}


def test_model_command_gateway_flag(home: Path) -> None:
    (home / "config.yaml").write_text("browser:\n  cloud_provider: camofox  # mine\n")
    env = {k: v for k, v in os.environ.items() if k not in VENDOR_ENV and k not in GATEWAY_ENV}
    env.update({"HERMES_HOME": str(home), "TOOL_GATEWAY_USER_TOKEN": PAID_TOKEN})
    proc = subprocess.run([sys.executable, "-m", "hermes", "model", "--provider", "nous", "--model", "Hermes-4",
                           "--gateway", "web,tts"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    config = load(home)
    assert config["model"] == {"provider": "nous", "base_url": "https://inference-api.nousresearch.com/v1",
                               "name": "Hermes-4"}
    assert config["web"] == {"backend": "nous"} and config["tts"] == {"provider": "nous"}
    assert config["browser"] == {"cloud_provider": "camofox"}  # an explicit backend is never offered
    assert config["tool_gateway_declined_tools"] == ["image_gen", "stt"]
    assert "  Browser           uses camofox (browser.cloud_provider)" in proc.stdout
    assert "# mine" in (home / "config.yaml").read_text()


# -- the picker through a pipe ---------------------------------------------------------------------------
def test_select_and_checklist_widgets(pipe: PipeInput) -> None:
    options = [Option("a"), Option("b", "note", current=True), Option("c")]
    pipe.send_text(DOWN + DOWN + DOWN + ENTER)  # wraps around
    assert select("t", options, input=pipe, output=DummyOutput()) == 0
    pipe.send_text(UP + ENTER)
    assert select("t", options, default=1, input=pipe, output=DummyOutput()) == 0
    pipe.send_text("3" + ENTER)
    assert select("t", options, input=pipe, output=DummyOutput()) == 2
    pipe.send_text("q")
    assert select("t", options, input=pipe, output=DummyOutput()) is None
    pipe.send_text(SPACE + DOWN + DOWN + SPACE + ENTER)
    assert checklist("t", options, [1, 2], input=pipe, output=DummyOutput()) == {0, 1}
    with pytest.raises(ValueError):
        select("t", [], input=pipe, output=DummyOutput())


def test_picker_lists_the_gateway_first_logged_out_and_writes_one_category(home: Path, pipe: PipeInput) -> None:
    settings = Settings.load(HermesPaths(home))
    rows = choices_for(parse_target("tts"), settings.config.data, {}, logged_in=False)
    assert [r.label for r in rows] == ["Nous Subscription", "OpenAI TTS", "ElevenLabs", "local eSpeak", "local Piper"]
    assert rows[0].note == "managed by Nous; you will be asked to log in to Nous Portal"
    assert rows[2].current and rows[2].note == "needs ELEVENLABS_API_KEY"
    # tts (3rd) → OpenAI TTS (2nd): its key is asked for and saved in .env; then Done (7th)
    pipe.send_text(DOWN + DOWN + ENTER + UP + ENTER + "sk-voice-123456" + ENTER + "7" + ENTER)
    out: list[str] = []
    run_picker(settings, out.append, input=pipe, output=DummyOutput())
    assert (home / "config.yaml").read_text() == COMMENTED.replace("  provider: elevenlabs  # my voice\n",
                                                                   "  provider: openai      # my voice\n")
    assert "VOICE_TOOLS_OPENAI_KEY=sk-voice-123456" in (home / ".env").read_text()
    assert "Text to speech → OpenAI TTS" in out and not any("sk-voice-123456" in line for line in out)


def test_current_marks_the_row_the_route_uses_with_legacy_use_gateway() -> None:
    """requirement GW-6: ``tts.provider: openai`` + ``use_gateway: true`` routes to the gateway, so the
    gateway row is the current one, not OpenAI TTS."""
    config = {"tts": {"provider": "openai", "use_gateway": True}}
    rows = choices_for(parse_target("tts"), config, {}, logged_in=True)
    assert [r.label for r in rows if r.current] == ["Nous Subscription"]
    assert resolve_route("tts", config, {}, Credentials.from_sources(None, {})).kind == "gateway"
    plain = choices_for(parse_target("tts"), {"tts": {"provider": "openai"}}, {}, logged_in=True)
    assert [r.label for r in plain if r.current] == ["OpenAI TTS"]


def test_picker_login_for_one_tool_moves_only_that_tool(home: Path, pipe: PipeInput) -> None:
    """requirement GW-8: choosing Nous Subscription for text-to-speech while logged out logs in and turns on
    that one tool; the never-configured categories stay where they were."""
    from hermes.surfaces.picker import ToolsPicker

    (home / "config.yaml").write_text("", encoding="utf-8")

    def login(settings: Settings) -> None:
        (home / "auth.json").write_text(json.dumps({"version": 1, "providers": {"nous": {
            "access_token": PAID_TOKEN, "refresh_token": "r"}}}), encoding="utf-8")

    # tts (3rd) → Nous Subscription (1st, logs in; the cursor starts on local eSpeak, in use now); then Done (7th)
    pipe.send_text(DOWN + DOWN + ENTER + "1" + ENTER + "7" + ENTER)
    ToolsPicker(Settings.load(HermesPaths(home)), [].append, login=login, after=lambda c: None,
                input=pipe, output=DummyOutput()).run()
    config = load(home)
    assert config == {"tts": {"provider": "nous"}}
    credentials = load_credentials(home / "auth.json", {})
    assert credentials.logged_in
    routes = {name: resolve_route(name, config, {}, credentials).kind
              for name in ("tts", "stt", "image_gen", "browser", "video_gen", "web.search")}
    assert routes == {"tts": "gateway", "stt": "local", "image_gen": "none", "browser": "local",
                      "video_gen": "none", "web.search": "local"}


def test_picker_gateway_login_failure_changes_nothing(home: Path, pipe: PipeInput) -> None:
    from hermes.surfaces.picker import ToolsPicker

    calls: list[str] = []

    def login(settings: Settings) -> None:
        calls.append("login")
        raise GatewayError("could not reach the Nous Portal at https://portal.example")

    # web → route separately → search: Nous Subscription (login fails) → extract: back; then back (q)
    pipe.send_text(ENTER + "8" + ENTER + ENTER + "q" + "q")
    out: list[str] = []
    ToolsPicker(Settings.load(HermesPaths(home)), out.append, login=login, after=lambda c: None,
                input=pipe, output=DummyOutput()).run()
    assert calls == ["login"] and (home / "config.yaml").read_text() == COMMENTED
    assert "✗ could not reach the Nous Portal at https://portal.example. web.search was not changed." in out


def test_parse_target_names() -> None:
    assert parse_target("Web.Search").name == "web.search" and parse_target("video").name == "video_gen"
    with pytest.raises(ConfigError, match=r"choose one of: web, web\.search, web\.extract, image_gen"):
        parse_target("web.crawl")


# -- a real terminal (tmux) --------------------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_tmux_picker_writes_commented_config(home: Path, tmp_path: Path) -> None:
    sock = f"hermes-picker-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    done = tmp_path / "done"

    def screen() -> str:
        return subprocess.run([*tmux, "capture-pane", "-p", "-t", "t"], capture_output=True, text=True,
                              timeout=5).stdout

    def wait_for(text: str) -> str:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            shown = screen()
            if text in shown:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared:\n{screen()}")

    def keys(*names: str) -> None:
        subprocess.run([*tmux, "send-keys", "-t", "t", *names], check=True, timeout=5)

    env = {k: v for k, v in os.environ.items() if k not in VENDOR_ENV and k not in GATEWAY_ENV}
    env.update({"HERMES_HOME": str(home), "BROWSER_USE_API_KEY": "bu-key", "TERM": "xterm-256color"})
    command = f"{sys.executable} -m hermes tools; echo $? > {done}; sleep 120"  # the pane outlives hermes
    subprocess.run([*tmux, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command], check=True,
                   timeout=10, env=env)
    try:
        first = wait_for("Tool backends — choose a tool category")
        assert "❯ Web tools" in first and "Done" in first
        keys("Down", "Down", "Down", "Down", "Enter")  # Browser
        shown = wait_for("Browser — choose a backend")
        assert "Nous Subscription" in shown and "you will be asked to log in" in shown  # listed while logged out
        assert shown.index("Nous Subscription") < shown.index("Browser Use")
        assert "(current)" in next(line for line in shown.splitlines() if "Browser Use" in line)  # auto-detected
        keys("Home", "Down", "Enter")  # Browser Use (its key is set)
        wait_for("Browser → Browser Use")
        wait_for("Tool backends — choose a tool category")
        keys("End", "Enter")  # Done
        deadline = time.monotonic() + 15
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert done.read_text().strip() == "0"
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=5)
    assert (home / "config.yaml").read_text() == COMMENTED + "browser:\n  cloud_provider: browser-use\n"
