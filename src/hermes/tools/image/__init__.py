"""Image generation (``image_generate``, requirement T-IMG, GW-11).

* :mod:`.tool` — the registered tool: schema, availability check, handler;
* :mod:`.generate` — one call: route, model, source image, Krea → FAL fallback, saved files;
* :mod:`.backends` — the FAL queue, Krea 2 and OpenAI Images protocols as used by the tool.

Settings, routes, media sniffing and source loading are shared with the other families in
:mod:`hermes.tools.routed`.
"""
