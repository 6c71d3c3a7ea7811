"""Batch runs (requirement REG-10): sampled toolsets per prompt, trajectories as JSON Lines."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call
from hermes.errors import ConfigError
from hermes.tools.distributions import DISTRIBUTIONS, Distribution, load_distributions


def run_batch(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["HERMES_HOME"] = str(home)
    return subprocess.run([sys.executable, "-m", "hermes", "batch", *args], capture_output=True, text=True,
                          env=env, timeout=60)


def echo_script(body: dict[str, Any]) -> Reply:
    """Answer each prompt with its own text; prompts containing 'todo' make one tool call first."""
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    if "todo" in user and not any(m["role"] == "tool" for m in body["messages"]):
        return call("todo_list", {"todos": [{"id": "1", "content": user}]})
    return Reply(content=f"answer to: {user}")


def test_sampling_follows_probabilities_and_is_never_empty() -> None:
    dist = Distribution("t", "", {"a": 0.5, "b": 0.0, "c": 0.05})
    rng = random.Random(7)
    samples = [dist.sample(rng) for _ in range(4000)]
    assert all(samples)  # never empty: the likeliest toolset is used when nothing was drawn
    share_c = sum("c" in s for s in samples) / len(samples)
    assert 0.03 < share_c < 0.07
    # a is drawn half of the time, and also stands in whenever nothing was drawn (0.5 * 0.95)
    share_a = sum("a" in s for s in samples) / len(samples)
    assert 0.96 < share_a < 0.99
    assert not any("b" in s for s in samples)


def test_same_seed_same_plan() -> None:
    dist = DISTRIBUTIONS["balanced"]
    a = [dist.sample(random.Random(3)) for _ in range(5)]
    b = [dist.sample(random.Random(3)) for _ in range(5)]
    assert a == b


def test_user_distributions_from_config_and_validation() -> None:
    dists = load_distributions({"mine": {"description": "d", "toolsets": {"web": 0.25, "todo": 1}}})
    assert dists["mine"].toolsets == {"web": 0.25, "todo": 1.0}
    assert "default" in dists
    with pytest.raises(ConfigError, match=r"mine.toolsets.web must be between 0 and 1"):
        load_distributions({"mine": {"toolsets": {"web": 1.5}}})
    with pytest.raises(ConfigError, match="needs a toolsets mapping"):
        load_distributions({"mine": ["web"]})


def test_batch_run_writes_one_trajectory_per_prompt(hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    server = model_server(echo_script)
    (hermes_home / "config.yaml").write_text(
        f"model:\n  base_url: {server.url}\n  name: test-model\n"
        "batch:\n  distributions:\n    todo_only:\n      description: just todo\n      toolsets: {todo: 1.0}\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps(p) for p in [
        {"id": "a", "prompt": "hello"}, {"id": "b", "prompt": "make a todo"}, {"prompt": "third"}]) + "\n")
    proc = run_batch(hermes_home, str(prompts), "--distribution", "todo_only", "--seed", "1", "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "prompts.trajectories.jsonl"
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"a", "b", "3"}
    assert records["a"]["final"] == "answer to: hello"
    assert records["b"]["tool_calls"] == 1 and records["b"]["toolsets"] == ["todo"]
    assert [m["role"] for m in records["b"]["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    assert "[3/3]" in proc.stderr and "3 succeeded, 0 failed" in proc.stderr

    # a second run refuses to overwrite; --resume skips what is done
    assert run_batch(hermes_home, str(prompts), "-d", "todo_only").returncode == 1
    with prompts.open("a") as fh:
        fh.write(json.dumps({"id": "d", "prompt": "fourth"}) + "\n")
    proc = run_batch(hermes_home, str(prompts), "-d", "todo_only", "--resume")
    assert proc.returncode == 0, proc.stderr
    assert "1 prompts" in proc.stderr
    assert len(out.read_text().splitlines()) == 4


def test_batch_input_errors_are_clear(hermes_home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "ok"}\n{"nope": 1}\n')
    (hermes_home / "config.yaml").write_text("model:\n  base_url: http://127.0.0.1:9/v1\n  name: m\n")
    proc = run_batch(hermes_home, str(bad))
    assert proc.returncode == 1 and "bad.jsonl:2" in proc.stderr and "'prompt'" in proc.stderr
    proc = run_batch(hermes_home, str(bad), "--distribution", "nope")
    assert proc.returncode == 1 and "unknown distribution 'nope'" in proc.stderr
    proc = run_batch(hermes_home, "--list-distributions")
    assert proc.returncode == 0 and "research" in proc.stdout


def test_failed_prompt_is_recorded_and_exit_code_nonzero(hermes_home: Path, model_server: Any,
                                                         tmp_path: Path) -> None:
    server = model_server([Reply(status=400, error_message="bad request for this one"), Reply(content="fine")])
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n  name: m\n")
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "x", "prompt": "one"}\n{"id": "y", "prompt": "two"}\n')
    proc = run_batch(hermes_home, str(prompts), "-d", "minimal")
    assert proc.returncode == 1
    records = {r["id"]: r for r in map(json.loads, (tmp_path / "p.trajectories.jsonl").read_text().splitlines())}
    assert records["x"]["reason"] == "error" and "bad request for this one" in records["x"]["error"]
    assert records["y"]["final"] == "fine"


def test_a_one_model_endpoint_needs_no_model_name(hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    server = model_server(echo_script, model="the-only-model")
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n")
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "a", "prompt": "hello"}) + "\n")
    proc = run_batch(hermes_home, str(prompts))
    assert proc.returncode == 0, proc.stderr
    assert "serves one model, the-only-model, so this uses it" in proc.stderr
    assert {r["model"] for r in server.requests} == {"the-only-model"}
