"""The modal relay's local engine, safety: the gateway never follows a link the sandbox user controls, and
the exec output it holds in memory stays within its budget.

As in ``test_modal.py``, the gateway runs for real under uvicorn; when the tests run as root,
commands run as ``nobody`` (``run_as``), and the sandbox root lies under a 0711 folder in /tmp.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vendors.harness import GatewayHarness
from gateway.test_modal import AS_ROOT, Client
from hermes.errors import ConfigError
from hermes.toolgateway.config import load_config
from hermes.toolgateway.sandbox.config import SandboxConfig
from hermes.toolgateway.sandbox.engine import resolve_identity
from hermes.toolgateway.sandbox.fs import SandboxFS, child_dir, open_dir
from hermes.toolgateway.sandbox.proc import CappedOutput, ExecProcess, Identity, Rlimits
from hermes.toolgateway.sandbox.store import Exec, ExecSpec, OutputBudget

CAP = 4096  # max_output_bytes
PER_USER = 10_000  # two full outputs fit, a third does not
TOTAL = 20_000  # four full outputs fit, a fifth does not
FULL = f"head -c {CAP} /dev/zero | tr '\\0' a"


@pytest.fixture(scope="module")
def root(traversable_root: Path) -> Path:
    return traversable_root


@pytest.fixture(scope="module")
def target(root: Path) -> Path:
    """A folder outside every sandbox, which no request may change."""
    folder = root / "target"
    folder.mkdir()
    folder.chmod(0o755)
    (folder / "precious").write_text("keep me\n")
    return folder


@pytest.fixture(scope="module")
def gw(root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayHarness]:
    who = {"modal.run_as": "nobody"} if AS_ROOT else {"modal.allow_gateway_user": True}
    harness = GatewayHarness(
        tmp_path_factory.mktemp("gw_modal_safety"), admin_token="admin-token-of-the-safety-tests",
        rate_limit={"per_second": 1000, "burst": 1000},
        **{"modal.backend": "local", "modal.root": str(root / "sandboxes"), "modal.exec_wait": 1.5,
           "modal.max_output_bytes": CAP, "modal.max_output_kept_per_user": PER_USER,
           "modal.max_output_kept": TOTAL, **who})
    with harness:
        for name in ("alice", "bob", "carol"):
            harness.user(name, "paid")
        yield harness


@pytest.fixture
def clients(gw: GatewayHarness) -> Iterator[dict[str, Client]]:
    made = {name: Client(gw, name) for name in ("alice", "bob", "carol")}
    yield made
    for client in made.values():
        for sandbox in client.created:
            client.terminate(sandbox)


def state(folder: Path) -> tuple[int, int, int, list[str]]:
    info = folder.stat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode), sorted(os.listdir(folder))


def identity(root: Path) -> Identity:
    if AS_ROOT:
        return resolve_identity(SandboxConfig(backend="local", run_as="nobody"), root)
    return resolve_identity(SandboxConfig(backend="local", allow_gateway_user=True), root)


# -- links -------------------------------------------------------------------------------------------


def test_cwd_through_a_planted_link_is_refused(clients: dict[str, Client], target: Path) -> None:
    alice = clients["alice"]
    first = alice.create(persistentFilesystem=True, logicalKey="trap")
    planted = alice.run(first, f"ln -s {target} x && ln -s {target} ~/.tmp/y && ls -l x")
    assert planted["returncode"] == 0 and "->" in planted["output"]
    before = state(target)
    body = {"image": "python:3.11", "persistentFilesystem": True, "logicalKey": "trap"}
    for cwd in ("~/x/p", "/root/x", "x/p/q", "~/.tmp/y/p"):
        resp = alice.post("/v1/sandboxes", {**body, "cwd": cwd})
        assert resp.status_code == 400 and resp.json()["code"] == "invalid_cwd", cwd
        assert alice.start(first, "pwd", cwd=cwd).json()["code"] == "invalid_cwd"
    assert state(target) == before
    assert alice.terminate(first, snapshot=False).json()["persisted"] is False  # deletes the link, not the target
    assert state(target) == before and (target / "precious").read_text() == "keep me\n"


def test_a_link_raced_into_the_cwd_never_reaches_outside(clients: dict[str, Client], target: Path) -> None:
    # regression: between the realpath check and the folder creation, the sandbox user swapped ~/x for a link
    # to a folder outside; the gateway (root) then chowned and chmodded that folder to the sandbox user
    alice = clients["alice"]
    attacker = alice.create(persistentFilesystem=True, logicalKey="race")
    swap = alice.start(attacker, f"while :; do ln -sT {target} x 2>/dev/null; rm -rf x; done", timeoutMs=60_000)
    assert swap.json()["status"] == "running"
    before = state(target)
    body = {"image": "python:3.11", "persistentFilesystem": True, "logicalKey": "race", "cwd": "~/x/p"}
    answers: dict[int, int] = {}
    deadline = time.monotonic() + 20
    for _ in range(150):
        if time.monotonic() > deadline:
            break
        resp = alice.post("/v1/sandboxes", body)
        answers[resp.status_code] = answers.get(resp.status_code, 0) + 1
        assert resp.status_code in (200, 400), resp.text
        if resp.status_code == 200:
            alice.terminate(resp.json()["id"], snapshot=True)
        assert state(target) == before
    assert answers.get(400, 0) + answers.get(200, 0) >= 20
    alice.post(f"/v1/sandboxes/{attacker}/execs/{swap.json()['execId']}/cancel")
    alice.terminate(attacker, snapshot=False)
    assert state(target) == before and (target / "precious").read_text() == "keep me\n"


def test_make_dirs_walks_without_following_links(root: Path, target: Path) -> None:
    who = identity(root)
    fs = SandboxFS(root / "unit", who)
    fs.open()
    try:
        home = fs.new_home("sb-unit")
        (home / "x").symlink_to(target)
        (home / "file").write_text("")
        before = state(target)
        for wanted in (home / "x" / "p", home / "x", home / "file" / "p"):
            with pytest.raises(OSError):
                fs.make_dirs(wanted, home)
        with pytest.raises(OSError):
            fs.make_dirs(target / "p", home)  # not inside the home at all
        assert state(target) == before
        fd = open_dir(home)
        try:
            with pytest.raises(NotADirectoryError):
                child_dir(fd, "x", 0o700, who)
            with pytest.raises(OSError):
                child_dir(fd, "..", 0o700, who)
        finally:
            os.close(fd)
        fs.make_dirs(home / "a" / "b", home)
        for made in (home / "a", home / "a" / "b"):
            assert made.lstat().st_uid == who.uid and stat.S_IMODE(made.lstat().st_mode) == 0o700
        fs.make_dirs(home / "a" / "b", home)  # existing folders are fine
        # deleting the home deletes the links in it, not what they point at; read-only folders go too
        (home / "a" / "link").symlink_to(target)
        (home / "a" / "b" / "ro").mkdir()
        (home / "a" / "b" / "ro" / "f").write_text("x")
        (home / "a" / "b" / "ro").chmod(0o500)
        (home / "a" / "b").chmod(0o500)
        fs.remove(home)
        assert not home.exists() and state(target) == before
    finally:
        fs.close()
    assert (target / "precious").read_text() == "keep me\n"


@pytest.mark.skipif(not AS_ROOT, reason="needs root to switch to another user")
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_command_enters_its_folder_as_the_sandbox_user(loop: str, root: Path) -> None:
    # regression: the child changed into its cwd while still root, following links with root's rights
    closed = root / "closed-to-nobody"
    closed.mkdir(mode=0o700, exist_ok=True)
    who = identity(root)
    out = CappedOutput(1024)

    async def start(cwd: Path) -> int | None:
        proc = await ExecProcess.start("pwd", cwd=cwd, env={"PATH": "/usr/bin:/bin"}, identity=who,
                                       limits=Rlimits(2**31, 10, 2**20), stdin=None, output=out)
        code = await proc.wait(10)
        await proc.drain()
        proc.close()
        return code

    runner = asyncio.run if loop == "asyncio" else pytest.importorskip("uvloop").run
    with pytest.raises(subprocess.SubprocessError):
        runner(start(closed))
    assert runner(start(root)) == 0 and out.text() == f"{root}\n"


# -- output budget -----------------------------------------------------------------------------------


def poll(client: Client, sandbox: str, exec_id: str) -> dict[str, object]:
    resp = client.get(f"/v1/sandboxes/{sandbox}/execs/{exec_id}")
    assert resp.status_code == 200, resp.text
    data: dict[str, object] = resp.json()
    return data


def assert_kept(data: dict[str, object]) -> None:
    assert data["output"] == "a" * CAP and "outputDropped" not in data and data["truncated"] is False


def assert_dropped(data: dict[str, object], status: str = "completed", returncode: int = 0) -> None:
    assert data["status"] == status and data["returncode"] == returncode and data["outputDropped"] is True
    assert isinstance(data["output"], str) and "no longer kept" in data["output"] and "aaaa" not in data["output"]
    assert data["truncated"] is True


def test_output_past_the_budget_drops_the_oldest(clients: dict[str, Client]) -> None:
    alice, bob, carol = clients["alice"], clients["bob"], clients["carol"]
    mine = alice.create()
    runs = [alice.run(mine, FULL) for _ in range(3)]  # 3 x 4096 > 10000 per user: the first goes
    assert all(r["status"] == "completed" and r["output"] == "a" * CAP for r in runs)
    assert_dropped(poll(alice, mine, runs[0]["execId"]))
    assert "per user" in str(poll(alice, mine, runs[0]["execId"])["output"])
    for run in runs[1:]:
        assert_kept(poll(alice, mine, run["execId"]))
    theirs = bob.create()
    bobs = [bob.run(theirs, FULL) for _ in range(2)]  # 16384 in all
    other = carol.create()
    carols = carol.run(other, FULL)  # 20480 > 20000 in all: the oldest of anyone's goes (alice's second)
    assert carols["output"] == "a" * CAP
    assert_dropped(poll(alice, mine, runs[1]["execId"]))
    assert_kept(poll(alice, mine, runs[2]["execId"]))
    for run in bobs:
        assert_kept(poll(bob, theirs, run["execId"]))
    quiet = alice.run(mine, "true")  # no output: nothing to drop, nothing said
    # an ended sandbox keeps its execs' status and note, not their output
    running = alice.start(mine, "echo started; sleep 30", timeoutMs=60_000).json()
    assert alice.terminate(mine).status_code == 200
    assert_dropped(poll(alice, mine, runs[2]["execId"]))
    ended = poll(alice, mine, running["execId"])
    assert_dropped(ended, "cancelled", 130)
    assert "the sandbox was terminated" in str(ended["output"])
    assert poll(alice, mine, quiet["execId"])["output"] == ""
    assert_kept(poll(bob, theirs, bobs[1]["execId"]))  # someone else's sandbox is untouched


def test_a_reaped_sandbox_keeps_its_output_for_a_late_poll(clients: dict[str, Client]) -> None:
    alice = clients["alice"]
    short = alice.create(timeoutMs=1000)
    busy = alice.start(short, "echo partial; sleep 30", timeoutMs=60_000).json()
    deadline = time.monotonic() + 10
    while (data := poll(alice, short, busy["execId"]))["status"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert data["status"] == "cancelled" and data["returncode"] == 130 and "outputDropped" not in data
    assert str(data["output"]).startswith("partial\n") and "reached its lifetime" in str(data["output"])
    alice.terminate(short)  # now the client is done: the output goes
    assert_dropped(poll(alice, short, busy["execId"]), "cancelled", 130)


def exec_with(output: bytes, name: str) -> Exec:
    ex = Exec(ExecSpec(name, "true", None, 1.0, None), Path("/"), 8)
    ex.output.feed(output)
    ex.finish("completed", 0)
    return ex


def test_output_budget_counts_and_releases() -> None:
    budget = OutputBudget(per_user=16, total=24)
    a1, a2, a3, b1, b2 = (exec_with(b"x" * 8, name) for name in ("a1", "a2", "a3", "b1", "b2"))
    budget.keep(a1, "a")
    budget.keep(a2, "a")
    budget.keep(a2, "a")  # counted once
    assert budget.used_by("a") == 16 and budget.used == 16
    budget.keep(a3, "a")
    assert a1.dropped is not None and a2.dropped is None and budget.used_by("a") == 16
    budget.keep(b1, "b")
    assert budget.used == 24
    budget.keep(b2, "b")
    assert a2.dropped is not None and a3.dropped is None and budget.used == 24 and budget.used_by("a") == 8
    assert a1.view()["returncode"] == 0 and a1.view()["outputDropped"] is True and a1.output.size == 0
    assert a3.view()["output"] == "x" * 8
    budget.release(a3, "gone")
    assert budget.used_by("a") == 0 and budget.used == 16 and "gone" in str(a3.view()["output"])
    empty = exec_with(b"", "e")
    budget.keep(empty, "a")
    budget.release(empty, "gone")
    assert empty.view()["output"] == "" and "outputDropped" not in empty.view()


def test_output_budget_config(tmp_path: Path) -> None:
    cfg = load_config(None, overrides={"modal.max_output_bytes": 4096, "modal.max_output_kept_per_user": 1024,
                                       "modal.max_output_kept": 2048}, env={}, home=tmp_path).modal
    assert (cfg.max_output_kept_per_user, cfg.max_output_kept) == (4096, 4096)  # never below one exec's output
    defaults = SandboxConfig()
    assert defaults.max_output_kept_per_user == 32 * 1024 * 1024 and defaults.max_output_kept == 256 * 1024 * 1024
    with pytest.raises(ConfigError, match=r"relays\.modal\.max_output_kept_per_user"):
        load_config(None, overrides={"modal.max_output_kept_per_user": "lots"}, env={}, home=tmp_path)
