"""The web tools: ``web_search`` and ``web_extract`` (requirement T-WEB, GW-3, GW-5; docs/tools/web.md).

* :mod:`.search`, :mod:`.extract` — the two tools (schemas, handlers, registration);
* :mod:`.runtime` — the ``web.*`` limits, vendor credential headers and the HTTP client (settings, routes
  and credentials come from the shared :mod:`hermes.tools.routed.context`);
* :mod:`.backends` — running a search or an extraction on the chosen route;
* :mod:`.local` — fetching on this machine through the SSRF-safe fetcher;
* :mod:`.content` — HTML/PDF conversion, the length budget and the untrusted-content marking;
* :mod:`.results` — the normalised shapes and the JSON handed to the model.
"""
