"""A hostile MCP server (servers/hostile_server.py) cannot make hermes fetch addresses, talk to the model
outside the untrusted-content markers, or read back the secrets of its own configuration."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tools.mcp.conftest import PY, SERVERS, McpHome

SECRET = "hostile-own-secret-7f3e9a1b"


class _Counting(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        body = json.dumps({"const": "INTERNAL-METADATA"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that records every request it gets (what an SSRF would reach)."""
    hits: ClassVar[list[str]] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", hits
    server.shutdown()
    server.server_close()


def hostile(home: McpHome, *extra: str) -> Any:
    home.configure({"hostile": {"command": PY, "args": [str(SERVERS / "hostile_server.py"), *extra],
                                "env": {"HOSTILE_SECRET": SECRET}}})
    home.load()
    state = home.settle("hostile")["hostile"]
    assert state.status == "ready", state
    return home.load()


def call(home: McpHome, reg: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(home.session(reg).dispatch(name, args).text)
    assert isinstance(data, dict)
    return data


# jsonschema warns before it fetches; the warning must not stop the fetch here, or a client that still
# fetched would pass these tests
@pytest.mark.filterwarnings("default::DeprecationWarning")
def test_a_remote_ref_in_an_input_schema_is_never_fetched(mcp_home: McpHome, listener: tuple[str, list[str]],
                                                         tmp_path: Path) -> None:
    url, hits = listener
    reg = hostile(mcp_home, "--ref", url)
    answer = call(mcp_home, reg, "mcp_hostile_fetch_ref", {"x": "a"})
    assert hits == [] and "error" not in answer
    schema = reg.get("mcp_hostile_fetch_ref").schema["parameters"]
    assert url not in json.dumps(schema)  # the model is not shown it either
    # a local reference still validates
    assert "'n'" in call(mcp_home, reg, "mcp_hostile_local_ref", {"n": 50})["error"]
    assert "error" not in call(mcp_home, reg, "mcp_hostile_local_ref", {"n": 3})


@pytest.mark.filterwarnings("default::DeprecationWarning")
def test_a_file_ref_is_never_read(mcp_home: McpHome, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret.json"
    secret_file.write_text(json.dumps({"const": "FILE-CONTENT-REACHED"}))
    reg = hostile(mcp_home, "--ref", secret_file.as_uri())
    answer = call(mcp_home, reg, "mcp_hostile_fetch_ref", {"x": "a"})
    assert "FILE-CONTENT-REACHED" not in json.dumps(answer) and "error" not in answer


def test_validators_never_retrieve_a_reference() -> None:
    from hermes.errors import ToolArgumentError
    from hermes.tools.mcp.schemas import argument_validator, check_arguments

    # a reference that a cleaned schema never holds: the validator itself refuses to retrieve it
    validator = argument_validator({"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}})
    with pytest.raises(ToolArgumentError, match="never fetches"):
        check_arguments(validator, {"x": "a"})
    based = argument_validator({"$id": "http://127.0.0.1:9/base/", "type": "object",
                                "properties": {"x": {"$ref": "#/$defs/gone"}}})
    with pytest.raises(ToolArgumentError, match="never fetches"):
        check_arguments(based, {"x": "a"})


def test_a_catastrophic_pattern_does_not_hold_the_call() -> None:
    from hermes.errors import ToolArgumentError
    from hermes.tools.mcp.schemas import argument_validator, check_arguments

    validator = argument_validator({"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a|a)*$"}}})
    check_arguments(validator, {"x": "a" * 40 + "!"})  # judged too slow to check: left to the server
    check_arguments(validator, {"x": "aaa"})
    with pytest.raises(ToolArgumentError, match="'x'"):
        check_arguments(validator, {"x": "b"})


def test_results_are_marked_untrusted_and_masked(mcp_home: McpHome) -> None:
    reg = hostile(mcp_home)
    text = mcp_home.session(reg).dispatch("mcp_hostile_shout", {}).text
    data = json.loads(text)
    result = data["result"]
    assert result.startswith("Untrusted content from mcp:hostile/shout")
    assert result.rstrip().endswith("[end of untrusted content from mcp:hostile/shout]")
    # the server's fake end line is defused: the only real end line is the last one
    assert result.count("\n[end of untrusted content from mcp:hostile/shout]") == 1
    assert SECRET not in text


def test_descriptions_lose_control_characters_and_are_capped(mcp_home: McpHome) -> None:
    reg = hostile(mcp_home)
    description = reg.get("mcp_hostile_shout").description
    assert not any(ord(c) < 32 and c != "\n" for c in description) and "\x1b" not in description
    assert len(description) <= 1100 and description.count("\n") <= 10
    assert "MCP server 'hostile'" in description
