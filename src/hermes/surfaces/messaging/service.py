"""Putting a gateway together from settings, and reading the state a running one left (``status.json``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.surfaces.messaging.config import PlatformConfig
    from hermes.surfaces.messaging.gateway import Gateway


def status_path(settings: Settings) -> Path:
    return settings.paths.home / "gateway" / "status.json"


def running_state(settings: Settings) -> dict[str, Any] | None:
    """What the running gateway of this HERMES_HOME last wrote, or None when none runs."""
    try:
        data = json.loads(status_path(settings).read_text())
        pid = int(data["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    if all(p.get("state") == "stopped" for p in data.get("platforms", {}).values()):
        return None
    return dict(data)


def build_gateway(settings: Settings, chosen: list[str] | None = None,
                  show_owner: Callable[[str], None] | None = None) -> tuple[Gateway, list[PlatformConfig]]:
    """The gateway for the configured platforms that can run (``chosen``: only those names); also
    returns the ones that cannot, with their :attr:`~PlatformConfig.problem`."""
    from hermes.agent.session import load_tools
    from hermes.store.conversations import ConversationStore
    from hermes.surfaces.host import SessionHost
    from hermes.surfaces.messaging import config as gwconfig
    from hermes.surfaces.messaging.access import AccessGate
    from hermes.surfaces.messaging.gateway import Gateway
    from hermes.tools.toolsets import Surface

    configs = gwconfig.platforms(settings)
    if chosen:
        unknown = sorted(set(chosen) - {c.name for c in configs})
        if unknown:
            raise ConfigError(f"no platform {', '.join(unknown)} under gateway.platforms")
        configs = [c for c in configs if c.name in chosen]
    ready = [c for c in configs if not c.problem]
    skipped = [c for c in configs if c.problem]
    if not ready:
        why = "; ".join(f"{c.name}: {c.problem}" for c in skipped) or "no platform under gateway.platforms"
        raise ConfigError(f"no messaging platform can run ({why}). See docs/messaging.md, or run "
                          "'hermes gateway setup'.")
    settings.model()  # a gateway without a model endpoint answers nobody: say so now
    opts = gwconfig.options(settings)
    registered = set(load_tools(settings).toolsets())
    host = SessionHost(settings, surface=Surface.MESSAGING, busy_mode=opts.busy_mode,  # type: ignore[arg-type]
                       max_concurrent_turns=opts.max_concurrent_turns)
    access = AccessGate(ConversationStore(settings.paths.database), {c.name: c.access for c in ready},
                        loop_max_events=opts.loop_max_events, loop_cooldown_seconds=opts.loop_cooldown_seconds,
                        pairing_ttl_seconds=opts.pairing_ttl_seconds, show_owner=show_owner)
    toolsets = {c.name: t for c in ready if (t := gwconfig.default_toolsets(c, registered)) is not None}
    adapters = [gwconfig.build_adapter(c, settings.paths.cache) for c in ready]
    for cfg, adapter in zip(ready, adapters, strict=True):
        if cfg.type == "feishu":
            _answer_comments(settings, cfg, adapter)
    gateway = Gateway(host, adapters, access, toolsets=toolsets,
                      secrets=[s for c in ready for s in c.secrets], status_path=status_path(settings),
                      idle_evict_seconds=opts.idle_evict_seconds, stream_edits=opts.stream_edits,
                      voice_replies=opts.voice_replies)
    return gateway, skipped


def _answer_comments(settings: Settings, cfg: PlatformConfig, adapter: Any) -> None:
    """Give a Feishu adapter its document-comment handler (``comments: false`` in its table: none)."""
    if cfg.table.get("comments") is False:
        return
    from hermes.surfaces.messaging.feishu_comment import CommentHandler

    adapter.on_comment = CommentHandler(settings, adapter.app_id, cfg.secret, adapter.base_url, cfg.access,
                                        lambda: adapter.bot_open_id)
