"""Malformed argument payloads for vision_analyze and video_analyze: dispatch never crashes.

The session's model is a scripted server that always answers, so well-shaped payloads run to the end;
image and video references are drawn from a list of hostile paths and URIs plus arbitrary text.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.vision.tool  # noqa: F401  (registers vision_analyze and video_analyze)
from fakes.model_server import text
from fakes.vendors.fal import tiny_png

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
PNG_URI = "data:image/png;base64," + base64.b64encode(tiny_png()).decode()
REF_LIST = [
    "", " ", "/", "~", "/etc/shadow", "/proc/self/environ", "/dev/zero", "a\x00b", "\ud800", "data:", PNG_URI,
    "data:image/png;base64,!!", "data:video/mp4,%00%01", "file:///etc/passwd", "file://", "ftp://x/y", "http://",
    "https://[::1", "http://169.254.169.254/", "http://0x7f000001/", "javascript:alert(1)", "C:\\x.png",
    "x" * 5000, "LOCAL_PNG",
]  # fmt: skip
REFS = st.sampled_from(REF_LIST)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "image_url": st.one_of(REFS, st.text(max_size=30), JSON),
    "video_url": st.one_of(REFS, st.text(max_size=30), JSON),
    "question": st.one_of(st.text(max_size=40), st.just("\ud800"), JSON),
    "frames": st.one_of(st.integers(-2, 20), JSON),
}


def payloads(tool: str) -> st.SearchStrategy[Any]:
    ref = "image_url" if tool == "vision_analyze" else "video_url"
    shaped = st.fixed_dictionaries({ref: st.one_of(REFS, st.text(min_size=1, max_size=30)),
                                    "question": st.text(min_size=1, max_size=40)},
                                   optional={"frames": st.integers(1, 3)} if ref == "video_url" else {})
    loose = st.fixed_dictionaries({}, optional={k: v for k, v in VALUES.items() if k != "frames" or ref == "video_url"})
    junk = st.one_of(st.dictionaries(st.text(max_size=8), JSON, max_size=3), st.text(max_size=30))
    return st.one_of(shaped, shaped, loose, junk)


@pytest.fixture
def local_png(hermes_home: Path, model_server: Any, tmp_path: Path) -> Path:
    server = model_server(lambda _body: text("seen"), model="m")
    (hermes_home / "config.yaml").write_text(f"model:\n  base_url: {server.url}\n  name: m\n  vision: true\n")
    path = tmp_path / "p.png"
    path.write_bytes(tiny_png())
    return path


@pytest.mark.parametrize("tool", ["vision_analyze", "video_analyze"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_exception_escapes_dispatch(local_png: Path, tool: str, data: st.DataObject) -> None:
    from hermes.tools.registry import registry

    payload = data.draw(payloads(tool))
    if isinstance(payload, dict):
        payload = {k: (str(local_png) if v == "LOCAL_PNG" else v) for k, v in payload.items()}
    result = json.loads(registry.dispatch(tool, payload))
    assert isinstance(result, dict)
    assert ("error" in result) != ("success" in result), result
    if "error" in result:
        assert isinstance(result["error"], str) and not result["error"].startswith(f"{tool} failed:"), result


@pytest.mark.parametrize("tool", ["vision_analyze", "video_analyze"])
@pytest.mark.parametrize("ref", REF_LIST)
def test_every_hostile_reference_gets_a_deliberate_answer(local_png: Path, tool: str, ref: str) -> None:
    from hermes.tools.registry import registry

    field = "image_url" if tool == "vision_analyze" else "video_url"
    args = {field: str(local_png) if ref == "LOCAL_PNG" else ref, "question": "what is it?"}
    result = json.loads(registry.dispatch(tool, args))
    if tool == "vision_analyze" and ref in ("LOCAL_PNG", PNG_URI):
        assert result.get("analysis") == "seen", result
    else:
        assert isinstance(result.get("error"), str) and not result["error"].startswith(f"{tool} failed:"), result
