"""Connector accounts on the client (GW-12, GW-13) against the real gateway on loopback.

``hermes connectors`` runs in-process with a temporary HERMES_HOME whose environment points
``CONNECTOR_GATEWAY_URL`` at the gateway's pinned prefix; the alias rules are checked as pure functions
and through a registry with a registered connector tool.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.vendors.harness import GatewayHarness
from hermes.cli.main import main
from hermes.connectors import ALIAS_FIELD, Account, ConnectorError, inject_alias, resolve_alias, with_account
from hermes.connectors.client import ConnectorClient
from hermes.connectors.directory import ConnectorDirectory
from hermes.errors import ToolArgumentError, ToolError
from hermes.toolgateway.storage.connector_store import ConnectorAccount, ConnectorStore
from hermes.tools.registry import ToolRegistry
from hermes.tools.session import SessionContext, ToolSession

_ENV = ("TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "TOOL_GATEWAY_URL", "CONNECTOR_GATEWAY_URL",
        "TOOL_GATEWAY_USER_TOKEN", "HERMES_PORTAL_BASE_URL", "NOUS_PORTAL_BASE_URL")
ANNOUNCED = "Hermes named this Gmail account work. Rename it anytime."
NO_RENAME = "This Nous Portal cannot rename connector accounts yet."


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_conn_client"), rate_limit={"per_second": 1000,
                                                                                      "burst": 1000})
    with harness:
        harness.user("frank", "free")
        yield harness


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_conn_frozen"), connectors={"rename": False})
    with harness:
        yield harness


class User:
    """A fresh gateway user whose token the client environment uses."""

    def __init__(self, gw: GatewayHarness, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gw = gw
        self.name = f"u{time.monotonic_ns()}"
        self.id = gw.user(self.name, "paid").id
        self.token = gw.token(self.name)
        self.env = {"CONNECTOR_GATEWAY_URL": gw.relay_url("connector"), "TOOL_GATEWAY_USER_TOKEN": self.token}
        for key, value in self.env.items():
            monkeypatch.setenv(key, value)

    def add(self, app: str, name: str | None = None, display: str = "", replaces: str | None = None
            ) -> ConnectorAccount:
        return ConnectorStore(self.gw.side.conn).add(self.id, app, name=name, display_name=display or None,
                                                     replaces=replaces)

    def stored(self) -> list[ConnectorAccount]:
        return ConnectorStore(self.gw.side.conn).accounts(self.id)

    def client(self) -> ConnectorClient:
        return ConnectorClient(self.env["CONNECTOR_GATEWAY_URL"], self.token, self.env)

    def fetch(self) -> list[Account]:
        with self.client() as client:
            return client.list().accounts


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return hermes_home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["connectors", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- hermes connectors ----------------------------------------------------------------------------------
def test_list_folds_retired_accounts(gw: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    user = User(gw, monkeypatch)
    user.add("gmail", "work", "alice@work.example")
    user.add("gmail", replaces="work", display="alice@work.example")
    user.add("gmail", None, "alice@home.example")
    user.add("github", "code", "alice")
    code, out, _ = run(capsys, "list")
    assert code == 0
    assert out.splitlines() == [
        "GitHub", "  code  alice", "",
        "Gmail", "  work                          alice@work.example", "  alice@home.example (unnamed)",
        "  + 1 retired account (hermes connectors list gmail --all)",
    ]
    retired = next(a for a in user.stored() if a.status == "retired")
    code, out, _ = run(capsys, "list", "gmail", "--all")
    assert "GitHub" not in out and "+ 1 retired" not in out
    assert any(line.startswith("  work") and "retired 2" in line and line.endswith(retired.id)
               for line in out.splitlines())
    code, out, _ = run(capsys, "list", "--json")
    data = json.loads(out)
    assert data["capabilities"]["rename"] is True and len(data["accounts"]) == 4


def test_list_with_nothing_and_without_login(gw: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    User(gw, monkeypatch)
    assert run(capsys, "list", "gmail")[1] == "No Gmail accounts yet. Connect apps in the Nous Portal.\n"
    monkeypatch.delenv("TOOL_GATEWAY_USER_TOKEN")
    code, _, err = run(capsys)
    assert code == 1 and "hermes portal login" in err
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", gw.token("frank"))  # free tier: no managed_tools
    code, _, err = run(capsys, "list")
    assert code == 1 and "managed connectors" in err


def test_rename_and_naming_rule(gw: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    user = User(gw, monkeypatch)
    user.add("gmail", "work", "alice@work.example")
    fresh = user.add("gmail", None, "alice@home.example")
    assert run(capsys, "rename", "gmail", "work", "office") == (
        0, "Renamed the Gmail account work to office.\n", "")
    assert run(capsys, "rename", "gmail", "alice@home.example", "home")[1] == (
        "Named the Gmail account alice@home.example home.\n")
    assert {a.id: a.name for a in user.stored()}[fresh.id] == "home"
    code, _, err = run(capsys, "rename", "gmail", "home", "Home_2")
    assert code == 1 and "1-32 characters of a-z, 0-9 and -" in err
    code, _, err = run(capsys, "rename", "gmail", "office", "home")
    assert code == 1 and "already named 'home'" in err
    code, _, err = run(capsys, "rename", "gmail", "nobody", "x")
    assert code == 1 and "no gmail account 'nobody' (active accounts: office, home)" in err
    assert sorted(str(a.name) for a in user.stored()) == ["home", "office"]


def test_rename_on_a_portal_that_cannot(frozen: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    user = User(frozen, monkeypatch)
    user.add("gmail", "work")
    code, out, err = run(capsys, "rename", "gmail", "work", "office")
    assert (code, out, err) == (1, "", f"hermes: error: {NO_RENAME}\n")
    assert [a.name for a in user.stored()] == ["work"]


def test_remove_asks_and_deletes_one_account(gw: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    user = User(gw, monkeypatch)
    user.add("gmail", "work", "alice@work.example")
    new = user.add("gmail", replaces="work", display="alice@work.example")
    home_account = user.add("gmail", "home")
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, _ = run(capsys, "remove", "gmail", "work")
    assert code == 1 and out.endswith("Not removed.\n") and len(user.stored()) == 3
    assert "Remove the Gmail account work (alice@work.example)?" in out
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # nobody there: no
    assert run(capsys, "remove", "gmail", "work")[0] == 1
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    code, out, _ = run(capsys, "remove", "gmail", "work")
    assert code == 0 and out.endswith("Removed the Gmail account work (alice@work.example).\n")
    left = user.stored()
    assert new.id not in {a.id for a in left} and len(left) == 2  # the active one went, the retired one stays
    retired = next(a for a in left if a.status == "retired")
    code, out, _ = run(capsys, "remove", "gmail", retired.id, "--yes")
    assert code == 0 and "retired" in out
    assert [a.id for a in user.stored()] == [home_account.id]


def test_errors_never_show_the_token(gw: GatewayHarness, home: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    user = User(gw, monkeypatch)
    gw.side.accounts.revoke(user.token)
    code, out, err = run(capsys, "list")
    assert code == 1 and "revoked" in err and "hermes portal login" in err and user.token not in out + err
    elsewhere = ConnectorClient("https://connector.evil.example", user.token, {})
    with pytest.raises(ConnectorError, match="not a trusted gateway host") as caught:
        elsewhere.list()
    assert user.token not in str(caught.value) and user.token not in repr(elsewhere)


# -- connector_alias ------------------------------------------------------------------------------------
def acct(name: str | None, ident: str, status: str = "active", app: str = "gmail") -> Account:
    return Account(id=ident, app=app, name=name, display_name=f"{ident}@example.org", status=status)


SCHEMA: dict[str, Any] = {"name": "gmail_probe", "description": "probe",
                          "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                         "required": ["q"], "additionalProperties": False}}


def test_inject_alias_rules() -> None:
    one = [acct("work", "a"), acct("old", "r", "retired"), acct("x", "g", app="github")]
    assert inject_alias(SCHEMA, "gmail", one) == SCHEMA
    both = inject_alias(SCHEMA, "gmail", [acct("work", "a"), acct("home", "b"), acct("old", "r", "retired")])
    alias = both["parameters"]["properties"][ALIAS_FIELD]
    assert alias["enum"] == ["home", "work"] and both["parameters"]["required"] == ["q", ALIAS_FIELD]
    mixed = inject_alias(SCHEMA, "gmail", [acct("work", "a"), acct(None, "b")])
    assert mixed["parameters"]["properties"][ALIAS_FIELD]["enum"] == ["work"]
    assert mixed["parameters"]["required"] == ["q"]
    nameless = inject_alias(SCHEMA, "gmail", [acct(None, "a"), acct(None, "b")])
    assert "enum" not in nameless["parameters"]["properties"][ALIAS_FIELD]
    assert SCHEMA["parameters"]["required"] == ["q"] and ALIAS_FIELD not in SCHEMA["parameters"]["properties"]


def test_resolve_alias_rules() -> None:
    work, home, blank, blank2 = acct("work", "a"), acct("home", "b"), acct(None, "c"), acct(None, "d")
    assert resolve_alias({"q": 1, ALIAS_FIELD: "home"}, "gmail", [work, home]) == ({"q": 1}, home)
    with pytest.raises(ToolArgumentError, match=r"connector_alias is required.*valid names: home, work"):
        resolve_alias({"q": 1}, "gmail", [work, home])
    with pytest.raises(ToolArgumentError, match=r'"play" is not one of your Gmail accounts; valid names: home, work'):
        resolve_alias({ALIAS_FIELD: "play"}, "gmail", [work, home, blank])
    assert resolve_alias({}, "gmail", [work, blank])[1] == blank  # the one unnamed account
    with pytest.raises(ToolArgumentError, match="2 of them have no name yet"):
        resolve_alias({}, "gmail", [work, blank, blank2])
    with pytest.raises(ToolArgumentError, match="valid names: home, work"):
        resolve_alias({}, "gmail", [work, home, blank])  # two named: no default even with an unnamed one
    assert resolve_alias({}, "gmail", [blank, acct("x", "r", "retired")])[1] == blank
    with pytest.raises(ToolError, match="no Gmail account is connected"):
        resolve_alias({}, "gmail", [acct("x", "r", "retired")])
    assert with_account({"ok": True}, work) == {"ok": True, "account": "work"}
    assert with_account('{"ok": 1}', blank) == '{"ok": 1}'
    assert with_account('{"error": "no"}', work) == '{"error": "no"}'
    assert with_account("[1]", work) == {"result": [1], "account": "work"}


def test_connector_tool_through_the_registry(gw: GatewayHarness, home: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    user = User(gw, monkeypatch)
    work, _ = user.add("gmail", "work"), user.add("gmail", "home")
    reg = ToolRegistry()
    seen: list[Any] = []

    def probe(args: dict[str, Any], **kw: Any) -> str:
        seen.append(kw["connector_account"])
        return json.dumps({"q": args["q"], "used": kw["connector_account"].id})

    async def aprobe(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
        return {"used": kw["connector_account"].id}

    reg.register(name="gmail_probe", toolset="connections", schema=SCHEMA, handler=probe, connector="gmail")
    reg.register(name="gmail_async", toolset="connections", schema={**SCHEMA, "name": "gmail_async"},
                 handler=aprobe, is_async=True, connector="gmail")
    reg.register(name="plain", toolset="x", schema={**SCHEMA, "name": "plain"}, handler=probe)
    session = ToolSession(reg, context=SessionContext(
        connector_accounts=ConnectorDirectory(user.fetch, recheck_after=0.0)))
    defs = {d["function"]["name"]: d["function"] for d in session.definitions(["gmail_probe", "plain"])}
    assert defs["gmail_probe"]["parameters"]["properties"][ALIAS_FIELD]["enum"] == ["home", "work"]
    assert ALIAS_FIELD in defs["gmail_probe"]["parameters"]["required"]
    assert ALIAS_FIELD not in defs["plain"]["parameters"]["properties"]

    missing = json.loads(session.dispatch("gmail_probe", {"q": "hi"}).text)
    assert "connector_alias is required" in missing["error"] and "valid names: home, work" in missing["error"]
    unknown = json.loads(session.dispatch("gmail_probe", {"q": "hi", ALIAS_FIELD: "play"}).text)
    assert "valid names: home, work" in unknown["error"] and not seen
    assert json.loads(session.dispatch("gmail_probe", {"q": "hi", ALIAS_FIELD: "work"}).text) == {
        "q": "hi", "used": work.id, "account": "work"}
    assert json.loads(session.dispatch("gmail_async", {"q": "x", ALIAS_FIELD: "work"}).text) == {
        "used": work.id, "account": "work"}
    # a rename made elsewhere is picked up on the next call (the list is checked again on a miss)
    assert run(capsys, "rename", "gmail", "work", "office")[0] == 0
    assert json.loads(session.dispatch("gmail_probe", {"q": "hi", ALIAS_FIELD: "office"}).text)["account"] == "office"
    # an unnamed account used by leaving the alias out: no "account" in the result
    user.add("gmail", None, "spare@example.org")
    assert run(capsys, "remove", "gmail", "home", "--yes")[0] == 0
    result = json.loads(session.dispatch("gmail_probe", {"q": "hi"}).text)
    assert "account" not in result and result["used"] == seen[-1].id and seen[-1].name is None


# -- the agent's connector_accounts tool ----------------------------------------------------------------
@pytest.fixture
def tool_registry() -> Iterator[Any]:
    import hermes.tools.connectors.tool  # noqa: F401 - registers connector_accounts
    from hermes.tools.registry import registry

    registry.invalidate_checks()
    yield registry
    registry.invalidate_checks()


def test_agent_names_an_account_and_announces_it(gw: GatewayHarness, home: Path, tool_registry: Any,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(gw, monkeypatch)
    fresh = user.add("gmail", None, "alice@work.example")
    user.add("gmail", None, "alice@home.example")
    listed = json.loads(tool_registry.dispatch("connector_accounts", {"action": "list", "app": "gmail"}))
    assert [a["display_name"] for a in listed["accounts"]] == ["alice@work.example", "alice@home.example"]
    result = json.loads(tool_registry.dispatch("connector_accounts", {
        "action": "name", "app": "gmail", "account": "alice@work.example", "name": "work"}))
    assert result["announcement"] == ANNOUNCED and result["named"]["id"] == fresh.id
    told = ToolSession(tool_registry, context=SessionContext()).dispatch("connector_accounts", {
        "action": "name", "app": "gmail", "account": "alice@home.example", "name": "home"})
    assert told.metadata["notices"] == ["Hermes named this Gmail account home. Rename it anytime."]
    renamed = json.loads(tool_registry.dispatch("connector_accounts", {
        "action": "name", "app": "gmail", "account": "work", "name": "office"}))
    assert renamed["message"] == "Renamed the Gmail account work to office." and "announcement" not in renamed
    bad = json.loads(tool_registry.dispatch("connector_accounts", {
        "action": "name", "app": "gmail", "account": "office", "name": "Office"}))
    assert "not a valid account name" in bad["error"]
    refused = json.loads(tool_registry.dispatch("connector_accounts", {"action": "delete", "app": "gmail"}))
    assert "'action' must be one of" in refused["error"] and len(user.stored()) == 2


def test_agent_tool_needs_managed_connectors_and_a_renaming_portal(
        gw: GatewayHarness, frozen: GatewayHarness, home: Path, tool_registry: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    user = User(frozen, monkeypatch)
    user.add("gmail", None, "a@example.org")
    assert tool_registry.is_available("connector_accounts")
    answer = json.loads(tool_registry.dispatch("connector_accounts", {
        "action": "name", "app": "gmail", "account": "a@example.org", "name": "work"}))
    assert answer == {"error": NO_RENAME}
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", gw.token("frank"))
    tool_registry.invalidate_checks()
    assert not tool_registry.is_available("connector_accounts")
    assert tool_registry.definitions(["connector_accounts"]) == []


def test_connector_tool_when_the_gateway_does_not_answer(home: Path) -> None:
    import socket

    with socket.socket() as sock:  # a loopback port with nobody listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = ConnectorClient(f"http://127.0.0.1:{port}/relay/connector", "tok", {}, timeout=2)

    def fetch() -> list[Account]:
        with dead:
            return dead.list().accounts

    reg = ToolRegistry()
    reg.register(name="gmail_probe", toolset="connections", schema=SCHEMA, handler=lambda a, **kw: "{}",
                 connector="gmail")
    session = ToolSession(reg, context=SessionContext(connector_accounts=ConnectorDirectory(fetch)))
    [definition] = session.definitions(["gmail_probe"])
    assert definition["function"] == {**SCHEMA}  # shown as registered
    error = json.loads(session.dispatch("gmail_probe", {"q": "x"}).text)["error"]
    assert error == f"cannot reach the connector gateway at http://127.0.0.1:{port}/relay/connector: ConnectError"


def test_alias_errors_name_the_app_of_the_tool_among_other_apps() -> None:
    """An account list holding other apps first (GitHub) never lends its title to a Gmail error."""
    github = Account(id="g1", app="github", name="code", display_name="alice", status="active", app_title="GitHub")
    gmail = [Account(id=f"m{i}", app="gmail", name=n, display_name=f"{n}@x.org", status="active", app_title="Gmail")
             for i, n in enumerate(("home", "work"))]
    everything = [github, *gmail]
    with pytest.raises(ToolArgumentError, match=r"you have 2 Gmail accounts;.*valid names: home, work"):
        resolve_alias({}, "gmail", everything)
    with pytest.raises(ToolArgumentError, match=r'"play" is not one of your Gmail accounts'):
        resolve_alias({ALIAS_FIELD: "play"}, "gmail", everything)
    with pytest.raises(ToolError, match="no Slack account is connected"):
        resolve_alias({}, "slack", everything)
