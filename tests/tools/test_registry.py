"""The tool registry's public contract (requirement REG-1…REG-7): registration, dispatch, bridging, shaping."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, Literal
from unittest import mock

import pytest

import hermes.tools.registry
from hermes.errors import ApprovalDenied, ToolError
from hermes.redact import MASK
from hermes.tools.registry import ToolEntry, ToolRegistry
from hermes.tools.results import TRUNCATION_MARKER
from hermes.tools.session import SessionContext, ToolSession

# -- the seed's weather tool (seed 001): the plugin file tests/data/weather_tool.py, run once with a registry
# of its own standing in for the process-wide one; ``register_weather`` repeats its registration on another
_SEED_FILE = Path(__file__).parents[1] / "data" / "weather_tool.py"


def _load_seed() -> tuple[ModuleType, ToolEntry]:
    spec = importlib.util.spec_from_file_location("seed_weather_tool", _SEED_FILE)
    assert spec is not None and spec.loader is not None
    module, own = importlib.util.module_from_spec(spec), ToolRegistry()
    with mock.patch.object(hermes.tools.registry, "registry", own):
        spec.loader.exec_module(module)
    entry = own.get("weather")
    assert entry is not None
    return module, entry


_SEED, _SEED_ENTRY = _load_seed()
check_weather_requirements = _SEED.check_weather_requirements
weather_tool = _SEED.weather_tool
WEATHER_SCHEMA = _SEED.WEATHER_SCHEMA


def register_weather(reg: ToolRegistry) -> None:
    e = _SEED_ENTRY
    reg.register(name=e.name, toolset=e.toolset, schema=e.schema, handler=e.handler, check_fn=e.check_fn,
                 requires_env=list(e.requires_env))


def simple_schema(name: str, **properties: Any) -> dict[str, Any]:
    return {"name": name, "description": f"{name} tool", "parameters": {"type": "object", "properties": properties}}


@pytest.fixture
def reg() -> ToolRegistry:
    return ToolRegistry()


@pytest.fixture
def weather_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    return "weather-key-0123456789"


def error_of(result: str) -> str:
    payload = json.loads(result)
    assert isinstance(payload, dict) and set(payload) >= {"error"}, result
    assert isinstance(payload["error"], str)
    return payload["error"]


# -- registration and plain dispatch --------------------------------------------------------------------
def test_register_and_dispatch_returns_json(reg: ToolRegistry, weather_key: str) -> None:
    register_weather(reg)
    entry = reg.get("weather")
    assert entry is not None
    assert (entry.toolset, entry.requires_env, entry.is_async, entry.source) == (
        "weather", ("WEATHER_API_KEY",), False, "builtin",
    )
    assert "weather" in reg and reg.names() == ["weather"]
    assert reg.toolsets() == {"weather": ["weather"]}
    result = reg.dispatch("weather", '{"location": "London"}')
    assert json.loads(result) == {"location": "London", "temp": 22, "units": "metric"}
    result = reg.dispatch("weather", {"location": "Oslo", "units": "imperial"})
    assert json.loads(result) == {"location": "Oslo", "temp": 22, "units": "imperial"}


def test_non_string_results_are_serialised(reg: ToolRegistry) -> None:
    reg.register(name="obj", toolset="t", schema=simple_schema("obj"), handler=lambda args, **kw: {"n": 1, "l": [1]})
    reg.register(name="none", toolset="t", schema=simple_schema("none"), handler=lambda args, **kw: None)
    assert json.loads(reg.dispatch("obj", {})) == {"n": 1, "l": [1]}
    assert json.loads(reg.dispatch("none", None)) is None


def test_definitions_are_openai_tool_entries(reg: ToolRegistry, weather_key: str) -> None:
    register_weather(reg)
    assert reg.definitions(["weather", "no_such_tool"]) == [{"type": "function", "function": WEATHER_SCHEMA}]


def test_openai_wrapped_schema_and_extra_options_are_accepted(reg: ToolRegistry) -> None:
    wrapped = {"type": "function", "function": simple_schema("wrapped", q={"type": "string"})}
    entry = reg.register(
        name="wrapped", toolset="t", schema=wrapped, handler=lambda args, **kw: "{}", category="web", cost=3
    )
    assert entry.schema == wrapped["function"]
    assert entry.options == {"category": "web", "cost": 3}


@pytest.mark.parametrize(
    ("kwargs", "exc_type", "match"),
    [
        ({"name": "a", "schema": simple_schema("b")}, ValueError, "does not match"),
        ({"name": "a", "handler": "not callable"}, TypeError, "not callable"),
        ({"name": ""}, ValueError, "non-empty"),
        (
            {"name": "a", "schema": {"name": "a", "parameters": {"type": "array"}}},
            ValueError,
            "JSON schema object",
        ),
    ],
)
def test_bad_registrations_are_refused(
    reg: ToolRegistry, kwargs: dict[str, Any], exc_type: type[Exception], match: str
) -> None:
    full: dict[str, Any] = {
        "toolset": "t", "schema": simple_schema(kwargs["name"] or "x"), "handler": lambda a, **k: "{}",
    }
    full.update(kwargs)
    with pytest.raises(exc_type, match=match):
        reg.register(**full)
    assert reg.names() == []


# -- failures become {"error": ...} -----------------------------------------------------------------
def test_handler_exception_names_the_tool(reg: ToolRegistry) -> None:
    def boom(args: dict[str, Any], **kw: Any) -> str:
        raise RuntimeError("disk on fire")

    reg.register(name="fragile", toolset="t", schema=simple_schema("fragile"), handler=boom)
    message = error_of(reg.dispatch("fragile", {}))
    assert "fragile" in message
    assert "RuntimeError" in message and "disk on fire" in message


@pytest.mark.parametrize("exc", [ToolError("file not found: a.txt"), ApprovalDenied("file not found: a.txt")])
def test_hermes_error_message_passes_through(reg: ToolRegistry, exc: Exception) -> None:
    def handler(args: dict[str, Any], **kw: Any) -> str:
        raise exc

    reg.register(name="reader", toolset="t", schema=simple_schema("reader"), handler=handler)
    assert json.loads(reg.dispatch("reader", {})) == {"error": "file not found: a.txt"}


def test_unknown_tool_suggests_close_names(reg: ToolRegistry, weather_key: str) -> None:
    register_weather(reg)
    reg.register(name="web_search", toolset="web", schema=simple_schema("web_search"), handler=lambda a, **k: "{}")
    payload = json.loads(reg.dispatch("wether", {"location": "x"}))
    assert "unknown tool 'wether'" in payload["error"]
    assert payload["available_tools"][0] == "weather"
    assert json.loads(reg.dispatch("weather_now", {}))["available_tools"][0] == "weather"
    payload = json.loads(reg.dispatch("zzzzzz", {}))
    assert "zzzzzz" in payload["error"] and payload["available_tools"] == []


VALIDATED_SCHEMA = {
    "name": "forecast",
    "description": "Forecast",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "tags": {"type": "array", "items": {"type": "string"}},
            "window": {
                "type": "object",
                "properties": {"start": {"type": "string"}, "hours": {"type": "integer"}},
                "required": ["start"],
            },
        },
        "required": ["location"],
    },
}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('{"location": "London"', "not valid JSON"),
        ("not json at all", "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got array"),
        ('"London"', "must be a JSON object, got string"),
        (42, "must be a JSON object, got integer"),
        ([{"location": "x"}], "must be a JSON object, got array"),
        ({}, "missing required argument 'location'"),
        ("{}", "missing required argument 'location'"),
        ({"location": None}, "missing required argument 'location'"),
        ({"location": 5}, "'location' must be string, got integer"),
        ({"location": "x", "units": "kelvin"}, "'units' must be one of \"metric\", \"imperial\", got \"kelvin\""),
        ({"location": "x", "days": "3"}, "'days' must be integer, got string"),
        ({"location": "x", "days": True}, "'days' must be integer, got boolean"),
        ({"location": "x", "days": 2.5}, "'days' must be integer, got number"),
        ({"location": "x", "days": 0}, "'days' must be at least 1"),
        ({"location": "x", "days": 30}, "'days' must be at most 14"),
        ({"location": "x", "tags": ["a", 3]}, "'tags[1]' must be string, got integer"),
        ({"location": "x", "tags": "a"}, "'tags' must be array, got string"),
        ({"location": "x", "window": {"hours": 2}}, "missing required argument 'window.start'"),
        ({"location": "x", "window": {"start": "now", "hours": "2"}}, "'window.hours' must be integer"),
    ],
)
def test_invalid_arguments_name_the_field(reg: ToolRegistry, args: Any, expected: str) -> None:
    calls: list[dict[str, Any]] = []
    reg.register(
        name="forecast", toolset="t", schema=VALIDATED_SCHEMA, handler=lambda a, **k: calls.append(a) or "{}"
    )
    assert expected in error_of(reg.dispatch("forecast", args))
    assert calls == [], "the handler must not run with invalid arguments"


@pytest.mark.parametrize(
    "args",
    [
        {"location": "x"},
        '{"location": "x", "days": 3}',
        {"location": "x", "days": 3.0, "units": "metric", "tags": [], "window": {"start": "now"}},
        {"location": "x", "units": None},  # an explicit null for an optional argument means "not given"
        {"location": "x", "extra": "ignored"},
    ],
)
def test_valid_arguments_reach_the_handler(reg: ToolRegistry, args: Any) -> None:
    calls: list[dict[str, Any]] = []
    reg.register(
        name="forecast", toolset="t", schema=VALIDATED_SCHEMA, handler=lambda a, **k: calls.append(a) or '{"ok": 1}'
    )
    assert json.loads(reg.dispatch("forecast", args)) == {"ok": 1}
    assert calls == [json.loads(args) if isinstance(args, str) else args]


# -- availability (REG-4) ---------------------------------------------------------------------------
def test_failed_check_leaves_tool_out_and_names_missing_env(
    reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("WEATHER_API_KEY", raising=False)
    register_weather(reg)
    reg.register(name="echo", toolset="t", schema=simple_schema("echo"), handler=lambda a, **k: "{}")
    assert [d["function"]["name"] for d in reg.definitions(["weather", "echo"])] == ["echo"]
    assert reg.availability("weather") == (False, "missing WEATHER_API_KEY")
    message = error_of(reg.dispatch("weather", {"location": "London"}))
    assert "not available" in message and "WEATHER_API_KEY" in message


def test_newly_set_key_counts_after_invalidate(reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEATHER_API_KEY", raising=False)
    register_weather(reg)
    assert not reg.is_available("weather")
    monkeypatch.setenv("WEATHER_API_KEY", "weather-key-0123456789")
    reg.invalidate_checks()
    assert reg.is_available("weather")
    assert json.loads(reg.dispatch("weather", {"location": "Rome"}))["temp"] == 22


def test_failed_check_with_env_present_says_requirements(reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEEDED_TOKEN", "present")
    reg.register(
        name="gpu", toolset="t", schema=simple_schema("gpu"), handler=lambda a, **k: "{}",
        check_fn=lambda: False, requires_env=["NEEDED_TOKEN"],
    )
    assert reg.availability("gpu") == (False, "requirements not met")
    assert "requirements not met" in error_of(reg.dispatch("gpu", {}))


def test_raising_check_is_unavailable(reg: ToolRegistry) -> None:
    def broken_check() -> bool:
        raise OSError("probe failed")

    calls: list[Any] = []
    reg.register(
        name="flaky", toolset="t", schema=simple_schema("flaky"), handler=lambda a, **k: calls.append(a) or "{}",
        check_fn=broken_check,
    )
    assert reg.definitions(["flaky"]) == []
    ok, reason = reg.availability("flaky")
    assert not ok and reason is not None and "probe failed" in reason
    message = error_of(reg.dispatch("flaky", {}))
    assert "not available" in message and "probe failed" in message
    assert calls == []


# -- per-session state (REG-6) ----------------------------------------------------------------------
def test_task_id_reaches_the_handler(reg: ToolRegistry) -> None:
    seen: list[dict[str, Any]] = []

    def handler(args: dict[str, Any], **kw: Any) -> str:
        seen.append(kw)
        return json.dumps({"task": kw.get("task_id")})

    reg.register(name="stateful", toolset="t", schema=simple_schema("stateful"), handler=handler)
    assert json.loads(reg.dispatch("stateful", {}, task_id="task-7")) == {"task": "task-7"}
    assert json.loads(reg.dispatch("stateful", {})) == {"task": None}
    assert seen == [{"task_id": "task-7"}, {}]


# -- async handlers (REG-5) -------------------------------------------------------------------------
async def slow_weather(location: str, task_id: str | None = None) -> str:
    await asyncio.sleep(0.01)
    return json.dumps({"location": location, "task": task_id, "thread": threading.current_thread().name})


async def failing_coroutine(kind: str) -> str:
    await asyncio.sleep(0)
    if kind == "tool":
        raise ToolError("upstream said no")
    raise ValueError("bad upstream payload")


@pytest.fixture
def async_reg(reg: ToolRegistry) -> ToolRegistry:
    schema = simple_schema("slow_weather", location={"type": "string"})
    reg.register(
        name="slow_weather", toolset="weather", schema=schema, is_async=True,
        handler=lambda args, **kw: slow_weather(args.get("location", ""), kw.get("task_id")),
    )
    reg.register(
        name="failing", toolset="t", schema=simple_schema("failing", kind={"type": "string"}), is_async=True,
        handler=lambda args, **kw: failing_coroutine(args.get("kind", "")),
    )
    return reg


def check_async_result(result: str, location: str, task: str | None = None) -> None:
    payload = json.loads(result)
    assert payload["location"] == location
    assert payload["task"] == task


def test_async_handler_from_main_thread(async_reg: ToolRegistry) -> None:
    assert threading.current_thread() is threading.main_thread()
    check_async_result(async_reg.dispatch("slow_weather", {"location": "Lima"}, task_id="t1"), "Lima", "t1")


def test_async_handler_from_worker_threads(async_reg: ToolRegistry) -> None:
    cities = [f"city{i}" for i in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda c: async_reg.dispatch("slow_weather", {"location": c}, task_id=c), cities))
    for city, result in zip(cities, results, strict=True):
        check_async_result(result, city, city)


def test_async_handler_from_inside_a_running_loop(async_reg: ToolRegistry) -> None:
    async def agent_turn() -> tuple[str, str]:
        loop = asyncio.get_running_loop()
        assert loop.is_running()
        ok = async_reg.dispatch("slow_weather", {"location": "Quito"}, task_id="t2")  # synchronous call
        bad = async_reg.dispatch("failing", {"kind": "tool"})
        return ok, bad

    ok, bad = asyncio.run(agent_turn())
    check_async_result(ok, "Quito", "t2")
    assert json.loads(bad) == {"error": "upstream said no"}


def test_async_handler_from_a_loop_in_a_worker_thread(async_reg: ToolRegistry) -> None:
    async def turn() -> str:
        return async_reg.dispatch("slow_weather", {"location": "Baku"})

    with ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(asyncio.run, turn()).result(timeout=20)
    check_async_result(result, "Baku")


def test_async_handler_exceptions_become_errors(async_reg: ToolRegistry) -> None:
    assert json.loads(async_reg.dispatch("failing", {"kind": "tool"})) == {"error": "upstream said no"}
    message = error_of(async_reg.dispatch("failing", {"kind": "other"}))
    assert "failing" in message and "ValueError" in message and "bad upstream payload" in message


def test_coroutine_function_handler_without_flag_is_bridged(reg: ToolRegistry) -> None:
    async def handler(args: dict[str, Any], **kw: Any) -> str:
        await asyncio.sleep(0)
        return json.dumps({"got": args})

    reg.register(name="auto", toolset="t", schema=simple_schema("auto"), handler=handler)
    assert json.loads(reg.dispatch("auto", {"a": 1})) == {"got": {"a": 1}}


# -- tools the agent loop intercepts (REG-7) -----------------------------------------------------------
def session_tools() -> set[str]:
    """The built-in tools that declare they need the session (``needs_session=True``)."""
    from hermes.tools.registry import discover_builtin_tools, registry

    discover_builtin_tools()
    return {e.name for e in registry.entries() if e.needs_session}


INTERCEPTED_TOOLS = ("delegate_task", "memory", "session_search", "todo_list")


@pytest.mark.parametrize("name", INTERCEPTED_TOOLS)
def test_intercepted_tools_get_the_fallback_error(reg: ToolRegistry, name: str) -> None:
    calls: list[Any] = []
    reg.register(name=name, toolset="t", schema=simple_schema(name), handler=lambda a, **k: calls.append(a) or "{}",
                 needs_session=True)
    assert reg.definitions([name]) == [{"type": "function", "function": simple_schema(name)}]
    message = error_of(reg.dispatch(name, {}, task_id="t"))
    assert name in message and "agent loop" in message
    assert calls == []


def test_intercepted_tool_names() -> None:
    from hermes.tools.toolsets import BROWSER_CDP, BROWSER_CORE, BROWSER_VAULT, DESKTOP_UI, FEISHU_DRIVE

    assert {"todo_list", "memory", "session_search", "delegate_task", *BROWSER_CORE, *BROWSER_CDP,
            "browser_exec", "computer_use", *BROWSER_VAULT, *DESKTOP_UI, "desktop_project", "feishu_doc_read",
            *FEISHU_DRIVE} == session_tools()


def test_builtin_todo_list_reaching_dispatch_gets_the_fallback() -> None:
    from hermes.tools.registry import discover_builtin_tools, registry

    discover_builtin_tools()
    assert "todo_list" in registry
    message = error_of(registry.dispatch("todo_list", {"todos": [{"id": "1", "content": "x"}]}))
    assert "todo_list" in message and "agent loop" in message


# -- result shaping -----------------------------------------------------------------------------------
def big_result(n: int = 20_000) -> str:
    return json.dumps({"head": "START", "data": "".join(chr(97 + i % 26) for i in range(n)), "tail": "END"})


def test_oversized_result_is_cut_with_marker_and_spilled(reg: ToolRegistry, tmp_path: Path) -> None:
    full = big_result()
    session = ToolSession(reg, context=SessionContext(result_budget=2_000, spill_dir=tmp_path / "spill"))
    reg.register(name="dump", toolset="t", schema=simple_schema("dump"), handler=lambda a, **k: full)
    result = session.dispatch("dump", {}).text
    assert len(result) <= 2_000
    assert TRUNCATION_MARKER in result
    assert result.startswith(full[:500]) and result.endswith(full[-200:])
    spilled = list((tmp_path / "spill").iterdir())
    assert len(spilled) == 1
    assert str(spilled[0]) in result
    assert spilled[0].read_text(encoding="utf-8") == full
    marker = re.search(r"\n\n\[hermes: tool result truncated: (\d+) of (\d+) characters omitted[^\]]*\]\n\n", result)
    assert marker is not None
    kept = len(result) - len(marker.group(0))
    assert (int(marker.group(1)), int(marker.group(2))) == (len(full) - kept, len(full))


def test_oversized_result_without_spill_dir_still_marks_the_cut(reg: ToolRegistry) -> None:
    session = ToolSession(reg, context=SessionContext(result_budget=1_000))
    reg.register(name="dump", toolset="t", schema=simple_schema("dump"), handler=lambda a, **k: big_result())
    result = session.dispatch("dump", {}).text
    assert TRUNCATION_MARKER in result and "saved at" not in result
    assert len(result) <= 1_000


def test_per_tool_result_budget(reg: ToolRegistry) -> None:
    reg.register(
        name="small", toolset="t", schema=simple_schema("small"), handler=lambda a, **k: big_result(3_000),
        max_result_chars=1_000,
    )
    reg.register(name="roomy", toolset="t", schema=simple_schema("roomy"), handler=lambda a, **k: big_result(3_000))
    assert TRUNCATION_MARKER in reg.dispatch("small", {})
    assert reg.dispatch("roomy", {}) == big_result(3_000)


def test_secrets_from_env_are_masked(reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "foo-secret-value-0123456789"
    monkeypatch.setenv("FOO_API_KEY", secret)
    monkeypatch.setenv("BAR_TOKEN", "bar-token-abcdefgh")

    def leaky(args: dict[str, Any], **kw: Any) -> str:
        if args.get("fail"):
            raise RuntimeError(f"auth failed with key {secret}")
        return json.dumps({"key": os.environ["FOO_API_KEY"], "token": os.environ["BAR_TOKEN"], "city": "Oslo"})

    reg.register(name="leaky", toolset="t", schema=simple_schema("leaky", fail={"type": "boolean"}), handler=leaky)
    result = reg.dispatch("leaky", {})
    assert secret not in result and "bar-token-abcdefgh" not in result
    assert json.loads(result) == {"key": MASK, "token": MASK, "city": "Oslo"}
    message = error_of(reg.dispatch("leaky", {"fail": True}))
    assert secret not in message and MASK in message


def test_masking_follows_the_environment_from_one_call_to_the_next(
    reg: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROTATING_API_KEY", "first-value-0123456789")
    reg.register(name="echo_env", toolset="t", schema=simple_schema("echo_env"),
                 handler=lambda a, **k: {"seen": [os.environ.get(n, "") for n in ("ROTATING_API_KEY", "NEW_TOKEN")]})
    assert json.loads(reg.dispatch("echo_env", {})) == {"seen": [MASK, ""]}
    monkeypatch.setenv("ROTATING_API_KEY", "second-value-0123456789")  # same names, new value
    assert json.loads(reg.dispatch("echo_env", {})) == {"seen": [MASK, ""]}
    monkeypatch.delenv("ROTATING_API_KEY")
    monkeypatch.setenv("NEW_TOKEN", "second-value-0123456789")  # the value moves to another name
    assert json.loads(reg.dispatch("echo_env", {})) == {"seen": ["", MASK]}
    monkeypatch.setenv("NEW_TOKEN", "short")  # too short to mask
    assert json.loads(reg.dispatch("echo_env", {})) == {"seen": ["", "short"]}


def test_well_known_key_shapes_are_masked(reg: ToolRegistry) -> None:
    shaped = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    reg.register(name="shape", toolset="t", schema=simple_schema("shape"), handler=lambda a, **k: {"k": shaped})
    result = reg.dispatch("shape", {})
    assert shaped not in result and MASK in result


# -- the decorator form ---------------------------------------------------------------------------------
def test_decorator_builds_the_seed_schema(reg: ToolRegistry, weather_key: str) -> None:
    explicit = ToolRegistry()
    register_weather(explicit)

    @reg.tool(toolset="weather", check_fn=check_weather_requirements, requires_env=["WEATHER_API_KEY"])
    def weather(location: str, units: Literal["metric", "imperial"] = "metric") -> str:
        """Get current weather for a location.

        Args:
            location: City name or coordinates (e.g. 'London' or '51.5,-0.1')
            units: Temperature units (default: metric)

        Returns:
            A JSON string.
        """
        return weather_tool(location, units)

    decorated, reference = reg.get("weather"), explicit.get("weather")
    assert decorated is not None and reference is not None
    assert decorated.schema == reference.schema == WEATHER_SCHEMA
    assert (decorated.toolset, decorated.requires_env, decorated.is_async, decorated.check_fn) == (
        reference.toolset, reference.requires_env, reference.is_async, reference.check_fn,
    )
    assert weather("Paris") == weather_tool("Paris")  # the function itself is left usable
    for reg_ in (reg, explicit):
        assert json.loads(reg_.dispatch("weather", {"location": "London"})) == {
            "location": "London", "temp": 22, "units": "metric",
        }
    assert "'units' must be one of" in error_of(reg.dispatch("weather", {"location": "x", "units": "kelvin"}))
    assert "missing required argument 'location'" in error_of(reg.dispatch("weather", {}))


def test_decorated_tool_gets_task_id_and_async_is_detected(reg: ToolRegistry) -> None:
    @reg.tool(toolset="t")
    def note(text: str, task_id: str | None = None) -> str:
        """Store a note.

        Args:
            text: The note.
        """
        return json.dumps({"text": text, "task": task_id})

    @reg.tool(toolset="t", name="fetch_page")
    async def fetch(url: str, **kw: Any) -> dict[str, Any]:
        """Fetch a page.

        :param url: The address.
        """
        await asyncio.sleep(0)
        return {"url": url, "task": kw.get("task_id")}

    note_entry, fetch_entry = reg.get("note"), reg.get("fetch_page")
    assert note_entry is not None and fetch_entry is not None
    assert note_entry.schema["parameters"] == {
        "type": "object", "properties": {"text": {"type": "string", "description": "The note."}}, "required": ["text"],
    }
    assert fetch_entry.is_async and fetch_entry.schema["parameters"]["properties"] == {
        "url": {"type": "string", "description": "The address."}
    }
    assert json.loads(reg.dispatch("note", {"text": "hi"}, task_id="t9")) == {"text": "hi", "task": "t9"}
    assert json.loads(reg.dispatch("fetch_page", {"url": "u"}, task_id="t9")) == {"url": "u", "task": "t9"}
