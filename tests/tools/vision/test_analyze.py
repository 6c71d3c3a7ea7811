"""vision_analyze against a scripted OpenAI-compatible model server (requirement T-VIS).

The fake model records request bodies, so the tests assert on the exact ``data:`` URI that was sent.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

import hermes.tools.vision.tool  # noqa: F401  (registers vision_analyze and video_analyze)
from fakes.model_server import Reply, ScriptedModelServer, text
from fakes.vendors.fal import FastServerThread as ServerThread
from fakes.vendors.fal import tiny_png
from hermes.tools.registry import registry

PNG = tiny_png(4, 3)
QUESTION = "What colour is this?"


@pytest.fixture(autouse=True)
def _no_private_url_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_ALLOW_PRIVATE_URLS", raising=False)


def configure(home: Path, yaml_text: str) -> None:
    (home / "config.yaml").write_text(yaml_text, encoding="utf-8")


def look(args: dict[str, Any]) -> dict[str, Any]:
    result = json.loads(registry.dispatch("vision_analyze", args))
    assert isinstance(result, dict)
    return result


def session_model(url: str, *, vision: bool = True) -> str:
    return f"model:\n  base_url: {url}\n  name: main-model\n  api_key: sk-session\n  vision: {str(vision).lower()}\n"


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "shot.png"
    path.write_bytes(PNG)
    return path


def test_session_model_sees_a_local_image(hermes_home: Path, model_server: Any, image: Path) -> None:
    server: ScriptedModelServer = model_server([text("It is red.")], model="main-model")
    configure(hermes_home, session_model(server.url))
    result = look({"image_url": str(image), "question": QUESTION})
    assert result == {"success": True, "analysis": "It is red.", "model": "main-model", "model_source": "session",
                      "image": {"source": str(image), "format": "png", "bytes": len(PNG)}}
    body = server.requests[0]
    assert body["model"] == "main-model" and body["temperature"] == 0.1
    content = body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": QUESTION}
    assert content[1] == {"type": "image_url",
                          "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}}
    assert server.request_headers[0]["authorization"] == "Bearer sk-session"


def test_a_nous_session_model_sends_the_portal_login(hermes_home: Path, model_server: Any, image: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's model key may be the Nous Portal login; the vision call sends it like a chat does."""
    import time

    from fakes.tokens import jwt

    monkeypatch.delenv("NOUS_API_KEY", raising=False)
    token = jwt({"paid_access": True, "exp": time.time() + 3600, "scope": "inference:invoke"})
    auth = hermes_home / "auth.json"
    auth.write_text(json.dumps({"version": 1, "providers": {"nous": {"access_token": token}}}))
    auth.chmod(0o600)
    server: ScriptedModelServer = model_server([text("It is red.")], model="main-model")
    configure(hermes_home, f"model:\n  provider: nous\n  base_url: {server.url}\n  name: main-model\n  vision: true\n")
    assert look({"image_url": str(image), "question": QUESTION})["success"] is True
    assert server.request_headers[0]["authorization"] == f"Bearer {token}"


