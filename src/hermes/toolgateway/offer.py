"""What this gateway offers, from its configuration alone: per relay, on or off and why.

One answer for three readers: the ``serve`` banner (which relays are off, and what would turn each on),
the portal's account document (``tool_gateway``: the origins a client should call and the relays it
may use, stored beside the client's token at login — docs/gateway/portal.md), and nothing else needs
the network or the database to know it.

An *offer key* names what a client route needs: ``firecrawl.search``, ``firecrawl.scrape``,
``openai-audio.speech``, ``openai-audio.transcription``, ``tool.images`` (the shared origin's image
models), and the bare label for the other relays (``fal-queue``, ``krea``, ``browser-use``, ``modal``,
``connector``). The client maps its routes to the same keys (``hermes.routing.offer``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.toolgateway.config import VENDOR_RELAYS, GatewayConfig

#: Relays whose pinned origin is the bare server origin: firecrawl-py drops a path prefix (app.py).
BARE_ORIGIN_LABELS = frozenset({"firecrawl"})
#: Every relay label, in the order the banner lists them.
LABELS: tuple[str, ...] = ("firecrawl", "openai-audio", "fal-queue", "krea", "tool", "browser-use", "modal",
                           "connector")


@dataclass(frozen=True)
class RelayState:
    """One relay as configured: whether it answers, a line about its backend, and its offer keys."""

    label: str
    on: bool
    detail: str
    offers: tuple[str, ...]


def _vendor_off(label: str, has_key: bool) -> str:
    key_env = VENDOR_RELAYS[label][1]
    if has_key:
        return f'off (backend = "off" in [relays.{label}])'
    return f"off — no vendor key ({key_env}) and no url in [relays.{label}]"


def relay_states(config: GatewayConfig) -> list[RelayState]:
    """Every relay of ``config``, in :data:`LABELS` order."""
    fc = config.firecrawl
    search = {"searxng": f"search via SearXNG ({fc.searxng_url})", "firecrawl": "search via Firecrawl",
              "off": "search off — no SEARXNG_URL or FIRECRAWL_API_KEY"}[fc.search]
    scrape = {"local": "extract with the local fetcher", "firecrawl": "extract via Firecrawl",
              "off": "extract off"}[fc.scrape]
    fc_offers = tuple(key for key, on in (("firecrawl.search", fc.search != "off"),
                                          ("firecrawl.scrape", fc.scrape != "off")) if on)
    states = [RelayState("firecrawl", bool(fc_offers), f"{search}; {scrape}", fc_offers)]
    audio = config.openai_audio
    if audio.backend == "local":
        states.append(RelayState("openai-audio", True, "speech with espeak-ng on this host; no transcription",
                                 ("openai-audio.speech",)))
    elif audio.backend == "vendor":
        states.append(RelayState("openai-audio", True, f"speech and transcription via {audio.url}",
                                 ("openai-audio.speech", "openai-audio.transcription")))
    else:
        states.append(RelayState("openai-audio", False, _vendor_off("openai-audio", audio.api_key is not None), ()))
    for label, relay in (("fal-queue", config.fal_queue), ("krea", config.krea)):
        if relay.backend == "vendor":
            states.append(RelayState(label, True, f"via {relay.url}", (label,)))
        else:
            states.append(RelayState(label, False, _vendor_off(label, relay.api_key is not None), ()))
    if config.tool.backend == "vendor":
        states.append(RelayState("tool", True, f"uploads; image models via {config.tool.url}", ("tool", "tool.images")))
    else:
        states.append(RelayState("tool", True, "uploads only; image models " + _vendor_off(
            "tool", config.tool.api_key is not None), ("tool",)))
    browser = config.browser_use
    if browser.backend == "off":
        why = ('off (backend = "off" in [relays.browser-use])' if browser.api_key else
               'off — no BROWSER_USE_API_KEY, or backend = "local" in [relays.browser-use] for a local Chromium pool')
        states.append(RelayState("browser-use", False, why, ()))
    else:
        where = "a local Chromium pool" if browser.backend == "local" else browser.url
        states.append(RelayState("browser-use", True, f"cloud browsers via {where}", ("browser-use",)))
    if config.modal.backend == "off":
        states.append(RelayState("modal", False, 'off — backend = "local" in [relays.modal] runs sandboxes here', ()))
    else:
        states.append(RelayState("modal", True, "sandboxes on this host", ("modal",)))
    states.append(RelayState("connector", True, "connector accounts API", ("connector",)))
    return states


def relay_origin(base: str, label: str) -> str:
    """The origin a client pins for ``label`` on the server at ``base``."""
    return base if label in BARE_ORIGIN_LABELS else f"{base}/relay/{label}"


def gateway_document(config: GatewayConfig, base: str) -> dict[str, object]:
    """The ``tool_gateway`` block of the account document (``base``: ``public_url``, else the origin the
    client reached the portal at): the origin of *every* relay — one that is off too, so a client never
    sends this gateway's token to another deployment's host — and the offer keys of those that are on."""
    return {"origins": {label: relay_origin(base, label) for label in LABELS},
            "offers": sorted(k for s in relay_states(config) for k in s.offers)}
