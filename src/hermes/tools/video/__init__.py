"""Video generation and editing (``video_generate``, ``xai_video_edit``, ``xai_video_extend``; T-VIDEO, T-VGEN).

* :mod:`.tool` — the registered tools: schemas, availability checks, handlers;
* :mod:`.describe` — ``video_generate``'s schema rebuilt per session from the active backend and model;
* :mod:`.backend` — which backend (a plugin of :mod:`hermes.plugins.video_gen`) and model a call uses;
* :mod:`.generate` — one ``video_generate`` call: limits first, the source image, the job;
* :mod:`.xai_edit` — the xAI edit and extend calls, their input limits checked first;
* :mod:`.jobs` — a paid render stored before polling, resumed after a restart, saved with its metadata.
"""
