"""Malformed argument payloads for image_generate: dispatch always answers a JSON object, never crashes.

A failure must be a deliberate ``{"error": ...}`` — never the registry's catch-all ``image_generate failed:
<Exception>`` for an exception nobody meant. The route points at a FAL fake, so well-shaped payloads run
all the way (source images included).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hermes.tools.image.tool  # noqa: F401  (registers image_generate)
from fakes.vendors.fal import FakeFal, tiny_png
from fakes.vendors.fal import FastServerThread as ServerThread
from hermes.tools.image import backends
from hermes.tools.registry import registry
from hermes.vendors.base import RetryPolicy

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
SOURCE_LIST = [
    "", " ", "/", "~", "/etc/shadow", "/proc/self/environ", "a\x00b", "\ud800", "data:", "data:image/png;base64,@@",
    "data:image/png;base64,iVBORw0KGgo=", "file:///etc/passwd", "ftp://x/y", "http://", "https://[::1", "javascript:x",
    "C:\\img.png", "x" * 5000, "SOURCE_PNG", "http://127.0.0.1:9/a.png",
]  # fmt: skip
SOURCES = st.sampled_from(SOURCE_LIST)
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "prompt": st.one_of(st.text(max_size=60), st.just("\ud800 lone surrogate"), JSON),
    "aspect_ratio": st.one_of(st.sampled_from(["square", "landscape", "portrait", "wide", ""]), JSON),
    "image_url": st.one_of(SOURCES, st.text(max_size=40), JSON),
    "seed": st.one_of(st.integers(-5, 2**40), JSON),
    "model": JSON,
}
WELL_SHAPED = st.fixed_dictionaries(
    {"prompt": st.text(min_size=1, max_size=60)},
    optional={"aspect_ratio": st.sampled_from(["square", "landscape", "portrait"]),
              "image_url": st.one_of(SOURCES, st.text(min_size=1, max_size=40)), "seed": st.integers(0, 2**32 - 1)},
)
PAYLOADS = st.one_of(
    WELL_SHAPED, WELL_SHAPED, WELL_SHAPED,
    st.fixed_dictionaries({}, optional=FIELDS),
    st.dictionaries(st.text(max_size=8), JSON, max_size=4),
    st.text(max_size=40), st.binary(max_size=40), JSON,
)


@pytest.fixture(scope="module")
def fal() -> Iterator[str]:
    with ServerThread(FakeFal().app) as server:
        yield server.url


@pytest.fixture
def setup(hermes_home: Path, fal: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    fast = RetryPolicy(attempts=2, base_delay=0.0, max_delay=0.0)
    monkeypatch.setattr(backends, "TIMING", backends.Timing(fal_poll=0.001, fal_retry=fast))
    (hermes_home / "config.yaml").write_text(f"image_gen:\n  provider: fal\n  fal:\n    base_url: {fal}\n")
    source = tmp_path / "source.png"
    source.write_bytes(tiny_png())
    registry.invalidate_checks()
    return source


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS)
def test_no_exception_escapes_dispatch(setup: Path, payload: Any) -> None:
    if isinstance(payload, dict) and payload.get("image_url") == "SOURCE_PNG":
        payload["image_url"] = str(setup)
    result = json.loads(registry.dispatch("image_generate", payload))
    assert isinstance(result, dict)
    assert ("error" in result) != ("success" in result), result
    if "error" in result:
        assert isinstance(result["error"], str) and not result["error"].startswith("image_generate failed:"), result


@pytest.mark.parametrize("source", SOURCE_LIST)
def test_every_hostile_source_gets_a_deliberate_answer(setup: Path, source: str) -> None:
    image_url = str(setup) if source == "SOURCE_PNG" else source
    result = json.loads(registry.dispatch("image_generate", {"prompt": "p", "image_url": image_url}))
    if "success" in result:  # a local PNG, a data: URI holding one, or a URL handed to FAL as it is
        assert source in ("SOURCE_PNG", "http://127.0.0.1:9/a.png", "data:image/png;base64,iVBORw0KGgo="), result
    else:
        assert not result["error"].startswith("image_generate failed:"), result
