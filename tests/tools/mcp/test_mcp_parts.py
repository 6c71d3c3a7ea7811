"""The MCP client's pure parts: server settings, function names, result conversion."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from hermes.connectors.mcp.config import read_servers
from hermes.connectors.mcp.names import MAX_NAME, function_name, function_names
from hermes.connectors.mcp.results import convert_result

ENV = {"TOKEN": "secret-token-123456"}.get


def test_servers_are_read_with_variables_filled() -> None:
    cfg = read_servers({
        "time": {"command": "mcp-server-time", "args": ["--tz", "UTC"], "env": {"K": "${TOKEN}"}},
        "web": {"url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"},
                "transport": "sse", "timeout": 5, "tools": {"include": ["a"], "exclude": ["b"]}},
    }, ENV)
    assert not cfg.errors
    time, web = cfg.servers
    assert time.transport == "stdio" and time.env == {"K": "secret-token-123456"}
    assert "secret-token-123456" in time.secrets
    assert web.transport == "sse" and web.headers["Authorization"] == "Bearer secret-token-123456"
    assert web.wants("a") and not web.wants("b") and not web.wants("c")
    assert "secret" not in web.describe() and "secret" not in time.describe()
    # a rotated token keeps the cached listing; another command does not
    assert time.fingerprint() == read_servers({"time": {"command": "mcp-server-time", "args": ["--tz", "UTC"]}},
                                              ENV).servers[0].fingerprint()


@pytest.mark.parametrize(("entry", "message"), [
    ({"command": "x", "url": "http://a"}, "exactly one of command"),
    ({"url": "ftp://a"}, "must start with http"),
    ({"command": "x", "env": {"A": "${NOPE}"}}, "${NOPE}, which is not set"),
    ({"command": "x", "timeout": "soon"}, "mcp_servers.s.timeout"),
    ({"command": "x", "transport": "sse"}, "mcp_servers.s.transport"),
    ("just a string", "must be a table"),
])
def test_a_bad_entry_is_reported_without_hiding_the_others(entry: object, message: str) -> None:
    cfg = read_servers({"s": entry, "good": {"command": "ok"}}, ENV)
    assert [s.name for s in cfg.servers] == ["good"]
    assert message in cfg.errors["s"]


def test_function_names_fit_the_openai_charset_and_never_collide() -> None:
    assert function_name("time", "get_current_time") == "mcp_time_get_current_time"
    assert function_name("my.server", "do it/now") == "mcp_my_server_do_it_now"
    long = function_name("s", "x" * 200)
    assert len(long) == MAX_NAME and long != function_name("s", "x" * 199)
    names = function_names("s", ["a.b", "a_b", "c"])
    assert len(set(names.values())) == 3 and names["c"] == "mcp_s_c"
    assert names["a.b"] != "mcp_s_a_b" and names["a_b"] != "mcp_s_a_b"
    assert function_names("s", ["c"], taken={"mcp_s_c"})["c"] != "mcp_s_c"
    import re

    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", n) for n in [*names.values(), long])


def test_results_keep_text_files_and_resources(tmp_path: Path) -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    result = {"content": [
        {"type": "text", "text": "one"}, {"type": "text", "text": "two"},
        {"type": "image", "data": png, "mime_type": "image/png"},
        {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hi", "mime_type": "text/plain"}},
        {"type": "resource_link", "uri": "https://example.org/x", "name": "x"},
    ], "structured_content": {"n": 1}, "is_error": False}
    out = convert_result(result, server="s", tool="t", media_dir=tmp_path)
    assert out["result"] == "one\ntwo" and out["structured_content"] == {"n": 1}
    assert Path(out["files"][0]["path"]).read_bytes() == b"\x89PNG fake"
    assert [r["uri"] for r in out["resources"]] == ["file:///a.txt", "https://example.org/x"]
    failed = convert_result({"content": [{"type": "text", "text": "no such zone"}], "is_error": True},
                            server="s", tool="t", media_dir=None)
    assert failed == {"error": "MCP server 's' tool 't' failed: no such zone"}


def test_media_over_the_cap_is_never_decoded_nor_stored(tmp_path: Path) -> None:
    big = base64.b64encode(b"\x89PNG" + b"\0" * 5000).decode()
    out = convert_result({"content": [{"type": "image", "data": big, "mime_type": "image/png"},
                                      {"type": "resource", "resource": {"uri": "x:b", "blob": big}}]},
                         server="s", tool="t", media_dir=tmp_path, max_media_bytes=1000)
    assert all("at most 1000" in f["error"] and "path" not in f for f in out["files"])
    assert list(tmp_path.iterdir()) == []


def test_the_media_folder_is_pruned_oldest_first(tmp_path: Path) -> None:
    import os

    for i in range(6):
        data = base64.b64encode(f"file {i}".encode()).decode()
        out = convert_result({"content": [{"type": "image", "data": data, "mime_type": "image/png"}]},
                             server="s", tool="t", media_dir=tmp_path, max_media_files=3)
        os.utime(out["files"][0]["path"], (1000 + i, 1000 + i))
    kept = sorted(p.read_bytes() for p in tmp_path.iterdir())
    assert len(kept) <= 3 and b"file 5" in kept and b"file 0" not in kept


def test_server_names_that_extend_one_another_are_ambiguous() -> None:
    from hermes.connectors.mcp.names import ambiguous

    assert ambiguous("a", ["a", "a_b"]) and ambiguous("a_b", ["a", "a_b"])
    assert not ambiguous("a", ["a", "ab", "a-b", "b_a"])
    assert all(n.endswith(tuple("0123456789abcdef")) and n != "mcp_a_c"
               for n in function_names("a", ["c"], all_suffixed=True).values())
