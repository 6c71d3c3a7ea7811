"""The cached catalogs of backends that publish theirs (``live_catalog``): read offline, refreshed on demand.

``HERMES_HOME/cache/video_models/<backend>.json`` holds ``{"fetched_at": …, "models": [...]}`` (each model
as :func:`~hermes.plugins.video_gen.base.model_to_data`). Descriptions and availability checks read it and
never touch the network; ``hermes video models`` and a call naming a model the cache lacks refresh it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from hermes.config.atomic import atomic_write
from hermes.plugins.video_gen.base import ModelInfo, model_from_data, model_to_data


def catalog_path(cache_dir: Path, backend: str) -> Path:
    return cache_dir / "video_models" / f"{backend}.json"


def cached_models(cache_dir: Path, backend: str) -> tuple[ModelInfo, ...]:
    """The cached catalog of ``backend`` (empty when never fetched or unreadable)."""
    try:
        data = json.loads(catalog_path(cache_dir, backend).read_text(encoding="utf-8"))
        return tuple(model_from_data(item) for item in data["models"])
    except (OSError, ValueError, TypeError, KeyError):
        return ()


def store_models(cache_dir: Path, backend: str, models: tuple[ModelInfo, ...]) -> None:
    """Replace the cached catalog of ``backend`` (atomically)."""
    body = {"fetched_at": time.time(), "models": [model_to_data(m) for m in models]}
    atomic_write(catalog_path(cache_dir, backend), json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))
