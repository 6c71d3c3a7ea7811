"""The app server's settings, models and toolsets methods over a real WebSocket on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fakes.model_server import Reply
from hermes.redact import MASK
from hermes.tools.toolsets import DESKTOP_UI
from surfaces.appserver.harness import Rpc, Serve, url_of

SECRET = "fc-0123456789abcdefSECRET"
ENV_SECRET = "sk-or-v1-abcdef0123456789abcdef"


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools", [])}


def test_settings_are_read_masked_and_written_through_the_config_checks(
        serve: Serve, model_server: Any, hermes_home: Path) -> None:
    model = model_server(lambda body: Reply(content="ok"))
    (hermes_home / ".env").write_text(f"OPENROUTER_API_KEY={ENV_SECRET}\n")
    server = serve(model.url, extra_config=f"web:\n  firecrawl:\n    api_key: {SECRET}\n"
                                           f"  note: uses {ENV_SECRET} here\n")
    rpc = Rpc(url_of(server))
    shown = rpc.call("settings.get")
    text = json.dumps(shown)
    assert SECRET not in text and ENV_SECRET not in text  # neither the config's secret nor .env's value
    entries = {e["key"]: e for e in shown["settings"]}
    assert entries["web.firecrawl.api_key"]["value"] == MASK and entries["web.firecrawl.api_key"]["secret"]
    assert MASK in entries["web.note"]["value"]
    assert entries["agent.max_iterations"] == {"key": "agent.max_iterations", "set": False, "secret": False,
                                               "value": None, "kind": "integer", "default": 30,
                                               "minimum": 1, "maximum": 10_000}
    assert entries["model.name"]["value"] == "m"
    assert shown["env"] == ["OPENROUTER_API_KEY"]

    changed = rpc.call("settings.set", {"key": "agent.max_iterations", "value": 7})
    assert changed["value"] == 7 and changed["set"] and "next session" in changed["applies"]
    assert "max_iterations: 7" in (hermes_home / "config.yaml").read_text()
    refusals = {
        "agent.max_iterations": ("many", "must be a whole number from 1 to 10000; got 'many'"),
        "agent.max_iteration": (3, "did you mean agent.max_iterations?"),
        "model.api_key": ("sk-live-0123456789abcdef", "looks like a secret"),
        "approvals.mode": ("sometimes", "must be one of: ask"),
    }
    before = (hermes_home / "config.yaml").read_text()
    for key, (value, words) in refusals.items():
        refused = rpc.request("settings.set", {"key": key, "value": value})
        assert words in refused["error"]["message"], (key, refused)
        assert "sk-live" not in refused["error"]["message"]
    assert (hermes_home / "config.yaml").read_text() == before  # nothing written on a refusal
    assert rpc.request("settings.set", {"key": "agent.max_iterations"})["error"]["code"] == -32602

    # a change applies from the next session: the system prompt of a new session carries it
    rpc.call("settings.set", {"key": "agent.system_prompt", "value": "Always answer in haiku."})
    session = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": session, "text": "hi"})
    rpc.finished(session)
    assert "Always answer in haiku." in model.requests[-1]["messages"][0]["content"]
    assert rpc.call("settings.unset", {"key": "agent.system_prompt"})["removed"] is True
    assert "system_prompt" not in (hermes_home / "config.yaml").read_text()
    assert rpc.call("settings.unset", {"key": "agent.system_prompt"})["removed"] is False
    rpc.close()


def test_a_secret_goes_to_dotenv_write_only(serve: Serve, model_server: Any, hermes_home: Path) -> None:
    rpc = Rpc(url_of(serve(model_server([]).url)))
    stored = rpc.call("settings.set_env", {"name": "FAL_KEY", "value": "fal-secret-0123456789"})
    assert stored["stored"] is True and "fal-secret" not in json.dumps(stored)
    env = hermes_home / ".env"
    assert "FAL_KEY=fal-secret-0123456789" in env.read_text() and env.stat().st_mode & 0o777 == 0o600
    assert "FAL_KEY" in rpc.call("settings.get", {"keys": ["model.name"]})["env"]
    for name in ("LD_PRELOAD", "PATH", "PYTHONPATH", "HTTPS_PROXY", "HERMES_HOME"):  # how programs start: never
        refused = rpc.request("settings.set_env", {"name": name, "value": "/tmp/evil"})
        assert "shapes how programs start" in refused["error"]["message"], refused
        assert os.environ.get(name) != "/tmp/evil"
    bad = rpc.request("settings.set_env", {"name": "NOT A NAME", "value": "x"})
    assert "not a valid environment variable name" in bad["error"]["message"]
    assert rpc.call("settings.unset_env", {"name": "FAL_KEY"})["removed"] is True
    assert "FAL_KEY" not in env.read_text()
    rpc.close()


def test_models_are_listed_on_demand_cached_and_a_choice_reaches_the_next_session(
        serve: Serve, model_server: Any) -> None:
    model = model_server(lambda body: Reply(content=f"I am {body['model']}"), models=["m", "other"])
    server = serve(model.url)
    rpc = Rpc(url_of(server))
    rpc.call("sessions.list")
    assert model.listings == 0  # starting the server and using it asks the endpoint nothing
    listed = rpc.call("models.list")
    assert listed["models"] == ["m", "other"] and listed["current"]["model"] == "m" and model.listings == 1
    model.models.append("third")
    assert rpc.call("models.list")["models"] == ["m", "other"] and model.listings == 1  # kept
    assert rpc.call("models.list", {"refresh": True})["models"] == ["m", "other", "third"]

    first = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": first, "text": "who are you"})
    assert rpc.finished(first)["final"] == "I am m"
    chosen = rpc.call("models.select", {"model": "other"})
    assert chosen["current"]["model"] == "other"
    second = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": second, "text": "who are you"})
    assert rpc.finished(second)["final"] == "I am other"
    assert rpc.request("models.select", {"model": ""})["error"]["code"] == -32602
    rpc.close()


def test_models_list_says_why_when_the_endpoint_cannot_answer(serve: Serve, hermes_home: Path) -> None:
    rpc = Rpc(url_of(serve("http://127.0.0.1:9/v1")))  # nothing listens on the discard port
    listed = rpc.call("models.list")
    assert listed["models"] == [] and "127.0.0.1:9/v1/models could not be asked" in listed["error"]
    assert listed["current"]["model"] == "m"
    rpc.close()


def test_toolsets_are_listed_and_turned_on_and_off_per_session_and_in_the_config(
        serve: Serve, model_server: Any, hermes_home: Path) -> None:
    model = model_server(lambda body: Reply(content="ok"))
    rpc = Rpc(url_of(serve(model.url)))
    listed = rpc.call("toolsets.list")
    states = {t["name"]: t for t in listed["toolsets"]}
    assert states["web"]["state"] == "on" and states["video"]["state"] == "off" and states["video"]["opt_in"]
    assert "discord" not in states and "hermes-cli" not in states
    assert {"name": "web_search", "available": True} in states["web"]["tools"]
    assert "web_search" in listed["tools"] and listed["frozen"] is False

    # one session without the web tools, with todo only (and the catalog and the desktop_ui tools, on in every
    # desktop session)
    ALWAYS = {"todo_list", "catalog", *DESKTOP_UI}
    session = rpc.call("sessions.create", {"toolsets": ["todo", "web"]})["session"]
    assert rpc.call("toolsets.disable", {"session": session, "names": ["web"]})["disabled"] == ["web"]
    assert set(rpc.call("toolsets.list", {"session": session})["tools"]) == ALWAYS
    rpc.call("message.send", {"session": session, "text": "hi"})
    rpc.finished(session)
    assert tool_names(model.requests[-1]) == ALWAYS
    refused = rpc.request("toolsets.enable", {"session": session, "names": ["web"]})
    assert "already started" in refused["error"]["message"] and "TS-9" in refused["error"]["message"]
    frozen = rpc.call("toolsets.list", {"session": session})
    assert frozen["frozen"] is True and set(frozen["tools"]) == ALWAYS

    unknown = rpc.request("toolsets.disable", {"names": ["nope"]})
    assert "unknown toolset(s): nope" in unknown["error"]["message"]
    # the configuration, like `hermes tools disable web`: the next session has no web tools
    assert rpc.call("toolsets.disable", {"names": ["web"]})["changed"][0].startswith("Disabled web")
    assert "disabled_toolsets" in (hermes_home / "config.yaml").read_text()
    assert {t["name"]: t for t in rpc.call("toolsets.list")["toolsets"]}["web"]["state"] == "disabled"
    later = rpc.call("sessions.create")["session"]
    rpc.call("message.send", {"session": later, "text": "hi"})
    rpc.finished(later)
    assert "web_search" not in tool_names(model.requests[-1]) and "read_file" in tool_names(model.requests[-1])
    rpc.call("toolsets.enable", {"names": ["web"]})
    assert "disabled_toolsets" not in (hermes_home / "config.yaml").read_text()
    rpc.close()


def test_config_changes_made_at_the_same_time_are_all_kept(serve: Serve, model_server: Any,
                                                         hermes_home: Path) -> None:
    """Requests are answered concurrently, and each config change loads config.yaml, changes it and writes
    it back: changes made at the same moment (quick toggles in two windows) must all land."""
    import threading

    from ruamel.yaml import YAML

    model = model_server(lambda body: Reply(content="ok"))
    url = url_of(serve(model.url))
    first = Rpc(url)
    names = [t["name"] for t in first.call("toolsets.list")["toolsets"]
             if t["state"] == "on" and not t.get("opt_in")][:8]
    assert len(names) >= 6
    clients = [Rpc(url) for _ in names]
    start = threading.Barrier(len(names))
    errors: list[BaseException] = []

    def disable(rpc: Rpc, name: str) -> None:
        try:
            start.wait(10)
            rpc.call("toolsets.disable", {"names": [name]})
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=disable, args=pair) for pair in zip(clients, names, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    config = YAML(typ="safe").load((hermes_home / "config.yaml").read_text(encoding="utf-8"))
    assert sorted((config.get("agent") or {}).get("disabled_toolsets") or []) == sorted(names)
    for rpc in (first, *clients):
        rpc.close()