def test_auxiliary_model_on_its_own_endpoint(hermes_home: Path, model_server: Any, image: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    main: ScriptedModelServer = model_server([], model="main-model")
    aux: ScriptedModelServer = model_server([text("A small red picture.")], model="see-model")
    monkeypatch.setenv("VISION_KEY", "sk-vision")
    configure(hermes_home, session_model(main.url, vision=False)
              + f"vision:\n  model: see-model\n  base_url: {aux.url}\n  api_key_env: VISION_KEY\n")
    result = look({"image_url": str(image), "question": QUESTION})
    assert result["analysis"] == "A small red picture." and result["model_source"] == "auxiliary"
    assert aux.requests[0]["model"] == "see-model" and aux.request_headers[0]["authorization"] == "Bearer sk-vision"
    assert not main.requests


def test_auxiliary_model_sharing_the_session_endpoint(hermes_home: Path, model_server: Any, image: Path) -> None:
    server: ScriptedModelServer = model_server([text("ok")], model="main-model")
    configure(hermes_home, session_model(server.url, vision=False) + "vision:\n  model: other-vision-model\n")
    assert look({"image_url": str(image), "question": QUESTION})["model"] == "other-vision-model"
    assert server.request_headers[0]["authorization"] == "Bearer sk-session"


def test_nothing_can_see(hermes_home: Path, model_server: Any, image: Path) -> None:
    server: ScriptedModelServer = model_server([], model="main-model")
    configure(hermes_home, session_model(server.url, vision=False))
    error = look({"image_url": str(image), "question": QUESTION})["error"]
    assert error.startswith("vision_analyze needs a model that can see images, and none is configured: the session's "
                            "model 'main-model' is not marked as accepting images.")
    assert "model.vision: true" in error and "vision.model" in error
    assert not server.requests


def test_the_embedded_model_cannot_see(hermes_home: Path, image: Path) -> None:
    configure(hermes_home, "model:\n  provider: local\n  path: /nonexistent.gguf\n  vision: true\n")
    assert "embedded local model cannot read images" in look({"image_url": str(image), "question": "q"})["error"]


@pytest.mark.parametrize("content, message", [
    (b"just some text, not an image", "is not a PNG, JPEG, GIF, WebP or BMP image"),
    (b"BM" + struct.pack("<I", 58) + b"\x00" * 52, "is a BMP image; vision models take PNG"),
    (PNG + b"\x00" * 2048, "larger than the limit"),
])
def test_type_and_size_checks(hermes_home: Path, model_server: Any, tmp_path: Path, content: bytes,
                              message: str) -> None:
    server: ScriptedModelServer = model_server([], model="main-model")
    configure(hermes_home, session_model(server.url) + "vision:\n  max_image_bytes: 2048\n")
    path = tmp_path / "file.png"
    path.write_bytes(content)
    assert message in look({"image_url": str(path), "question": QUESTION})["error"]
    assert not server.requests


def test_data_uri_and_model_errors(hermes_home: Path, model_server: Any) -> None:
    server: ScriptedModelServer = model_server([Reply(status=400, error_message="image too small")],
                                               model="main-model")
    configure(hermes_home, session_model(server.url))
    uri = "data:image/png;base64," + base64.b64encode(PNG).decode()
    error = look({"image_url": uri, "question": QUESTION})["error"]
    assert "image analysis failed" in error and "HTTP 400: image too small" in error
    assert server.requests[0]["messages"][0]["content"][1]["image_url"]["url"] == uri


@pytest.fixture
def web() -> Iterator[str]:
    async def png(_request: Any) -> Response:
        return Response(PNG, media_type="image/png")

    async def html(_request: Any) -> Response:
        return Response("<html></html>", media_type="text/html")

    app = Starlette(routes=[Route("/a.png", png), Route("/page", html)])
    with ServerThread(app) as server:
        yield server.url


def test_urls_are_fetched_safely(hermes_home: Path, model_server: Any, web: str) -> None:
    server: ScriptedModelServer = model_server([text("fetched")], model="main-model")
    configure(hermes_home, session_model(server.url))
    refused = look({"image_url": f"{web}/a.png", "question": QUESTION})["error"]
    assert "was not fetched" in refused and not server.requests
    configure(hermes_home, session_model(server.url) + "security:\n  allow_private_urls: true\n")
    assert look({"image_url": f"{web}/a.png", "question": QUESTION})["analysis"] == "fetched"
    assert server.requests[0]["messages"][0]["content"][1]["image_url"]["url"].endswith(base64.b64encode(PNG).decode())
    assert "text/html" in look({"image_url": f"{web}/page", "question": QUESTION})["error"]
    metadata = look({"image_url": "http://169.254.169.254/latest/meta-data", "question": QUESTION})["error"]
    assert "was not fetched" in metadata


def test_other_schemes_and_secrets_are_refused(hermes_home: Path, model_server: Any) -> None:
    server: ScriptedModelServer = model_server([], model="main-model")
    configure(hermes_home, session_model(server.url))
    assert "not a ftp: URL" in look({"image_url": "ftp://example.com/a.png", "question": QUESTION})["error"]
    (hermes_home / "auth.json").write_text("{}")
    assert "may not be read" in look({"image_url": str(hermes_home / "auth.json"), "question": QUESTION})["error"]
    assert not server.requests
