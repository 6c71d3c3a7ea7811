"""The ``file`` toolset: ``read_file``, ``write_file``, ``patch`` and ``search_files`` (requirement T-FILE).

Modules:

* :mod:`hermes.tools.paths` — turning a model's path into a real path and deciding whether it may be read
  or written (what is protected, by name and by identity: :mod:`hermes.tools.sensitive`);
* :mod:`.content` — loading a file once: bytes, version (sha256, size, mtime), text or binary/image kind;
* :mod:`.baseline` — the per-task full-file baseline rule that guards overwrites;
* :mod:`.read`, :mod:`.write`, :mod:`.patch`, :mod:`.search` — the four tools (each registers itself);
* :mod:`.matching` — patch's exact and whitespace-tolerant match strategies, :mod:`.difftext` its diff;
* :mod:`.rg` — search_files' ripgrep engine (one child process, always killed and reaped);
* :mod:`.walk` — the pure-Python file walker and matcher used when ripgrep is not installed.

See docs/tools/file.md for the user-facing description. The page sizes the schemas name live here, so
that discovery (which imports the four tool modules at every start-up) imports none of the engines.
"""

#: lines per read_file page by default
PAGE_LINES = 500
#: the largest page read_file accepts
MAX_LIMIT = 2000
