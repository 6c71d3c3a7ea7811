"""Image generation (``image_generate``, SPEC T-IMG, GW-11) and the media helpers other families share.

* :mod:`.tool` — the registered tool: schema, availability check, handler;
* :mod:`.generate` — one call: route, model, source image, Krea → FAL fallback, saved files;
* :mod:`.backends` — the FAL queue, Krea 2 and OpenAI Images protocols as used by the tool;
* :mod:`.runtime` — settings, routes, credentials and error wording for every media tool family;
* :mod:`.media` — magic-byte sniffing and saving under ``HERMES_HOME/media/``;
* :mod:`.source` — loading an image or video from a path, a ``data:`` URI or a URL.
"""
