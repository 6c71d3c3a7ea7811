"""Background processes on a backend: a detached process group whose state lives in a folder there.

:func:`start_detached` starts ``bash -c COMMAND`` under ``setsid`` (so its process id is its group id)
with stdin from a FIFO, stdout and stderr merged into ``out``, and its exit status written to ``rc``
when it ends — all in a private folder of the backend's temp dir. A ``sleep`` in the same group holds
the FIFO open for writing, so the command waits for input until ``eof`` kills the holder.

Everything is plain shell on the backend, driven by :meth:`~.base.Backend.exec`, so the process keeps
running when the connection drops, and a later request (after the reconnect) finds it where it was.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from hermes.tools.backends.base import Backend, BackendError

#: how long one status request waits for the backend
REQUEST_TIMEOUT = 30.0
_WRAPPER = r"""
D=$1; shift
sleep 2147483647 > "$D/in" &
echo $! > "$D/holder"
bash -c "$1" < "$D/in" > "$D/out" 2>&1
echo $? > "$D/rc.tmp"; mv "$D/rc.tmp" "$D/rc"
kill "$(cat "$D/holder")" 2>/dev/null
"""


@dataclass(frozen=True)
class ProcState:
    """One look at a detached process: running or not, its exit status once known, new output bytes."""

    running: bool
    exit_code: int | None
    size: int
    data: bytes


def start_detached(backend: Backend, label: str, command: str, cwd: str, env: dict[str, str]) -> tuple[str, int]:
    """Start ``command``; returns (its state folder, its process id there)."""
    folder = f"{backend.temp_dir()}/{label}"
    q = shlex.quote
    exports = "".join(f"export {k}={q(v)}; " for k, v in env.items())
    line = (f"mkdir -m 700 {q(folder)} && mkfifo {q(folder + '/in')} && : > {q(folder + '/out')} && "
            f"cd {q(cwd)} && {{ {exports}setsid bash -c {q(_WRAPPER)} hermes-bg {q(folder)} {q(command)} "
            f"</dev/null >/dev/null 2>&1 & }} && echo $!")
    result = backend.exec(line, timeout=REQUEST_TIMEOUT)
    text = result.output.decode("utf-8", "replace").strip()
    if result.exit_code != 0 or not text.isdigit():
        raise BackendError(f"could not start the background process on {backend.describe()}: {text[:300]}")
    backend.groups.append(int(text))
    return folder, int(text)


def look(backend: Backend, folder: str, pid: int, offset: int, limit: int) -> ProcState:
    """The process's state and up to ``limit`` bytes of output from byte ``offset`` on."""
    q = shlex.quote(folder)
    line = (f"if [ -f {q}/rc ]; then echo rc $(cat {q}/rc); elif kill -0 {pid} 2>/dev/null; then echo running; "
            f"else echo gone; fi; echo size $(stat -c %s {q}/out 2>/dev/null || echo 0); "
            f"tail -c +{offset + 1} {q}/out 2>/dev/null | head -c {limit}")
    result = backend.exec(line, timeout=REQUEST_TIMEOUT, max_bytes=limit + 4096)
    if result.connection_lost:
        raise BackendError(f"the connection to {backend.describe()} dropped; try again (the process keeps running)")
    first, _, rest = result.output.partition(b"\n")
    second, _, data = rest.partition(b"\n")
    words = first.decode("ascii", "replace").split()
    size_words = second.decode("ascii", "replace").split()
    size = int(size_words[1]) if len(size_words) == 2 and size_words[1].isdigit() else 0
    if words[:1] == ["rc"]:
        code = int(words[1]) if len(words) > 1 and words[1].lstrip("-").isdigit() else None
        return ProcState(False, code, size, data)
    return ProcState(words[:1] == ["running"], None, size, data)


def write_stdin(backend: Backend, folder: str, data: bytes, eof: bool, timeout: float) -> None:
    """Send ``data`` to the process's stdin FIFO; ``eof`` then closes it (the holder is stopped)."""
    q = shlex.quote(folder)
    parts = []
    if data:
        parts.append(f"timeout {max(1, int(timeout))} sh -c 'cat > \"$0\"' {q}/in")
    if eof:
        parts.append(f"kill $(cat {q}/holder) 2>/dev/null; true")
    result = backend.exec(" && ".join(parts) or "true", stdin=data or None, timeout=timeout + 5)
    if result.exit_code == 124:
        raise BackendError(f"the process is not reading its stdin: nothing was taken in {timeout:g} s")
    if result.exit_code != 0:
        raise BackendError(f"could not write to the process: {result.output.decode('utf-8', 'replace')[:300]}")


def signal_group(backend: Backend, pid: int, signal: str) -> None:
    """Send ``signal`` (TERM, KILL) to the process group ``pid``."""
    backend.exec(f"kill -{signal} -- -{pid} 2>/dev/null; true", timeout=REQUEST_TIMEOUT)
