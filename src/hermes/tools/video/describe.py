"""The schema of ``video_generate`` as one session sees it, rebuilt at the session's start (T-VGEN).

:func:`describe_generate` is the tool's ``describe=`` hook (:class:`hermes.tools.wrappers.SessionDescription`):
it asks which backend and model are active now — offline, from config.yaml, ``.env`` and the plugin folders —
and writes what that model can do into the description (modes, duration range, aspect ratios, resolutions,
reference images, sound) and into the parameters: the choices become ``enum`` lists, the duration its range,
and arguments the model cannot take are left out. When no backend can run, the registered schema stays.
"""

from __future__ import annotations

import copy
from typing import Any

from hermes.errors import HermesError
from hermes.plugins.video_gen.base import Capabilities


def schema_for(schema: dict[str, Any], backend_display: str, model_id: str, model_display: str,
               caps: Capabilities) -> dict[str, Any]:
    """``schema`` narrowed to ``caps`` with a description naming the backend and model."""
    made = copy.deepcopy(schema)
    props: dict[str, Any] = made["parameters"]["properties"]
    if "image" not in caps.modes:
        props.pop("image_url", None)
    if "text" not in caps.modes and "image_url" in props:
        made["parameters"]["required"] = [*made["parameters"].get("required", []), "image_url"]
    duration = props.get("duration")
    if duration is not None:
        if caps.durations:
            duration["enum"] = list(caps.durations)
        duration["minimum"], duration["maximum"] = caps.min_duration, caps.max_duration
        default = f" (default {caps.default_duration})" if caps.default_duration else ""
        duration["description"] = f"Length in seconds: {caps.duration_words()}{default}."
    for name, allowed in (("aspect_ratio", caps.aspect_ratios), ("resolution", caps.resolutions)):
        if not allowed:
            props.pop(name, None)
        elif name in props:
            props[name]["enum"] = list(allowed)
    if not caps.audio_switch:
        props.pop("audio", None)
    if not caps.negative_prompt:
        props.pop("negative_prompt", None)
    if not caps.max_reference_images:
        props.pop("reference_image_urls", None)
    elif "reference_image_urls" in props:
        props["reference_image_urls"]["maxItems"] = caps.max_reference_images
    if "prompt" in props:
        props["prompt"]["maxLength"] = caps.max_prompt_chars
    made["description"] = (f"{schema['description']} Active: {backend_display}, model {model_display} ({model_id}). "
                           f"{caps.summary()}")
    return made


def describe_generate(schema: dict[str, Any], session: Any) -> dict[str, Any]:
    """The ``describe=`` hook of ``video_generate`` (see the module docstring)."""
    from hermes.tools.routed.context import RoutedContext
    from hermes.tools.video.backend import active_backend, offline_route

    settings = getattr(session, "settings", None)
    if settings is None:
        from hermes.config.settings import Settings

        settings = Settings.load()
    try:
        ctx = RoutedContext(settings)
        active = active_backend(ctx, offline_route(ctx))
    except HermesError:
        return schema
    return schema_for(schema, active.backend.display, active.model.id, active.model.display,
                      active.model.capabilities)
