"""The connector API of the gateway (``connector`` label) over real HTTP, and its operator command.

One gateway (uvicorn on 127.0.0.1) serves the module; accounts are recorded through a second connection
to its database (what ``hermes toolgateway connectors add`` does), or through that command itself.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.vendors.harness import GatewayHarness
from hermes.cli.main import main
from hermes.toolgateway.storage.connector_store import ConnectorAccount, ConnectorStore

API = "/v1/connectors"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    home = tmp_path_factory.mktemp("gw_connectors")
    harness = GatewayHarness(home, rate_limit={"per_second": 1000, "burst": 1000})
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("frank", "free"), ("nora", "none")):
            harness.user(name, plan)
        harness.user("eve", "paid", plan_expires=time.time() - 60)
        yield harness


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    """A gateway whose operator turned renaming off (``[connectors] rename = false``)."""
    harness = GatewayHarness(tmp_path_factory.mktemp("gw_frozen"), connectors={"rename": False})
    with harness:
        harness.user("alice", "paid")
        yield harness


def store(gw: GatewayHarness) -> ConnectorStore:
    return ConnectorStore(gw.side.conn)


def add(gw: GatewayHarness, user: str, app: str, name: str | None = None, display: str = "",
        replaces: str | None = None) -> ConnectorAccount:
    uid = gw.side.accounts.get_user(user).id
    return store(gw).add(uid, app, name=name, display_name=display or None, replaces=replaces)


def fresh_user(gw: GatewayHarness, plan: str = "paid") -> str:
    name = f"u{time.monotonic_ns()}"
    gw.user(name, plan)
    return name


def call(gw: GatewayHarness, method: str, path: str, token: str | None, body: Any = None,
         raw: bytes | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    url = gw.relay_url("connector") + path
    if raw is not None:
        return httpx.request(method, url, content=raw, headers=headers, timeout=30)
    return httpx.request(method, url, json=body, headers=headers, timeout=30)


def refused(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["code"] == code and isinstance(body["error"], str) and body["error"]
    return dict(body)


def test_lists_are_per_user_and_per_app(gw: GatewayHarness) -> None:
    alice, bob = fresh_user(gw), fresh_user(gw)
    work = add(gw, alice, "gmail", "work", "alice@work.example")
    home = add(gw, alice, "gmail", None, "alice@home.example")
    add(gw, alice, "github", "code")
    add(gw, bob, "gmail", "work", "bob@work.example")
    token = gw.token(alice)
    everything = call(gw, "GET", f"{API}/accounts", token).json()
    assert everything["capabilities"] == {"rename": True, "retire": True, "delete": True}
    assert [(a["app"], a["name"]) for a in everything["accounts"]] == [("github", "code"), ("gmail", "work"),
                                                                       ("gmail", None)]
    gmail = call(gw, "GET", f"{API}/gmail/accounts", token).json()
    assert gmail["app"] == "gmail" and gmail["app_title"] == "Gmail"
    by_id = {a["id"]: a for a in gmail["accounts"]}
    assert set(by_id) == {work.id, home.id}
    assert by_id[home.id]["label"] == "alice@home.example" and by_id[home.id]["name"] is None
    assert by_id[work.id]["status"] == "active" and by_id[work.id]["display_name"] == "alice@work.example"
    # the same API on connector-gateway.<domain>, vendor paths as-is
    hosted = httpx.get(gw.url + f"{API}/gmail/accounts", timeout=30,
                       headers={"host": gw.relay_host("connector"), "authorization": f"Bearer {token}"})
    assert hosted.status_code == 200 and {a["id"] for a in hosted.json()["accounts"]} == set(by_id)
    theirs = call(gw, "GET", f"{API}/accounts", gw.token(bob)).json()["accounts"]
    assert [a["display_name"] for a in theirs] == ["bob@work.example"]


def test_someone_elses_account_is_unknown(gw: GatewayHarness) -> None:
    alice, bob = fresh_user(gw), fresh_user(gw)
    mine = add(gw, alice, "gmail", "work")
    intruder = gw.token(bob)
    for method, path, body in (("GET", "", None), ("PATCH", "", {"name": "stolen"}), ("DELETE", "", None),
                               ("POST", "/retire", None)):
        refused(call(gw, method, f"{API}/gmail/accounts/{mine.id}{path}", intruder, body), 404, "unknown_account")
    uid = gw.side.accounts.get_user(alice).id
    assert store(gw).get(uid, mine.id) == mine


def test_naming_rule(gw: GatewayHarness) -> None:
    alice = fresh_user(gw)
    account = add(gw, alice, "gmail", None, "a@example.org")
    add(gw, alice, "gmail", "taken")
    token = gw.token(alice)
    path = f"{API}/gmail/accounts/{account.id}"
    for bad in ("Work", "-work", "work_1", "", "a" * 33, "wörk", "work space", 7, None):
        body = refused(call(gw, "PATCH", path, token, {"name": bad}), 400, "invalid_name")
        assert "1-32 characters" in body["error"] or "must be a string" in body["error"]
    for good in ("a" * 32, "2fa", "work-2", "w"):
        assert call(gw, "PATCH", path, token, {"name": good}).json()["account"]["name"] == good
    body = refused(call(gw, "PATCH", path, token, {"name": "taken"}), 409, "name_taken")
    assert "taken" in body["error"]
    refused(call(gw, "PATCH", path, token, {"name": "x", "status": "retired"}), 400, "invalid_request")
    refused(call(gw, "PATCH", path, token, {}), 400, "invalid_request")
    refused(call(gw, "PATCH", path, token, raw=b"{not json"), 400, "invalid_json")
    refused(call(gw, "PATCH", path, token, ["work"]), 400, "invalid_json")
    assert call(gw, "GET", path, token).json()["account"]["name"] == "w"


def test_renaming_turned_off_answers_501_and_says_so(frozen: GatewayHarness) -> None:
    account = add(frozen, "alice", "gmail", "work")
    token = frozen.token("alice")
    assert call(frozen, "GET", f"{API}/accounts", token).json()["capabilities"]["rename"] is False
    refused(call(frozen, "PATCH", f"{API}/gmail/accounts/{account.id}", token, {"name": "office"}), 501,
            "rename_not_supported")
    assert call(frozen, "GET", f"{API}/gmail/accounts/{account.id}", token).json()["account"]["name"] == "work"


def test_reconnect_retires_the_old_account_under_the_same_name(gw: GatewayHarness) -> None:
    alice = fresh_user(gw)
    old = add(gw, alice, "gmail", "work", "alice@work.example")
    new = add(gw, alice, "gmail", replaces="work", display="alice@work.example")
    token = gw.token(alice)
    accounts = call(gw, "GET", f"{API}/gmail/accounts", token).json()["accounts"]
    assert [(a["id"], a["name"], a["status"]) for a in accounts] == [(new.id, "work", "active"),
                                                                     (old.id, "work", "retired")]
    assert accounts[1]["replaced_by"] == new.id and accounts[1]["retired_at"]
    refused(call(gw, "PATCH", f"{API}/gmail/accounts/{old.id}", token, {"name": "old"}), 409, "account_retired")
    # retiring by the API frees the name for another active account
    gone = call(gw, "POST", f"{API}/gmail/accounts/{new.id}/retire", token).json()["account"]
    assert gone["status"] == "retired"
    spare = add(gw, alice, "gmail", None, "spare@example.org")
    assert call(gw, "PATCH", f"{API}/gmail/accounts/{spare.id}", token, {"name": "work"}).status_code == 200


def test_delete_removes_one_account(gw: GatewayHarness) -> None:
    alice = fresh_user(gw)
    keep, drop = add(gw, alice, "gmail", "home"), add(gw, alice, "gmail", "work")
    token = gw.token(alice)
    deleted = call(gw, "DELETE", f"{API}/gmail/accounts/{drop.id}", token).json()["deleted"]
    assert deleted["id"] == drop.id and deleted["name"] == "work"
    refused(call(gw, "GET", f"{API}/gmail/accounts/{drop.id}", token), 404, "unknown_account")
    refused(call(gw, "DELETE", f"{API}/gmail/accounts/{drop.id}", token), 404, "unknown_account")
    assert [a["id"] for a in call(gw, "GET", f"{API}/accounts", token).json()["accounts"]] == [keep.id]


def test_entitlement_refusals(gw: GatewayHarness) -> None:
    refused(call(gw, "GET", f"{API}/accounts", None), 401, "missing_token")
    refused(call(gw, "GET", f"{API}/accounts", "garbage"), 401, "invalid_token")
    for user in ("frank", "nora"):  # the free tier has no managed connectors; plan none has nothing
        body = refused(call(gw, "GET", f"{API}/accounts", gw.token(user)), 403, "not_entitled")
        assert "managed connectors" in body["error"]
    refused(call(gw, "GET", f"{API}/accounts", gw.token("eve")), 402, "subscription_expired")
    refused(call(gw, "GET", f"{API}/accounts", gw.token("alice", scope="inference:invoke")), 403,
            "insufficient_scope")
    token = gw.token("alice")
    gw.side.accounts.revoke(token)
    refused(call(gw, "GET", f"{API}/accounts", token), 401, "token_revoked")


def test_unknown_paths_methods_and_ids(gw: GatewayHarness) -> None:
    alice = fresh_user(gw)
    account = add(gw, alice, "gmail", "work")
    token = gw.token(alice)
    refused(call(gw, "GET", f"{API}/gmail", token), 404, "not_found")
    refused(call(gw, "GET", "/v2/search", token), 404, "not_found")
    resp = call(gw, "POST", f"{API}/accounts", token)
    refused(resp, 405, "method_not_allowed")
    assert resp.headers["allow"] == "GET"
    refused(call(gw, "GET", f"{API}/Gmail!/accounts", token), 400, "invalid_app")
    refused(call(gw, "GET", f"{API}/gmail/accounts/not-an-id", token), 404, "unknown_account")
    refused(call(gw, "GET", f"{API}/github/accounts/{account.id}", token), 404, "unknown_account")
    refused(call(gw, "PATCH", f"{API}/gmail/accounts/{account.id}", token, raw=b"x" * 20_000), 413,
            "request_too_large")


def test_operator_command_records_accounts(gw: GatewayHarness, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HERMES_HOME", str(gw.config.home))
    monkeypatch.delenv("HERMES_GATEWAY_ADMIN_TOKEN", raising=False)
    db = ["--db", str(gw.config.db_path)]
    alice = fresh_user(gw)
    assert main(["toolgateway", "connectors", "add", alice, "gmail", "--name", "work",
                 "--display-name", "alice@work.example", *db]) == 0
    assert f"added gmail account work for {alice}" in capsys.readouterr().out
    assert main(["toolgateway", "connectors", "add", alice, "gmail", "--name", "Bad_Name", *db]) == 1
    assert "not a valid account name" in capsys.readouterr().err
    assert main(["toolgateway", "connectors", "add", alice, "gmail", "--name", "work", *db]) == 1
    assert "already named 'work'" in capsys.readouterr().err
    assert main(["toolgateway", "connectors", "add", alice, "gmail", "--replaces", "work", *db]) == 0
    assert "replacing work (now retired)" in capsys.readouterr().out
    assert main(["toolgateway", "connectors", "list", alice, "--json", *db]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["user"], r["name"], r["status"]) for r in rows] == [(alice, "work", "active"),
                                                                  (alice, "work", "retired")]
    assert main(["toolgateway", "connectors", "list", alice, *db]) == 0
    assert "retired" in capsys.readouterr().out
    served = call(gw, "GET", f"{API}/gmail/accounts", gw.token(alice)).json()["accounts"]
    assert [a["id"] for a in served] == [r["id"] for r in rows]


def test_schema_and_readiness_describe_the_api(gw: GatewayHarness) -> None:
    paths = httpx.get(gw.url + "/openapi.json", timeout=30).json()["paths"]
    item = paths["/relay/connector/v1/connectors/{app}/accounts/{id}"]
    assert set(item) >= {"get", "patch", "delete"} and "501" in item["patch"]["responses"]
    assert "/relay/connector/v1/connectors/accounts" in paths
    relays = httpx.get(gw.url + "/readyz", timeout=30).json()["relays"]
    connector = next(r for r in relays if r["label"] == "connector")
    assert "PATCH /v1/connectors/{app}/accounts/{id}" in connector["operations"]


def test_accounts_survive_a_restart(tmp_path: Path) -> None:
    harness = GatewayHarness(tmp_path)
    with harness:
        harness.user("alice", "paid")
        account = add(harness, "alice", "gmail", "work")
    again = GatewayHarness(tmp_path)
    with again:
        got = call(again, "GET", f"{API}/gmail/accounts/{account.id}", again.token("alice")).json()
    assert got["account"]["name"] == "work"
