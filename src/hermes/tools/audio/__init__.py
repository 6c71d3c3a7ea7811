"""Speech: ``text_to_speech`` (requirement T-TTS) and speech to text for surfaces (GW-1 STT).

* :mod:`.tool` — the registered ``text_to_speech`` tool;
* :mod:`.tts` — one call: route, engine, output format for the surface, saved file;
* :mod:`.stt` — :func:`~hermes.tools.audio.stt.transcribe` for voice messages (not a tool);
* :mod:`.convert` — espeak-ng and ffmpeg/sox as subprocesses.
* :mod:`.piper` — the optional local Piper engine (``tts.provider: piper``), loaded only when used.
"""
