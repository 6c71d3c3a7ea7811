"""Which model looks at images, and the one OpenAI-compatible chat call that asks it.

Order (requirement T-VIS):

1. **the session's model**, when ``model.vision: true`` says it accepts images (the embedded local model
   never does);
2. otherwise an **auxiliary vision model**: ``vision.model`` at ``vision.base_url`` (default: the session's
   endpoint), with the key from the variable named by ``vision.api_key_env`` (default: the session's key
   when the endpoint is the session's, else none);
3. otherwise a clear error saying how to configure either.

The call is ``POST {base_url}/chat/completions`` with one user message whose content is the question as a
``text`` part followed by the images as ``image_url`` parts holding ``data:`` URIs; temperature 0.1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hermes.errors import ConfigError, ToolError
from hermes.tools.routed.context import RoutedContext, http_client
from hermes.vendors.base import Auth, RetryPolicy, VendorError, same_origin, send

VISION_RETRY = RetryPolicy(attempts=3, base_delay=1.0, max_delay=8.0, statuses=frozenset({429, 500, 502, 503, 504}))


@dataclass(frozen=True)
class VisionModel:
    """An OpenAI-compatible endpoint and model able to read images."""

    base_url: str
    model: str
    api_key: str | None = field(repr=False)
    source: str
    timeout: float = 120.0


def _session_model(ctx: RoutedContext) -> Any:
    """The session's model endpoint as a session uses it (a Nous Portal login attached as its key)."""
    from hermes.routing.inference import session_model

    try:
        return session_model(ctx.settings)
    except ConfigError:
        return None


def pick_model(ctx: RoutedContext, tool: str = "vision_analyze") -> VisionModel:
    """The model to ask (see the module docstring); ToolError when nothing configured can see."""
    timeout = ctx.get_number("vision.timeout", 120.0, low=5.0, high=900.0)
    if ctx.get_bool("model.vision", False):
        from hermes.routing.inference import session_model

        try:
            session = session_model(ctx.settings)
        except ConfigError as exc:
            raise ToolError(f"model.vision is true, but the session's model cannot be used: {exc}") from None
        if session.provider == "local":
            raise ToolError(f"{tool}: the embedded local model cannot read images; configure an auxiliary vision "
                            "model with vision.model and vision.base_url in config.yaml")
        return VisionModel(session.base_url, session.model, session.current_key(), "session", timeout)
    aux = ctx.get_str("vision.model")
    if aux is None:
        session = _session_model(ctx)
        name = f"'{session.model}'" if session is not None else "(none configured)"
        raise ToolError(
            f"{tool} needs a model that can see images, and none is configured: the session's model {name} is not "
            "marked as accepting images. If it does, set model.vision: true; otherwise configure an auxiliary vision "
            "model with vision.model (plus vision.base_url and vision.api_key_env for another endpoint) in "
            "config.yaml."
        )
    session = _session_model(ctx)
    base = ctx.get_str("vision.base_url")
    if base is None:
        if session is None or session.provider == "local" or not session.base_url:
            raise ToolError(f"vision.model is set to '{aux}', but vision.base_url is not, and the session has no model "
                            "endpoint to share; set vision.base_url in config.yaml")
        base = session.base_url
    key_env = ctx.get_str("vision.api_key_env")
    if key_env is not None:
        key = ctx.env.get(key_env) or None
        if key is None:
            raise ToolError(f"vision.api_key_env names {key_env}, which is not set (add it to ~/.hermes/.env)")
    elif session is not None and session.base_url.rstrip("/") == base.rstrip("/"):
        key = session.current_key()
    else:
        key = None
    return VisionModel(base.rstrip("/"), aux, key, "auxiliary", timeout)


def _content_text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(texts) if texts else None
    return None


async def ask(vm: VisionModel, parts: list[dict[str, Any]], *, max_tokens: int = 2000) -> str:
    """The model's answer to one multimodal user message (ToolError on any failure)."""
    body = {"model": vm.model, "messages": [{"role": "user", "content": parts}], "temperature": 0.1,
            "max_tokens": max_tokens}
    vendor = f"the vision model {vm.model!r} at {vm.base_url}"
    async with http_client(vm.timeout) as http:
        try:
            response = await send(http, "POST", f"{vm.base_url}/chat/completions", vendor=vendor,
                                  auth=Auth.bearer(vm.api_key) if vm.api_key else None,
                                  allow=same_origin(vm.base_url), retry=VISION_RETRY, timeout=vm.timeout,
                                  max_bytes=4 * 1024 * 1024, json_body=body)
            answer = response.raise_for_status().json_object()
        except VendorError as exc:
            raise ToolError(f"image analysis failed: {exc}") from None
    choices = answer.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message") if isinstance(first.get("message"), dict) else {}
    text = _content_text(message.get("content")) if isinstance(message, dict) else None
    if not text or not text.strip():
        raise ToolError(f"{vendor} returned no answer")
    return text.strip()
