"""Vendor relays: one per label, each mirroring the vendor API the upstream client calls.

Implemented: ``firecrawl`` (:mod:`.firecrawl`), ``openai-audio`` (:mod:`.openai_audio`), ``fal-queue``
(:mod:`.fal_queue`). Planned labels (same framework, :mod:`.base`): ``krea``, ``browser-use``, ``modal``;
a request for one of those answers 404 ``relay_not_available`` until it exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

#: Every label the upstream client knows (``{label}-gateway.<domain>``, ``{LABEL}_GATEWAY_URL``).
KNOWN_LABELS: tuple[str, ...] = ("firecrawl", "fal-queue", "krea", "openai-audio", "browser-use", "modal")


def build_relays(gateway: Gateway) -> dict[str, Relay]:
    """The relays this gateway serves, by label."""
    from hermes.toolgateway.relays.fal_queue import FalQueueRelay
    from hermes.toolgateway.relays.firecrawl import FirecrawlRelay
    from hermes.toolgateway.relays.openai_audio import OpenAIAudioRelay

    cfg = gateway.config
    relays: list[Relay] = [FirecrawlRelay(gateway)]
    # vendor-forwarding relays exist only with a backend: otherwise the label answers relay_not_available
    if cfg.openai_audio.backend != "off":
        relays.append(OpenAIAudioRelay(gateway))
    if cfg.fal_queue.backend != "off":
        relays.append(FalQueueRelay(gateway))
    return {relay.label: relay for relay in relays}


__all__ = ["KNOWN_LABELS", "Operation", "Relay", "RelayCall", "RelayResult", "build_relays"]
