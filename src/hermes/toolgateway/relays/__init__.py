"""Vendor relays: one per label, each mirroring the vendor API the upstream client calls.

Implemented: ``firecrawl`` (:mod:`.firecrawl`), ``openai-audio`` (:mod:`.openai_audio`), ``fal-queue``
(:mod:`.fal_queue`), ``krea`` (:mod:`.krea`), ``tool`` (the shared origin, :mod:`.tool_origin`),
``browser-use`` (:mod:`.browser_use`), ``modal`` (:mod:`.modal`, sandboxes on the gateway host), and
``connector`` (:mod:`.connectors`, the connector-accounts API). A label whose backend is ``off`` answers 404
``relay_not_available``.

:func:`build_relays` makes the table the app's lifespan hands to its router; each relay takes the shared
resources (:class:`~hermes.toolgateway.services.Gateway`) and nothing else: no relay builds another or
imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.toolgateway.relays.base import Operation, Relay, RelayCall, RelayResult

if TYPE_CHECKING:
    from hermes.toolgateway.services import Gateway

#: Every label the upstream client knows (``{label}-gateway.<domain>``, ``{LABEL}_GATEWAY_URL``).
KNOWN_LABELS: tuple[str, ...] = ("firecrawl", "fal-queue", "krea", "openai-audio", "browser-use", "modal",
                                 "connector", "tool")


def build_relays(gateway: Gateway) -> dict[str, Relay]:
    """The relays this gateway serves, by label."""
    from hermes.toolgateway.relays.browser_use import BrowserUseRelay
    from hermes.toolgateway.relays.connectors import ConnectorAPI
    from hermes.toolgateway.relays.fal_queue import FalQueueRelay
    from hermes.toolgateway.relays.firecrawl import FirecrawlRelay
    from hermes.toolgateway.relays.krea import KreaRelay
    from hermes.toolgateway.relays.modal import ModalRelay
    from hermes.toolgateway.relays.openai_audio import OpenAIAudioRelay
    from hermes.toolgateway.relays.tool_origin import ToolOriginRelay

    cfg = gateway.config
    relays: list[Relay] = [FirecrawlRelay(gateway), ConnectorAPI(gateway)]  # connector: accounts API
    relays.append(ToolOriginRelay(gateway))  # tool: the shared origin (uploads work without an image backend)
    # vendor-forwarding relays exist only with a backend: otherwise the label answers relay_not_available
    if cfg.openai_audio.backend != "off":
        relays.append(OpenAIAudioRelay(gateway))
    if cfg.fal_queue.backend != "off":
        relays.append(FalQueueRelay(gateway))
    if cfg.krea.backend != "off":
        relays.append(KreaRelay(gateway))
    if cfg.browser_use.backend != "off":  # vendor (Browser Use API) or local (a Chromium pool)
        relays.append(BrowserUseRelay(gateway))
    if cfg.modal.backend != "off":  # local: sandboxes on this host (hermes.toolgateway.sandbox.engine)
        relays.append(ModalRelay(gateway))
    return {relay.label: relay for relay in relays}


__all__ = ["KNOWN_LABELS", "Operation", "Relay", "RelayCall", "RelayResult", "build_relays"]
