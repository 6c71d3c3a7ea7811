"""`hermes chat -q` / `hermes -z` as a subprocess against a scripted model server over real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, call, error, text

DATA = Path(__file__).parents[1] / "data"


def hermes(home: Path, *args: str, env: dict[str, str] | None = None, input: str | None = None,
           timeout: float = 45) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL")}
    full_env["HERMES_HOME"] = str(home)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True,
                          env=full_env, input=input, timeout=timeout)


def install_plugin(home: Path, name: str, source: str) -> None:
    folder = home / "plugins" / name
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / source, folder / source)


def endpoint(url: str) -> list[str]:
    return ["--base-url", url, "--model", "test-model"]


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("source", ["weather_tool.py", "seed_weather_tool.py"])
def test_weather_plugin_round_trip(hermes_home: Path, model_server: Any, source: str) -> None:
    """requirement REG-11: the seed's weather tool dropped in as a plugin works through `chat -q` — as
    docs/writing-tools.md writes it, and verbatim as the seed does (``from tools.registry import registry``)."""
    install_plugin(hermes_home, "weather", source)
    (hermes_home / ".env").write_text("WEATHER_API_KEY=test-weather-key-123\n")
    server = model_server([call("weather", {"location": "London"}), text("It is 22 degrees in London.")])
    proc = hermes(hermes_home, "chat", "-q", "Use the weather tool for London", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "It is 22 degrees in London."
    first, second = server.requests
    assert "weather" in [t["function"]["name"] for t in first["tools"]]
    assert first["stream"] is True
    result = json.loads(tool_messages(second)[0]["content"])
    assert result == {"location": "London", "temp": 22, "units": "metric"}
    assert "weather" in proc.stderr  # compact tool activity on stderr, answer alone on stdout


def test_unavailable_plugin_tool_is_left_out(hermes_home: Path, model_server: Any) -> None:
    install_plugin(hermes_home, "weather", "weather_tool.py")
    server = model_server([text("No weather tool here.")])
    proc = hermes(hermes_home, "-z", "weather?", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    names = [t["function"]["name"] for t in server.requests[0].get("tools", [])]
    assert "weather" not in names


def test_two_parallel_calls_results_in_order(hermes_home: Path, model_server: Any, tmp_path: Path) -> None:
    install_plugin(hermes_home, "slow", "slow_tool.py")
    log = tmp_path / "slow.log"
    server = model_server([
        call("slow_echo", {"label": "first", "seconds": 0.6}, "slow_echo", {"label": "second", "seconds": 0.3}),
        text("both done"),
    ])
    proc = hermes(hermes_home, "chat", "-q", "go", *endpoint(server.url), env={"SLOW_TOOL_LOG": str(log)})
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(m["content"])["label"] for m in tool_messages(server.requests[1])]
    assert results == ["first", "second"]
    runs = {r["label"]: r for r in map(json.loads, log.read_text().splitlines())}
    # the two executions overlapped in time: each started before the other ended
    assert runs["first"]["start"] < runs["second"]["end"] and runs["second"]["start"] < runs["first"]["end"]
    assert runs["first"]["thread"] != runs["second"]["thread"]
    assert runs["first"]["task_id"]  # the session id reaches handlers as task_id


def test_unknown_tool_and_malformed_arguments_keep_the_loop_going(hermes_home: Path, model_server: Any) -> None:
    install_plugin(hermes_home, "weather", "weather_tool.py")
    server = model_server([
        call("no_such_tool", {}, "weather", "{not json", "weather", {"location": 42}, "weather", {"units": "metric"}),
        call("weather", {"location": "Paris", "units": "kelvin"}),
        text("recovered"),
    ])
    proc = hermes(hermes_home, "chat", "-q", "x", *endpoint(server.url), env={"WEATHER_API_KEY": "k" * 12})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "recovered"
    errors = [json.loads(m["content"])["error"] for m in tool_messages(server.requests[1])]
    assert "no_such_tool" in errors[0] and "does not exist" in errors[0]
    assert "not valid JSON" in errors[1]
    assert "'location' must be string, got integer" in errors[2]
    assert "missing required argument 'location'" in errors[3]
    last = json.loads(tool_messages(server.requests[2])[-1]["content"])["error"]
    assert "'units' must be one of" in last


def test_budget_exhaustion_ends_with_one_toolless_summary(hermes_home: Path, model_server: Any) -> None:
    install_plugin(hermes_home, "weather", "weather_tool.py")
    server = model_server([
        call("weather", {"location": "A"}), call("weather", {"location": "B"}), text("Summary: A and B are warm."),
    ])
    proc = hermes(hermes_home, "chat", "-q", "loop", "--max-iterations", "2", *endpoint(server.url),
                  env={"WEATHER_API_KEY": "k" * 12})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Summary: A and B are warm."
    assert len(server.requests) == 3
    final_request = server.requests[2]
    assert "tools" not in final_request
    assert "budget" in final_request["messages"][-1]["content"]


def test_rate_limit_then_success(hermes_home: Path, model_server: Any) -> None:
    server = model_server([error(429, "slow down", retry_after="0"), error(503, "busy", retry_after="0"),
                           text("finally")])
    proc = hermes(hermes_home, "-z", "hello", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "finally"
    assert len(server.requests) == 3
    assert "retry" in proc.stderr


def test_persistent_server_error_fails_with_exit_code(hermes_home: Path, model_server: Any) -> None:
    server = model_server([error(500, "boom", retry_after="0")] * 5)
    (hermes_home / "config.yaml").write_text("model:\n  max_retries: 1\n")
    proc = hermes(hermes_home, "-z", "hello", *endpoint(server.url))
    assert proc.returncode == 1
    assert "kept failing" in proc.stderr and "boom" in proc.stderr
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr


def test_no_endpoint_configured_names_the_keys(hermes_home: Path) -> None:
    # with the local extra installed hermes would fall back to the embedded model (tests/agent/test_local_model.py)
    proc = hermes(hermes_home, "-z", "hello", env={"HERMES_NO_LOCAL_FALLBACK": "1"})
    assert proc.returncode == 1
    assert "model.base_url" in proc.stderr and "OPENAI_BASE_URL" in proc.stderr and "hermes setup" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unreachable_endpoint(hermes_home: Path) -> None:
    (hermes_home / "config.yaml").write_text("model:\n  max_retries: 0\n")
    proc = hermes(hermes_home, "-z", "hello", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert proc.returncode == 1
    assert "cannot reach the model endpoint" in proc.stderr and "model.base_url" in proc.stderr


def test_openai_environment_variables_are_zero_config(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("env works")])
    proc = hermes(hermes_home, "-z", "hi", env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test-abc",
                                                "HERMES_MODEL": "env-model"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "env works"
    assert server.requests[0]["model"] == "env-model"
    headers = {k.lower(): v for k, v in server.request_headers[0].items()}
    assert headers["authorization"] == "Bearer sk-test-abc"


def test_config_file_endpoint_and_non_streaming(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("from config")])
    (hermes_home / "config.yaml").write_text(
        f"# my settings\nmodel:\n  base_url: {server.url}\n  name: cfg-model\n  stream: false\n")
    (hermes_home / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv\n")
    proc = hermes(hermes_home, "chat", "-q", "hi")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "from config"
    assert server.requests[0]["model"] == "cfg-model"
    assert not server.requests[0].get("stream")
    headers = {k.lower(): v for k, v in server.request_headers[0].items()}
    assert headers["authorization"] == "Bearer sk-from-dotenv"


def test_continue_and_resume_reuse_the_stored_history(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("first answer"), text("second answer"), text("third answer")])
    assert hermes(hermes_home, "-z", "remember the word kiwi", *endpoint(server.url)).returncode == 0
    proc = hermes(hermes_home, "chat", "--continue", "-q", "what was the word?", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    contents = [m.get("content") for m in server.requests[1]["messages"]]
    assert contents[1:] == ["remember the word kiwi", "first answer", "what was the word?"]
    assert server.requests[1]["messages"][0]["role"] == "system"

    from hermes.store.sessions import SessionStore

    store = SessionStore(hermes_home / "state.db")
    try:
        (session,) = store.list_sessions()
        assert session.message_count == 5
    finally:
        store.close()
    proc = hermes(hermes_home, "chat", "--resume", session.id[:12], "-q", "and again?", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests[2]["messages"]) == 6


def test_resume_unknown_session_is_a_clear_error(hermes_home: Path, model_server: Any) -> None:
    server = model_server([])
    proc = hermes(hermes_home, "chat", "--resume", "nope1234", "-q", "x", *endpoint(server.url))
    assert proc.returncode == 1
    assert "nope1234" in proc.stderr and "Traceback" not in proc.stderr


def test_toolsets_flag_chooses_the_session_tools(hermes_home: Path, model_server: Any) -> None:
    install_plugin(hermes_home, "weather", "weather_tool.py")
    server = model_server([text("ok")])
    proc = hermes(hermes_home, "-z", "x", "--toolsets", "todo", *endpoint(server.url),
                  env={"WEATHER_API_KEY": "k" * 12})
    assert proc.returncode == 0, proc.stderr
    names = sorted(t["function"]["name"] for t in server.requests[0]["tools"])
    assert names == ["todo_list", "weather"]  # todo requested; plugin toolsets join by default
    proc = hermes(hermes_home, "-z", "x", "--toolsets", "nonsense", *endpoint(server.url))
    assert proc.returncode == 1 and "unknown toolset" in proc.stderr


def test_todo_list_is_intercepted_per_session(hermes_home: Path, model_server: Any) -> None:
    server = model_server([
        call("todo_list", {"todos": [{"id": "1", "content": "plan", "status": "in_progress"}]}),
        call("todo_list", {"todos": [{"id": "1", "status": "completed"}], "merge": True}),
        text("done"),
    ])
    proc = hermes(hermes_home, "-z", "x", *endpoint(server.url))
    assert proc.returncode == 0, proc.stderr
    state = json.loads(tool_messages(server.requests[2])[-1]["content"])
    assert state["todos"] == [{"id": "1", "content": "plan", "status": "completed"}]


def test_interactive_chat_from_piped_stdin(hermes_home: Path, model_server: Any) -> None:
    server = model_server([text("hello there"), text("bye")])
    proc = hermes(hermes_home, "chat", *endpoint(server.url), input="hi\n/tools\nsecond\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    assert "hello there" in proc.stdout and "bye" in proc.stdout
    assert "todo_list" in proc.stdout  # the /tools command
    assert len(server.requests[1]["messages"]) == 4  # system, user, assistant, user: one session
    assert "hermes chat --resume" in proc.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_stops_the_turn_and_keeps_the_session(hermes_home: Path, model_server: Any) -> None:
    server = model_server([Reply(content="a very slow answer", delay=20)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "-z", "slow please", *endpoint(server.url)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.requests, "the model was never called"
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=15)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    from hermes.store.sessions import SessionStore

    store = SessionStore(hermes_home / "state.db")
    try:
        (session,) = store.list_sessions()
        assert [m["role"] for m in store.messages(session.id)] == ["system", "user"]
    finally:
        store.close()
