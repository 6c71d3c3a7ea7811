"""The modal relay over real HTTP: the gateway (create_app under uvicorn) with the local sandbox engine.

Every test drives the protocol the upstream client's managed Modal backend speaks (create, exec, poll,
cancel, terminate) and checks the effects on the host: real child processes, their process groups, the
sandbox folders. When the tests run as root, commands run as ``nobody`` (``run_as``), as the docs
recommend; otherwise as the test's own user (``allow_gateway_user``).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.vendors.harness import GatewayHarness
from hermes.errors import ConfigError
from hermes.toolgateway.config import load_config
from hermes.toolgateway.sandbox.config import SandboxConfig
from hermes.toolgateway.sandbox.engine import resolve_identity
from hermes.toolgateway.sandbox.fs import SandboxFS
from hermes.toolgateway.sandbox.proc import CappedOutput, ExecProcess, Rlimits

AS_ROOT = os.geteuid() == 0
ADMIN_TOKEN = "admin-token-that-must-stay-secret"
FIRECRAWL_KEY = "fc-operator-key-that-must-stay-secret"
MAX_OUTPUT = 8192


@pytest.fixture(scope="module")
def root(traversable_root: Path) -> Path:
    return traversable_root


@pytest.fixture(scope="module")
def gw(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    who = {"modal.run_as": "nobody"} if AS_ROOT else {"modal.allow_gateway_user": True}
    harness = GatewayHarness(
        tmp_path_factory.mktemp("gw_modal"), admin_token=ADMIN_TOKEN,
        firecrawl={"firecrawl_api_key": FIRECRAWL_KEY},
        **{"modal.backend": "local", "modal.root": str(root / "sandboxes"), "modal.exec_wait": 1.5,
           "modal.max_per_user": 3, "modal.max_sandboxes": 5, "modal.max_output_bytes": MAX_OUTPUT, **who})
    with harness:
        for name, plan in (("alice", "paid"), ("bob", "paid"), ("lim1", "paid"), ("lim2", "paid"),
                           ("fred", "free"), ("nina", "none")):
            harness.user(name, plan)
        yield harness


class Client:
    """Speaks the managed Modal protocol like the upstream client; terminates what it created."""

    def __init__(self, gw: GatewayHarness, name: str) -> None:
        self.headers = {"authorization": f"Bearer {gw.token(name)}"}
        self.origin = gw.relay_url("modal")
        self.created: list[str] = []

    def post(self, path: str, body: Any = None, **headers: str) -> httpx.Response:
        return httpx.post(f"{self.origin}{path}", json=body, headers={**self.headers, **headers}, timeout=30)

    def get(self, path: str) -> httpx.Response:
        return httpx.get(f"{self.origin}{path}", headers=self.headers, timeout=30)

    def create(self, **fields: Any) -> str:
        body = {"image": "python:3.11", "cwd": "/root", "cpu": 1.0, "memoryMiB": 5120.0, "timeoutMs": 3_600_000,
                "idleTimeoutMs": 300_000, "persistentFilesystem": False, "logicalKey": "task", **fields}
        resp = self.post("/v1/sandboxes", body, **{"x-idempotency-key": str(uuid.uuid4())})
        assert resp.status_code == 200, resp.text
        self.created.append(resp.json()["id"])
        return str(resp.json()["id"])

    def start(self, sandbox: str, command: str, **fields: Any) -> httpx.Response:
        body = {"execId": str(uuid.uuid4()), "command": command, "cwd": "/root", "timeoutMs": 30_000, **fields}
        return self.post(f"/v1/sandboxes/{sandbox}/execs", body)

    def run(self, sandbox: str, command: str, **fields: Any) -> dict[str, Any]:
        """Start a command and poll it to its end, as the client does."""
        resp = self.start(sandbox, command, **fields)
        assert resp.status_code == 200, resp.text
        data: dict[str, Any] = resp.json()
        deadline = time.monotonic() + 30
        while data["status"] == "running" and time.monotonic() < deadline:
            time.sleep(0.1)
            data = self.get(f"/v1/sandboxes/{sandbox}/execs/{data['execId']}").json()
        return data

    def terminate(self, sandbox: str, snapshot: bool = False) -> httpx.Response:
        return self.post(f"/v1/sandboxes/{sandbox}/terminate", {"snapshotBeforeTerminate": snapshot})


@pytest.fixture
def clients(gw: GatewayHarness) -> Iterator[dict[str, Client]]:
    made = {name: Client(gw, name) for name in ("alice", "bob", "lim1", "lim2")}
    yield made
    for client in made.values():
        for sandbox in client.created:
            client.terminate(sandbox)


def group_alive(pgid: int) -> bool:
    """Whether any process that is not a zombie is still in process group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def wait_gone(pgid: int) -> bool:
    deadline = time.monotonic() + 5
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not group_alive(pgid)


