"""Batch-run parts that need no cluster: the model limiter, the progress display, resuming after a crash."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply
from hermes.agent.batch import BatchItem, plan_items, repair_tail
from hermes.agent.batch_limits import RateLimits, RequestLimiter
from hermes.agent.batch_progress import BatchProgress
from hermes.config.yamlfile import ConfigFile
from hermes.errors import ConfigError
from hermes.tools.distributions import DISTRIBUTIONS


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_requests_per_minute_is_a_token_bucket() -> None:
    clock = FakeClock()
    limiter = RequestLimiter(RateLimits(requests_per_minute=120), clock=clock)  # two a second
    started = []

    def take() -> None:
        limiter.acquire("a")
        started.append(clock.now)
        limiter.release("a")

    for _ in range(2):  # a full bucket holds a second's worth
        take()
    waiter = threading.Thread(target=take)
    waiter.start()
    time.sleep(0.2)
    assert len(started) == 2 and waiter.is_alive()  # no token left until the clock moves
    clock.now += 0.5  # half a second refills one token
    waiter.join(timeout=5)
    assert len(started) == 3 and not waiter.is_alive()


def test_max_concurrent_requests_and_slots_freed_for_a_dead_holder() -> None:
    limiter = RequestLimiter(RateLimits(max_concurrent_requests=2))
    limiter.acquire("p1#1")
    limiter.acquire("p2#1")
    got = threading.Event()

    def third() -> None:
        limiter.acquire("p3#1")
        got.set()

    threading.Thread(target=third, daemon=True).start()
    assert not got.wait(0.2)
    assert limiter.release_holder("p1#1") == 1  # p1's worker died holding its slot
    assert got.wait(5)
    assert limiter.stats() == {"granted": 3, "in_flight": 2, "most_in_flight": 2, "freed_for_dead": 1}
    limiter.release("nobody")  # a release for a holder without slots changes nothing
    assert limiter.stats()["in_flight"] == 2


def test_limits_come_from_config_and_are_checked(tmp_path: Path) -> None:
    def config(text: str) -> ConfigFile:
        path = tmp_path / "config.yaml"
        path.write_text(text)
        return ConfigFile.load(path)

    assert not RateLimits.from_config(config("model: {}\n")).active
    limits = RateLimits.from_config(config("batch:\n  requests_per_minute: 30\n  max_concurrent_requests: 4\n"))
    assert limits == RateLimits(30.0, 4)
    with pytest.raises(ConfigError, match=r"batch\.max_concurrent_requests"):
        RateLimits.from_config(config("batch:\n  max_concurrent_requests: 0\n"))


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere() -> None:
    clock = FakeClock()
    stream = io.StringIO()
    bar = BatchProgress(4, stream, bar=True, clock=clock)
    bar.record(True, "p1 (web) ok 0.1s")
    clock.now += 1
    bar.retry("retrying p2 (attempt 2 of 3): WorkerCrashedError")
    bar.record(False, "p2 (web) failed: boom 0.1s")
    assert bar.render() == "[############............] 2/4 · 1 ok · 1 failed · 1 retried · 2.0/s · eta 1s"
    assert "retrying p2" in stream.getvalue() and "\r\x1b[2K" in stream.getvalue()
    bar.close()
    plain = io.StringIO()
    lines = BatchProgress(2, plain, bar=False)
    lines.record(True, "p1 (web) ok 0.1s")
    assert plain.getvalue() == "[1/2] p1 (web) ok 0.1s\n"


def test_repair_tail_cuts_only_an_unfinished_last_line(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    assert not repair_tail(path)  # no file yet
    path.write_text('{"id": "a"}\n{"id": "b"}\n')
    assert not repair_tail(path)
    path.write_text('{"id": "a"}\n{"id": "b", "fi')
    assert repair_tail(path, chunk=4)  # found across several chunks
    assert path.read_text() == '{"id": "a"}\n'
    path.write_text('{"id": "cut')
    assert repair_tail(path) and path.read_text() == ""


def test_a_resumed_plan_gives_the_remaining_prompts_the_same_toolsets() -> None:
    items = [BatchItem(f"p{i}", f"q{i}") for i in range(30)]
    dist = DISTRIBUTIONS["balanced"]
    whole = dict((item.id, ts) for item, ts in plan_items(items, dist, random.Random(9)))
    rest = plan_items(items, dist, random.Random(9), skip={f"p{i}" for i in range(0, 30, 2)})
    assert [item.id for item, _ in rest] == [f"p{i}" for i in range(1, 30, 2)]
    assert all(whole[item.id] == ts for item, ts in rest)


def test_single_process_resume_after_a_crash_redoes_the_cut_line(hermes_home: Path, model_server: Any,
                                                                 tmp_path: Path) -> None:
    server = model_server(lambda body: Reply(content="ok"))
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n  name: m\n")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"q{i}"}) + "\n" for i in range(4)))
    out = tmp_path / "p.trajectories.jsonl"
    out.write_text('{"id": "p0", "final": "ok"}\n{"id": "p1", "fin')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "batch", str(prompts), "-d", "minimal", "--resume"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "removed an unfinished last line" in proc.stderr and "batch: 3 prompts" in proc.stderr
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert sorted(ids) == ["p0", "p1", "p2", "p3"]


def test_bad_batch_flags_are_clear(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"prompt": "x"}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "batch", str(prompts), "--ray", "--retries", "-1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1 and "--retries must be at least 0" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "hermes", "batch", str(prompts), "--workers", "0"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 1 and "--workers must be at least 1" in proc.stderr


def test_worker_settings_carry_config_dotenv_and_credentials_but_not_ray_or_local_variables(
        hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from hermes.agent.batch_ray import WorkerSettings
    from hermes.config.settings import Settings

    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n"
                                             "batch:\n  retries: 4\n")
    (hermes_home / ".env").write_text("EXA_API_KEY=from-dotenv\n")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "ray-secret")
    monkeypatch.setenv("SOME_LOCAL_THING", "x")
    snapshot = WorkerSettings.capture(Settings.load())
    assert "sk-test" not in repr(snapshot)  # secrets stay out of reprs and logs
    assert snapshot.env.get("OPENAI_API_KEY") == "sk-test"
    assert "RAY_AUTH_TOKEN" not in snapshot.env and "SOME_LOCAL_THING" not in snapshot.env
    rebuilt = pickle.loads(pickle.dumps(snapshot)).settings()  # as a Ray worker gets it
    assert rebuilt.get("batch.retries") == 4
    assert rebuilt.model().base_url == "http://127.0.0.1:9/v1" and rebuilt.model().api_key == "sk-test"
    assert rebuilt.env.get("EXA_API_KEY") == "from-dotenv"
