"""image_generate end to end against vendor fakes on 127.0.0.1 (requirement T-IMG, GW-3, GW-10, GW-11).

BYOK routes point the vendor origin at a fake with ``image_gen.<vendor>.base_url``; gateway routes pin
``{LABEL}_GATEWAY_URL`` to a fake and carry a portal JWT in ``TOOL_GATEWAY_USER_TOKEN``. Every call goes
through ``registry.dispatch`` with the real HTTP clients.
"""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hermes.tools.image.tool  # noqa: F401  (registers image_generate)
from fakes.tokens import jwt
from fakes.vendors.fal import FakeFal, SwapApp, tiny_png
from fakes.vendors.fal import FastServerThread as ServerThread
from fakes.vendors.krea import FakeKrea
from fakes.vendors.openai_images import FakeOpenAIImages
from hermes.tools.image import backends
from hermes.tools.registry import registry
from hermes.vendors.base import RetryPolicy

HINT = "Run 'hermes tools' to change it."
_ENV = ("FAL_KEY", "KREA_API_KEY", "OPENAI_API_KEY", "TOOL_GATEWAY_USER_TOKEN", "TOOL_GATEWAY_URL",
        "TOOL_GATEWAY_DOMAIN", "TOOL_GATEWAY_SCHEME", "FAL_QUEUE_GATEWAY_URL", "KREA_GATEWAY_URL",
        "HERMES_ALLOW_PRIVATE_URLS")


PAID = jwt({"exp": time.time() + 3600, "paid_access": True})
FREE = jwt({"exp": time.time() + 3600, "tool_access": {"enabled": True, "coverage": {"fal": True}}})


@pytest.fixture
def home(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    fast = RetryPolicy(attempts=3, base_delay=0.0, max_delay=0.0, statuses=frozenset({408, 409, 429, 500, 502, 503}))
    monkeypatch.setattr(backends, "TIMING", backends.Timing(fal_poll=0.005, krea_first_poll=0.005,
                                                            krea_max_poll=0.01, fal_retry=fast, krea_retry=fast))
    registry.invalidate_checks()
    return hermes_home


def configure(home: Path, text: str) -> None:
    (home / "config.yaml").write_text(text, encoding="utf-8")
    registry.invalidate_checks()


def call(args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(registry.dispatch("image_generate", args))
    assert isinstance(result, dict)
    return result


FAKES = {"fal": FakeFal, "krea": FakeKrea, "openai": FakeOpenAIImages}


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, tuple[SwapApp, ServerThread]]]:
    started = {name: (swap := SwapApp(make().app), ServerThread(swap, lifespan="off").start())
               for name, make in FAKES.items()}
    yield started
    for _swap, thread in started.values():
        thread.stop()


