"""Seeing: ``vision_analyze`` (images) and ``video_analyze`` (frames sampled locally), requirement T-VIS.

* :mod:`.tool` — the two registered tools;
* :mod:`.analyze` — one call each: load, check, sample, ask;
* :mod:`.model` — which model can see (the session's, or an auxiliary one) and the chat call;
* :mod:`.frames` — ffmpeg frame sampling.
"""
