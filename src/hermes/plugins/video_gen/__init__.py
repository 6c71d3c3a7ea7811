"""Video generation backends as plugins (requirement T-VGEN, REG-12; docs/video-gen-plugins.md).

* :mod:`.base` — the interface: :class:`~.base.VideoBackend`, what a model can do
  (:class:`~.base.Capabilities`), a request, a submitted job and its progress;
* :mod:`.discovery` — the built-in backends (``hermes/plugins/video_gen/<name>/``) and third-party ones
  (``HERMES_HOME/plugins/video_gen/<name>/__init__.py`` or the entry point group ``hermes.video_gen``);
* :mod:`.fal` — FAL's queue (Veo 3.1, Pixverse v6, Kling 3.0 / O3), also through the gateway's relay;
* :mod:`.xai` — xAI Grok Imagine (text and image to video, edit, extend).
"""
