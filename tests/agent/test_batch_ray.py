"""``hermes batch --ray`` on a real two-node Ray cluster on 127.0.0.1 (requirement REG-10, issue 21).

One cluster for the module (``tests/fakes/ray_cluster.py``: a head with 2 CPUs and a second node with 1,
both bound to loopback), the scripted model server, and ``hermes batch`` run as a subprocess.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply
from fakes.ray_cluster import LOOPBACK_SWITCH, LoopbackRayCluster, descendants, listening_hosts

pytest.importorskip("ray")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackRayCluster]:
    started = LoopbackRayCluster(head_cpus=2, node_cpus=1).start()
    try:
        assert listening_hosts(started.processes()) == {"127.0.0.1"}  # both nodes, every server
        yield started
    finally:
        left = started.stop()
    assert not left, f"Ray processes outlived the tests: {left}"


class SlowEcho:
    """Answers each prompt with its own text after ``delay`` seconds; counts requests in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
        finally:
            with self.lock:
                self.in_flight -= 1
        user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        return Reply(content=f"answer to: {user}")


def batch_env(home: Path, cluster: LoopbackRayCluster) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(HERMES_HOME=str(home))
    env.update(cluster.client_env)  # 127.0.0.1 only (Ray's loopback switch) and the cluster's token
    assert env[LOOPBACK_SWITCH] == "0"
    return env


def setup_run(home: Path, tmp_path: Path, server_url: str, count: int, extra: str = "") -> Path:
    (home / "config.yaml").write_text(f"model:\n  base_url: {server_url}\n  name: m\n  stream: false\n{extra}")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"question {i}"}) + "\n" for i in range(count)))
    return prompts


def batch_cmd(prompts: Path, cluster: LoopbackRayCluster, *more: str) -> list[str]:
    return [sys.executable, "-m", "hermes", "batch", str(prompts), "-d", "balanced", "--seed", "5",
            "--ray", cluster.address, *more]


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def wait_for_lines(path: Path, count: int, proc: subprocess.Popen[str], limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.1)
    raise AssertionError(f"{path} did not reach {count} lines")


def test_200_prompts_on_two_nodes_with_a_worker_killed_mid_run(
        cluster: LoopbackRayCluster, hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    model = SlowEcho(delay=0.02)
    server = model_server(model)
    prompts = setup_run(hermes_home, tmp_path, server.url, 200, "batch:\n  max_concurrent_requests: 2\n")
    out = tmp_path / "prompts.trajectories.jsonl"
    proc = subprocess.Popen(batch_cmd(prompts, cluster, "--workers", "3"), env=batch_env(hermes_home, cluster),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_lines(out, 10, proc)
        deadline = time.monotonic() + 60
        while not (victims := cluster.task_processes("run_prompt")):
            assert time.monotonic() < deadline, "no worker was running a prompt"
            time.sleep(0.02)
        os.kill(victims[0], signal.SIGKILL)  # a worker process dies in the middle of a prompt
        _, stderr = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-3000:]
    records = records_of(out)
    assert len(records) == 200
    assert sorted(r["id"] for r in records) == sorted(f"p{i}" for i in range(200))
    assert all(r["final"] == f"answer to: question {r['id'][1:]}" and r["error"] is None for r in records)
    assert len({r["worker"]["node"] for r in records}) == 2  # both nodes ran prompts
    # the killed worker's prompt was run again elsewhere, and its failed attempt is on record
    retried = [r for r in records if r["attempts"] > 1]
    assert retried, stderr[-3000:]
    assert all(r["failures"] and r["worker"]["pid"] != victims[0] for r in retried)
    assert any("died" in r["failures"][0].lower() or "crash" in r["failures"][0].lower() for r in retried)
    assert all(r["attempts"] == 1 and r["failures"] == [] for r in records if r not in retried)
    # toolsets drawn per prompt exactly as the single-process runner draws them for this seed
    from hermes.tools.distributions import DISTRIBUTIONS

    rng = random.Random(5)
    expected = {f"p{i}": DISTRIBUTIONS["balanced"].sample(rng) for i in range(200)}
    assert {r["id"]: r["toolsets"] for r in records} == expected
    assert len({tuple(t) for t in expected.values()}) > 1
    # three prompts ran at once across the cluster, but never more than two model requests
    assert 1 <= model.most_in_flight <= 2
    assert "retrying p" in stderr and "[200/200]" in stderr and "200 succeeded, 0 failed" in stderr


def test_a_resumed_run_writes_nothing_twice(
        cluster: LoopbackRayCluster, hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    server = model_server(SlowEcho(delay=0.1))
    prompts = setup_run(hermes_home, tmp_path, server.url, 30)
    out = tmp_path / "prompts.trajectories.jsonl"
    first = subprocess.Popen(batch_cmd(prompts, cluster, "--workers", "3"), env=batch_env(hermes_home, cluster),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_lines(out, 8, first)
    finally:
        first.kill()  # the driver crashes mid-run
        first.communicate(timeout=30)
    done = {json.loads(line)["id"] for line in out.read_text().splitlines() if line.endswith("}")}
    assert 8 <= len(done) < 30
    with out.open("a") as fh:
        fh.write('{"id": "p29", "prompt": "question 29", "fin')  # a line cut by the crash
    second = subprocess.run(batch_cmd(prompts, cluster, "--workers", "3", "--resume"),
                            env=batch_env(hermes_home, cluster), capture_output=True, text=True, timeout=200)
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"batch: {30 - len(done)} prompts" in second.stderr
    assert "removed an unfinished last line" in second.stderr
    ids = [r["id"] for r in records_of(out)]  # every line parses: the cut one is gone
    assert sorted(ids) == sorted(f"p{i}" for i in range(30))  # each id exactly once


def test_a_local_cluster_listens_on_loopback_only_and_keeps_its_token_off_disk(
        hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}
    driver: list[int] = []

    def answer(body: dict[str, Any]) -> Reply:
        if driver and "hosts" not in seen:  # the cluster is up while its workers ask the model
            seen["pids"] = [p for p in descendants(driver[0]) if p != driver[0]]
            seen["hosts"] = listening_hosts(seen["pids"])
        return Reply(content="fine")

    server = model_server(answer)
    prompts = setup_run(hermes_home, tmp_path, server.url, 3)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI", "RAY_"))}
    ray_tmp = tempfile.mkdtemp(prefix="hr-", dir="/tmp")  # short: Ray's socket paths live below it
    env.update(HERMES_HOME=str(hermes_home), HOME=str(tmp_path), RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=ray_tmp)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "batch", str(prompts), "--ray", "--workers", "1"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    driver.append(proc.pid)
    _, stderr = proc.communicate(timeout=240)
    assert proc.returncode == 0, stderr[-3000:]
    assert "on a local Ray cluster" in stderr and "3 succeeded, 0 failed" in stderr
    assert len(records_of(tmp_path / "prompts.trajectories.jsonl")) == 3
    assert seen["hosts"] == {"127.0.0.1"}
    assert not (tmp_path / ".ray").exists()  # the run's token lived only in the cluster's environment
    deadline = time.monotonic() + 20  # the local cluster stops with the run
    while (alive := [p for p in seen["pids"] if descendants(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in alive:  # never left behind, even when the check below fails
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not alive
