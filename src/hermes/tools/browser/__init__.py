"""The browser tools (SPEC T-BROWSER): a real Chromium driven through Playwright, one context per task.

* :mod:`.config` — the ``browser.*`` settings and the offline availability checks;
* :mod:`.guard` — which addresses the browser may open (metadata never; private and loopback only
  with ``browser.allow_private_urls``; no secrets in URLs);
* :mod:`.backend` — the process-wide Playwright driver, the local Chromium behind the network fence
  (:mod:`hermes.net.fence`) or a CDP endpoint, and the per-task :class:`~.backend.Tab`;
* :mod:`.snapshot` — accessibility snapshots with ``@e`` refs, the token budget, paging and search;
* :mod:`.actions` — the handlers of the ten core tools;
* :mod:`.script` — ``browser_exec``, a short script of actions in one call;
* :mod:`.cdp` — the endpoint probe and the two CDP-only tools (``browser_cdp``, ``browser_dialog``);
* :mod:`.tool` — schemas and registration.

Playwright is imported only inside functions: loading the catalog never starts a browser.
"""
