"""Local media programs shared by the tools and the gateway server: running a program with a time limit,
speech with espeak-ng and audio conversion with ffmpeg/sox (:mod:`.programs`, :mod:`.speech`).

Nothing here is a Python dependency: the programs are Debian packages found on ``PATH`` when needed.
"""