@pytest.fixture
def servers(running: dict[str, tuple[SwapApp, ServerThread]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, make in FAKES.items():
        fake = make()
        swap, thread = running[name]
        swap.app = fake.app
        out[name], out[f"{name}_url"] = fake, thread.url
    return out


def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


def assert_saved_png(home: Path, result: dict[str, Any]) -> Path:
    path = Path(result["path"])
    assert path.parent == home / "media"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    return path


def gateway(monkeypatch: pytest.MonkeyPatch, servers: dict[str, Any], token: str = PAID) -> None:
    monkeypatch.setenv("TOOL_GATEWAY_USER_TOKEN", token)
    monkeypatch.setenv("FAL_QUEUE_GATEWAY_URL", servers["fal_url"])
    monkeypatch.setenv("KREA_GATEWAY_URL", servers["krea_url"])
    monkeypatch.setenv("TOOL_GATEWAY_URL", servers["openai_url"])
    servers["fal"].key = servers["krea"].key = servers["openai"].key = token


# -- BYOK ---------------------------------------------------------------------------------------------------
def test_byok_fal_generates_saves_and_reports(home: Path, servers: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {servers['fal_url']}\n")
    result = call({"prompt": "a red square", "aspect_ratio": "landscape", "seed": 7})
    assert result["success"] is True, result
    assert_saved_png(home, result)
    assert result["url"].startswith(servers["fal_url"] + "/files/")
    assert result["model"] == "fal-ai/flux-2/klein/9b" and result["route"] == "byok" and "fallback_from" not in result
    fal: FakeFal = servers["fal"]
    submit = fal.requests[0]
    assert submit["path"] == "/fal-ai/flux-2/klein/9b"
    assert submit["headers"]["authorization"] == "Key fal-test"
    assert submit["headers"]["x-idempotency-key"]
    assert submit["json"] == {"prompt": "a red square", "image_size": "landscape_16_9", "num_images": 1,
                              "output_format": "png", "seed": 7}
    polls = [r for r in fal.requests if r["path"].endswith("/status")]
    assert polls and all(r["query"] == {"logs": "false"} for r in polls)
    download = [r for r in fal.requests if r["path"].startswith("/files/")]
    assert download and "authorization" not in download[0]["headers"]


def test_missing_key_is_the_gw3_message(home: Path) -> None:
    configure(home, "image_gen:\n  provider: fal\n")
    # unavailable (tools list shows ✗ with this reason), and a call says the same GW-3 message
    assert call({"prompt": "x"}) == {"error": "tool 'image_generate' is not available: image_gen is configured "
                                              f"to use fal (set via hermes tools), but FAL_KEY is not set. {HINT}"}


def test_saved_gateway_selection_ignores_fal_key(home: Path, servers: dict[str, Any],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    monkeypatch.setenv("FAL_KEY", "fal-test")
    configure(home, f"image_gen:\n  provider: nous\n  model: fal-ai/flux-2/klein/9b\n"
                    f"  fal:\n    base_url: {closed_port_url()}\n")
    result = call({"prompt": "x"})
    assert result["route"] == "gateway", result
    assert servers["fal"].requests[0]["headers"]["authorization"] == f"Key {PAID}"


def test_byok_model_must_belong_to_the_vendor(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREA_API_KEY", "k")
    configure(home, "image_gen:\n  provider: krea\n  model: fal-ai/flux-2/klein/9b\n")
    error = call({"prompt": "x"})["error"]
    assert "image_gen.model is set to 'fal-ai/flux-2/klein/9b', which is not a Krea model" in error
    assert error.endswith(HINT)


def test_model_argument_is_refused(home: Path) -> None:
    configure(home, "image_gen:\n  provider: fal\n")
    error = call({"prompt": "x", "model": "dall-e-3"})["error"]
    assert "model" in error


def test_byok_openai_generate_and_edit_with_local_file(home: Path, servers: dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    configure(home, f"image_gen:\n  provider: openai\n  openai:\n    base_url: {servers['openai_url']}/v1\n")
    first = call({"prompt": "blue"})
    assert first["success"] and first["url"] is None and first["model"] == "gpt-image-1"
    assert_saved_png(home, first)
    source = tmp_path / "in.png"
    source.write_bytes(tiny_png(8, 8))
    second = call({"prompt": "make it green", "image_url": str(source)})
    assert second["success"], second
    edit = servers["openai"].edits[-1]
    assert edit["kind"] == "multipart" and edit["parts"]["image"][1] == tiny_png(8, 8)
    assert edit["parts"]["image"][2] == "image/png"


def test_byok_openai_fetches_a_url_source_safely(home: Path, servers: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    base = f"image_gen:\n  provider: openai\n  openai:\n    base_url: {servers['openai_url']}\n"
    source = f"{servers['fal_url']}/files/anything.png"
    configure(home, base)
    assert "was not fetched" in call({"prompt": "p", "image_url": source})["error"]  # loopback refused
    configure(home, base + "security:\n  allow_private_urls: true\n")
    assert call({"prompt": "p", "image_url": source})["success"]
    assert servers["openai"].edits[-1]["parts"]["image"][1] == servers["fal"].image
    assert "authorization" not in servers["fal"].requests[-1]["headers"]


def test_byok_fal_local_source_goes_inline_to_the_edit_model(home: Path, servers: dict[str, Any],
                                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {servers['fal_url']}\n")
    source = tmp_path / "in.png"
    source.write_bytes(tiny_png())
    assert call({"prompt": "edit", "image_url": str(source)})["success"]
    submit = servers["fal"].requests[0]
    assert submit["path"] == "/fal-ai/flux-2/klein/9b/edit"
    assert submit["json"]["image_urls"] == ["data:image/png;base64," + base64.b64encode(tiny_png()).decode()]


@pytest.mark.parametrize("content, message", [(b"not an image at all", "is not a PNG, JPEG, GIF, WebP or BMP image"),
                                              (None, "no file at")])
def test_bad_local_sources_are_refused(home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       content: bytes | None, message: str) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {closed_port_url()}\n")
    source = tmp_path / "in.png"
    if content is not None:
        source.write_bytes(content)
    assert message in call({"prompt": "x", "image_url": str(source)})["error"]


def test_secret_files_are_not_sources(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    (home / ".env").write_text("FAL_KEY=fal-test\n")
    configure(home, "image_gen:\n  provider: fal\n")
    assert "may not be read" in call({"prompt": "x", "image_url": str(home / ".env")})["error"]


def test_credentials_never_follow_a_foreign_status_url(home: Path, servers: dict[str, Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    servers["fal"].url_origin = "http://collector.example:9"
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {servers['fal_url']}\n")
    error = call({"prompt": "x"})["error"]
    assert "not where your credentials belong" in error and "collector.example" in error


def test_strict_queue_status(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "fal-test")
    servers["fal"].omit_logs = True
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {servers['fal_url']}\n")
    assert "COMPLETED status without a logs key" in call({"prompt": "x"})["error"]


def test_byok_auth_failure_names_the_key(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAL_KEY", "wrong")
    configure(home, f"image_gen:\n  provider: fal\n  fal:\n    base_url: {servers['fal_url']}\n")
    error = call({"prompt": "x"})["error"]
    assert "HTTP 401" in error and "Check FAL_KEY" in error


# -- gateway ------------------------------------------------------------------------------------------------
def test_gateway_krea_by_model_id(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-large\n  krea:\n    creativity: high\n")
    result = call({"prompt": "a forest", "aspect_ratio": "portrait"})
    assert result["success"] and result["route"] == "gateway" and result["provider"] == "krea", result
    assert_saved_png(home, result)
    submit = servers["krea"].requests[0]
    assert submit["path"] == "/generate/image/krea/krea-2/large"
    assert submit["headers"]["authorization"] == f"Bearer {PAID}"
    assert submit["json"] == {"prompt": "a forest", "aspect_ratio": "9:16", "resolution": "1K", "creativity": "high"}
    assert not servers["fal"].requests


def test_gateway_default_model_on_a_paid_plan_is_krea(home: Path, servers: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    configure(home, "image_gen:\n  provider: nous\n")
    result = call({"prompt": "x"})
    assert result["model"] == "krea-2-medium-turbo"
    assert servers["krea"].requests[0]["path"].endswith("/krea-2/medium-turbo")


def test_gateway_portal_model_uses_the_shared_origin(home: Path, servers: dict[str, Any],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    servers["openai"].use_urls = True
    configure(home, "image_gen:\n  provider: nous\n  model: nous-image-1\n")
    result = call({"prompt": "x"})
    assert result["success"] and result["provider"] == "nous", result
    request = servers["openai"].requests[0]
    assert request["path"] == "/v1/images/generations" and request["json"]["model"] == "nous-image-1"
    assert result["url"].startswith(servers["openai_url"] + "/files/")


def test_free_tier_cannot_use_krea(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers, FREE)
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    error = call({"prompt": "x"})["error"]
    assert "needs a paid Nous subscription; the free tool tier covers FAL models only" in error
    assert not servers["krea"].requests


def test_gateway_local_source_is_uploaded_first(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    gateway(monkeypatch, servers)
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    source = tmp_path / "style.png"
    source.write_bytes(tiny_png(6, 6))
    assert call({"prompt": "in this style", "image_url": str(source)})["success"]
    upload = servers["openai"].uploads[0]
    assert upload["vendor"] == "krea" and upload["bytes"] == tiny_png(6, 6) and upload["content_type"] == "image/png"
    reference = servers["krea"].requests[0]["json"]["image_style_references"][0]
    assert reference["url"].startswith(servers["openai_url"] + "/uploads/")


# -- Krea -> FAL fallback (GW-11) ---------------------------------------------------------------------------
def test_krea_429_falls_back_to_fal(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    servers["krea"].always_status = 429
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    result = call({"prompt": "x"})
    assert result["success"], result
    assert result["fallback_from"]["provider"] == "krea" and result["fallback_from"]["model"] == "krea-2-medium"
    assert "429" in result["fallback_from"]["reason"]
    assert result["model"] == "fal-ai/flux-2/klein/9b" and result["provider"] == "fal"
    assert servers["fal"].requests[0]["path"] == "/fal-ai/flux-2/klein/9b"
    assert len([r for r in servers["krea"].requests if r["method"] == "POST"]) == 3  # retried first
    assert_saved_png(home, result)


def test_unreachable_krea_falls_back(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    monkeypatch.setenv("KREA_GATEWAY_URL", closed_port_url())
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    result = call({"prompt": "x"})
    assert result["success"] and "cannot reach Krea" in result["fallback_from"]["reason"], result


def test_fallback_switch_off(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    servers["krea"].always_status = 429
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n  krea:\n    fallback_to_fal: false\n")
    assert "HTTP 429" in call({"prompt": "x"})["error"]
    assert not servers["fal"].requests


def test_no_fallback_with_a_source_image(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    servers["krea"].always_status = 429
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    assert "HTTP 429" in call({"prompt": "x", "image_url": "https://example.com/a.png"})["error"]
    assert not servers["fal"].requests


def test_no_fallback_once_the_job_started(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    gateway(monkeypatch, servers)
    servers["krea"].fail_jobs = True
    configure(home, "image_gen:\n  provider: nous\n  model: krea-2-medium\n")
    assert "scripted job failure" in call({"prompt": "x"})["error"]
    assert not servers["fal"].requests


def test_no_fallback_for_byok_krea(home: Path, servers: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KREA_API_KEY", "krea-test")
    monkeypatch.setenv("FAL_KEY", "fal-test")
    servers["krea"].always_status = 429
    configure(home, f"image_gen:\n  provider: krea\n  krea:\n    base_url: {servers['krea_url']}\n"
                    f"  fal:\n    base_url: {servers['fal_url']}\n")
    assert "HTTP 429" in call({"prompt": "x"})["error"]
    assert not servers["fal"].requests


# -- availability -------------------------------------------------------------------------------------------
def test_availability_is_offline_and_names_what_is_missing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(home, "")
    ok, reason = registry.availability("image_generate")
    assert not ok and reason and "FAL_KEY" in reason and "KREA_API_KEY" in reason
    configure(home, "image_gen:\n  provider: fal\n")  # selected but no key: cannot run, and says why
    ok, reason = registry.availability("image_generate")
    assert not ok and reason == ("image_gen is configured to use fal (set via hermes tools), but FAL_KEY is not "
                                 f"set. {HINT}")
    configure(home, "")
    monkeypatch.setenv("FAL_KEY", "x")
    registry.invalidate_checks()
    assert registry.availability("image_generate")[0] is True