def test_exec_merges_output_and_reports_the_exit_status(gw: GatewayHarness, clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    resp = alice.start(sandbox, "echo hi; echo err >&2; exit 3", execId="exec-1")
    assert resp.status_code == 200, resp.text
    data = resp.json()
    assert data["status"] == "completed" and data["returncode"] == 3 and data["execId"] == "exec-1"
    assert data["output"] == "hi\nerr\n" and data["truncated"] is False
    assert alice.run(sandbox, "pwd")["output"].strip() == alice.run(sandbox, "echo $HOME")["output"].strip()
    usage = httpx.get(f"{gw.url}/api/usage", headers=alice.headers).json()
    units = {row["operation"]: row["units"] for row in usage["by_tool"] if row["category"] == "modal"}
    assert units["create"] >= 1 and units["exec"] >= 3


def test_long_exec_is_polled_to_completion(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    resp = alice.start(sandbox, "sleep 2.5; echo done", execId="slow-1")
    assert resp.json()["status"] == "running" and resp.json()["execId"] == "slow-1"
    assert resp.json()["returncode"] is None
    assert alice.get(f"/v1/sandboxes/{sandbox}/execs/nope").status_code == 404
    done = alice.run(sandbox, "sleep 2.5; echo done", execId="slow-1")  # same execId: polls the same exec
    assert done["status"] == "completed" and done["output"] == "done\n" and done["returncode"] == 0


def test_timeout_kills_the_whole_group(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    data = alice.run(sandbox, "echo $$; sleep 30 & echo $!; wait", timeoutMs=800)
    assert data["status"] == "timeout" and data["returncode"] == 124
    shell, child = (int(x) for x in data["output"].split()[:2])
    assert "timed out after 0.8 s" in data["output"]
    assert wait_gone(shell) and not group_alive(child)


def test_cancel_stops_a_running_exec(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    started = alice.start(sandbox, "echo $$; sleep 30", timeoutMs=60_000).json()
    assert started["status"] == "running"
    pgid = int(started["output"].split()[0])
    cancelled = alice.post(f"/v1/sandboxes/{sandbox}/execs/{started['execId']}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled" and cancelled.json()["returncode"] == 130
    assert wait_gone(pgid)


def test_stdin_data(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    data = alice.run(sandbox, "tr a-z A-Z", stdinData="hello\nwörld\n")
    assert data["output"] == "HELLO\nWöRLD\n"
    assert alice.run(sandbox, "cat")["output"] == ""  # no stdinData: end of file at once


def test_cwd_stays_inside_the_sandbox(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    home = alice.run(sandbox, "pwd")["output"].strip()
    assert alice.run(sandbox, "mkdir sub && ln -s /etc out && ln -s sub inner")["returncode"] == 0
    for cwd in ("..", "/etc", "out", "/root/../..", "~/out", home + "/.."):
        resp = alice.start(sandbox, "pwd", cwd=cwd)
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_cwd", cwd
    assert alice.start(sandbox, "pwd", cwd="missing").json()["code"] == "invalid_cwd"
    for cwd in ("sub", "inner", "/root/sub", "~/sub", home + "/sub"):
        assert alice.run(sandbox, "pwd", cwd=cwd)["output"].strip() == home + "/sub", cwd


def test_environment_has_no_gateway_secrets(clients: dict[str, Client], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-gateway-env-secret")
    monkeypatch.setenv("HERMES_GATEWAY_ADMIN_TOKEN", ADMIN_TOKEN)
    alice = clients["alice"]
    sandbox = alice.create()
    env = alice.run(sandbox, "env")["output"]
    for secret in (ADMIN_TOKEN, FIRECRAWL_KEY, "sk-gateway-env-secret", "OPENAI_API_KEY", "HERMES_"):
        assert secret not in env
    names = {line.split("=", 1)[0] for line in env.splitlines() if "=" in line}
    allowed = {"PATH", "HOME", "PWD", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "OLDPWD", "_", "SHLVL"}
    assert names <= allowed
    if AS_ROOT:
        assert alice.run(sandbox, "id -u; id -G")["output"].split() == ["65534", "65534"]
        assert alice.run(sandbox, "cat /proc/1/environ")["returncode"] != 0


def test_limits_follow_the_request(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create(memoryMiB=512, diskMiB=64)
    limits = alice.run(sandbox, "cat /proc/self/limits")["output"]
    assert f"Max address space         {512 * 1024 * 1024}" in limits
    assert f"Max file size             {64 * 1024 * 1024}" in limits
    assert alice.run(sandbox, "head -c 70000000 /dev/zero > big")["returncode"] != 0  # past RLIMIT_FSIZE
    flood = alice.run(sandbox, "head -c 100000 /dev/zero | tr '\\0' a")
    assert flood["truncated"] is True and "bytes of output omitted" in flood["output"]
    assert len(flood["output"]) < MAX_OUTPUT + 100


def test_exec_id_is_idempotent(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    first = alice.run(sandbox, "echo x >> count; wc -l < count", execId="once")
    again = alice.run(sandbox, "echo x >> count; wc -l < count", execId="once")
    assert first == again and first["output"].strip() == "1"
    assert alice.run(sandbox, "wc -l < count")["output"].strip() == "1"
    clash = alice.start(sandbox, "echo other", execId="once")
    assert clash.status_code == 409 and clash.json()["code"] == "exec_id_conflict"


def test_create_idempotency_key_is_per_user(clients: dict[str, Client]) -> None:
    alice, bob = clients["alice"], clients["bob"]
    body = {"image": "python:3.11", "logicalKey": "k"}
    one = alice.post("/v1/sandboxes", body, **{"x-idempotency-key": "same-key"}).json()["id"]
    alice.created.append(one)
    assert alice.post("/v1/sandboxes", body, **{"x-idempotency-key": "same-key"}).json()["id"] == one
    other = bob.post("/v1/sandboxes", body, **{"x-idempotency-key": "same-key"}).json()["id"]
    bob.created.append(other)
    assert other != one


def test_other_users_see_nothing(clients: dict[str, Client]) -> None:
    alice, bob = clients["alice"], clients["bob"]
    sandbox = alice.create()
    ex = alice.run(sandbox, "echo mine")
    for resp in (bob.get(f"/v1/sandboxes/{sandbox}/execs/{ex['execId']}"), bob.start(sandbox, "echo theirs"),
                 bob.post(f"/v1/sandboxes/{sandbox}/execs/{ex['execId']}/cancel"), bob.terminate(sandbox)):
        assert resp.status_code == 404 and resp.json()["code"] == "unknown_sandbox"
    assert alice.get(f"/v1/sandboxes/{sandbox}/execs/{ex['execId']}").json()["output"] == "mine\n"


def test_terminate_kills_running_execs_and_removes_the_folder(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    sandbox = alice.create()
    home = Path(alice.run(sandbox, "pwd; touch file")["output"].strip())
    assert (home / "file").exists()
    if AS_ROOT:
        assert home.stat().st_uid == 65534 and stat.S_IMODE(home.stat().st_mode) == 0o700
    running = alice.start(sandbox, "echo $$; sleep 30 & sleep 30", timeoutMs=60_000).json()
    background = alice.run(sandbox, "echo $$; sleep 30 & echo started")  # the sleep keeps the pipe open
    assert background["status"] == "completed" and background["output"].split()[1:] == ["started"]
    resp = alice.terminate(sandbox)
    assert resp.status_code == 200 and resp.json()["status"] == "terminated" and resp.json()["persisted"] is False
    assert not home.exists()
    assert wait_gone(int(running["output"].split()[0])) and wait_gone(int(background["output"].split()[0]))
    after = alice.get(f"/v1/sandboxes/{sandbox}/execs/{running['execId']}").json()
    assert after["status"] == "cancelled" and after["returncode"] == 130
    assert alice.start(sandbox, "true").json()["code"] == "sandbox_terminated"
    assert alice.terminate(sandbox).status_code == 200  # again: the same answer


def test_persistent_folder_is_kept_for_the_logical_key(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    first = alice.create(persistentFilesystem=True, logicalKey="task-7")
    assert alice.run(first, "echo kept > note; pwd")["returncode"] == 0
    assert alice.terminate(first, snapshot=True).json()["persisted"] is True
    second = alice.create(persistentFilesystem=True, logicalKey="task-7")
    assert alice.run(second, "cat note")["output"] == "kept\n"
    home = Path(alice.run(second, "pwd")["output"].strip())
    assert alice.terminate(second, snapshot=False).json()["persisted"] is False
    assert not home.exists()


def test_sandbox_limits_answer_429(clients: dict[str, Client]) -> None:
    lim1, lim2 = clients["lim1"], clients["lim2"]
    for _ in range(3):
        lim1.create()
    refused = lim1.post("/v1/sandboxes", {"image": "x"})
    assert refused.status_code == 429 and refused.json()["code"] == "sandbox_limit"
    assert "per user" in refused.json()["error"] and refused.headers["retry-after"]
    lim2.create()
    lim2.create()
    full = lim2.post("/v1/sandboxes", {"image": "x"})
    assert full.status_code == 429 and "maximum of 5" in full.json()["error"]
    lim1.terminate(lim1.created[0])
    assert lim2.post("/v1/sandboxes", {"image": "x"}).status_code == 200


def test_refusals(gw: GatewayHarness, clients: dict[str, Client]) -> None:
    url = gw.relay_url("modal") + "/v1/sandboxes"
    missing = httpx.post(url, json={})
    assert missing.status_code == 401 and missing.json()["code"] == "missing_token"
    fred = httpx.post(url, json={}, headers={"authorization": f"Bearer {gw.token('fred')}"})
    assert fred.status_code == 403 and fred.json()["code"] == "category_not_covered"
    nina = httpx.post(url, json={}, headers={"authorization": f"Bearer {gw.token('nina')}"})
    assert nina.status_code == 403 and nina.json()["code"] == "not_entitled"
    alice = clients["alice"]
    bad = httpx.post(url, content=b"{not json", headers={**alice.headers, "content-type": "application/json"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_json"
    assert alice.post("/v1/sandboxes", {"memoryMiB": "lots"}).json()["code"] == "invalid_request"
    assert alice.post("/v1/sandboxes", {"cwd": "/etc"}).json()["code"] == "invalid_cwd"
    lone = httpx.post(url, content=b'{"logicalKey": "\\ud800"}', headers=alice.headers)  # JSON allows it, UTF-8 not
    assert lone.status_code == 400 and lone.json()["code"] == "invalid_request"
    sandbox = alice.create()
    assert alice.start(sandbox, ["echo", "hi"]).json()["error"].startswith("'command' must be one shell")
    assert alice.start(sandbox, "true", execId="../x").status_code == 400
    assert alice.get("/v1/sandboxes").status_code == 405
    assert alice.get("/v1/nothing").status_code == 404


def test_run_as_is_required_for_a_safe_setup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="run_as"):
        resolve_identity(SandboxConfig(backend="local"), tmp_path)
    with pytest.raises(ConfigError, match="no user"):
        resolve_identity(SandboxConfig(backend="local", run_as="no-such-user-here"), tmp_path)
    with pytest.raises(ConfigError, match=r"relays\.modal\.max_per_user"):
        load_config(None, overrides={"modal.max_per_user": 0}, env={}, home=tmp_path)
    if AS_ROOT:  # the gateway's 0700 state folder is closed to nobody
        closed = tmp_path / "closed"
        closed.mkdir(mode=0o700)
        with pytest.raises(ConfigError, match="cannot reach"):
            resolve_identity(SandboxConfig(backend="local", run_as="nobody"), closed / "sandboxes")


def test_idle_and_expired_sandboxes_are_reaped(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    idle = alice.create(idleTimeoutMs=1000)
    idle_home = Path(alice.run(idle, "pwd")["output"].strip())
    short = alice.create(timeoutMs=1500)
    busy = alice.start(short, "echo $$; sleep 30", timeoutMs=60_000).json()
    deadline = time.monotonic() + 10
    while idle_home.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not idle_home.exists()
    assert alice.start(idle, "true").json()["code"] == "sandbox_terminated"
    while alice.get(f"/v1/sandboxes/{short}/execs/{busy['execId']}").json()["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    ended = alice.get(f"/v1/sandboxes/{short}/execs/{busy['execId']}").json()
    assert ended["status"] == "cancelled" and "reached its lifetime" in ended["output"]
    assert wait_gone(int(busy["output"].split()[0]))


def test_folders_of_dead_processes_are_removed_at_start(tmp_path: Path) -> None:
    identity = resolve_identity(SandboxConfig(backend="local", run_as="nobody"), Path("/tmp")) if AS_ROOT else \
        resolve_identity(SandboxConfig(backend="local", allow_gateway_user=True), tmp_path)
    dead = tmp_path / "run" / "p1-dead"
    live = tmp_path / "run" / "p2-live"
    for folder in (dead, live):
        (folder / "sb-x").mkdir(parents=True)
        (folder / ".lock").touch()
    with open(live / ".lock", "rb") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        fs = SandboxFS(tmp_path, identity)
        fs.open()
        assert not dead.exists() and live.exists() and fs.run_dir.is_dir()
        home = fs.new_home("sb-1")
        assert home.parent == fs.run_dir and (home / ".tmp").is_dir()
        fs.close()
    assert not fs.run_dir.exists()


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_commands_run_on_both_event_loops(loop: str, tmp_path: Path) -> None:
    # regression: uvloop (uvicorn's loop when installed) refused user=/group=/umask= and its stdin pipe is no
    # asyncio.WriteTransport: every command of `hermes toolgateway serve` failed (126) or never saw its stdin
    who = resolve_identity(SandboxConfig(backend="local", run_as="nobody" if AS_ROOT else None,
                                         allow_gateway_user=not AS_ROOT), Path("/tmp") if AS_ROOT else tmp_path)
    async def run() -> tuple[int | None, str]:
        out = CappedOutput(4096)
        proc = await ExecProcess.start("id -u; umask; cat", cwd=Path("/"), env={"PATH": "/usr/bin:/bin"}, identity=who,
                                       limits=Rlimits(2**31, 10, 2**20), stdin=b"from stdin\n", output=out)
        code = await proc.wait(10)
        await proc.drain()
        proc.close()
        return code, out.text()
    runner = asyncio.run if loop == "asyncio" else pytest.importorskip("uvloop").run
    assert runner(run()) == (0, f"{who.uid}\n0077\nfrom stdin\n")
