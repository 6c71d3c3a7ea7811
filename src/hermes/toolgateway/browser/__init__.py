"""The local backend of the ``browser-use`` relay: Chromium on a DevTools pipe behind a fenced CDP proxy.

* :mod:`.pool` — :class:`~.pool.BrowserPool`: starting, lending and reaping browsers;
* :mod:`.cdppipe` — the DevTools pipe (no port) to one Chromium;
* :mod:`.cdpproxy` — the client's CDP WebSocket relayed to the pipe, commands screened;

Every browser's traffic goes through the network fence, :mod:`hermes.net.fence` (shared with the local
browser tools).
* :mod:`.config` — the ``[relays.browser-use]`` settings (kept free of the rest, so the gateway config can import it).

Nothing is imported here: each module is loaded where it is used.
"""
