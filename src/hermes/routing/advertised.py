"""The gateway a portal login advertised: its relay origins and what it offers (stored beside the token).

A portal that runs its own Tool Gateway (``hermes toolgateway serve``) answers ``GET /api/oauth/account``
with a ``tool_gateway`` block::

    {"origins": {"firecrawl": "http://127.0.0.1:8787", "openai-audio": "http://127.0.0.1:8787/relay/openai-audio", …},
     "offers": ["connector", "firecrawl.scrape", "tool"]}

``hermes portal login`` stores it in ``auth.json`` as ``providers.nous.tool_gateway``. It then decides
the origin of each gateway route, below the GW-14 variables (``{LABEL}_GATEWAY_URL``,
``TOOL_GATEWAY_URL``, ``TOOL_GATEWAY_DOMAIN`` all win over it; see :func:`hermes.routing.endpoints.gateway_origin`),
and whether a route to one of these origins can run: only when its offer key is listed (an operator
without a vendor key leaves that relay off). The managed portal sends no such block: its logins keep the
``*-gateway.nousresearch.com`` hosts and are never judged by offers.

Read strictly: a malformed block, an unknown label or an origin that is not a plain http(s) URL is
dropped whole, so the routes fall back to the derived hosts and the old behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hermes.routing.endpoints import KNOWN_LABELS, parse_origin


@dataclass(frozen=True)
class AdvertisedGateway:
    """Origins by relay label, and the offer keys of the relays that are on."""

    origins: Mapping[str, str]
    offers: frozenset[str]

    @classmethod
    def read(cls, value: object) -> AdvertisedGateway | None:
        """The stored (or received) block; None when it is absent or malformed in any part."""
        if not isinstance(value, Mapping):
            return None
        origins, offers = value.get("origins"), value.get("offers")
        if not isinstance(origins, Mapping) or not isinstance(offers, list) or not origins:
            return None
        clean: dict[str, str] = {}
        for label, url in origins.items():
            if label not in KNOWN_LABELS or not isinstance(url, str) or parse_origin(url) is None:
                return None
            clean[label] = url.strip().rstrip("/")
        if not all(isinstance(k, str) and k.split(".")[0] in KNOWN_LABELS for k in offers):
            return None
        return cls(clean, frozenset(offers))

    def to_json(self) -> dict[str, object]:
        return {"origins": dict(self.origins), "offers": sorted(self.offers)}

    def offers_route(self, label: str, category: str, function: str) -> bool:
        """Whether this gateway serves a route of ``category``/``function`` through relay ``label``."""
        return offer_key(label, category, function) in self.offers


def offer_key(label: str, category: str, function: str) -> str:
    """The offer key a route needs (the gateway's names, hermes.toolgateway.offer)."""
    if label == "firecrawl":
        return "firecrawl.search" if function == "search" else "firecrawl.scrape"
    if label == "openai-audio":
        return "openai-audio.transcription" if category == "stt" else "openai-audio.speech"
    if label == "tool" and category == "image_gen":
        return "tool.images"
    return label
