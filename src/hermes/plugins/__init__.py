"""Backends that features load as plugins (requirement REG-12), one package per kind.

* :mod:`.video_gen` — video generation backends (``plugins/video_gen/<name>/``): the interface every
  backend implements, the discovery of the built-in ones in this package and of third-party ones in
  ``HERMES_HOME/plugins/video_gen/<name>/`` or the entry point group ``hermes.video_gen``.

This room sits below ``tools`` (the video tools use the backends) and above ``connectors``/``routing``/
``vendors`` (a backend speaks its vendor's protocol through the clients in :mod:`hermes.vendors`).
"""
