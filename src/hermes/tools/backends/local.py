"""The ``local`` backend: this machine, as today.

The tools do not go through this object for ``local``: ``terminal`` and ``execute_code`` start their
commands in the local OS sandbox (:mod:`hermes.tools.sandbox`) and the file tools apply the local path
rules (:mod:`hermes.tools.paths`) themselves. This class gives the interface's primitives on this
machine for the callers that want them (``hermes setup terminal``'s test, the backend benchmark), with
no sandbox.
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from hermes.tools.backends.base import DEFAULT_MAX_CHARS, Backend, BackendError, ByteCap, ExecResult, FileStat


class LocalBackend(Backend):
    """This machine (see the module docstring)."""

    name = "local"
    local = True

    def describe(self) -> str:
        return "this machine"

    def home(self) -> str:
        return os.path.expanduser("~")

    def default_cwd(self) -> str:
        configured = self.settings.get("cwd")
        return str(configured) if isinstance(configured, str) and configured else os.getcwd()

    def exec(self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None,
             timeout: float = 60.0, stdin: bytes | None = None, max_bytes: int = 4 * DEFAULT_MAX_CHARS) -> ExecResult:
        started = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=dict(env) if env else None,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        timed_out = False
        try:
            out, _ = proc.communicate(stdin or b"", timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            out, _ = proc.communicate()
        cap = ByteCap(max_bytes)
        cap.add(out)
        return ExecResult(cap.value(), cap.total, proc.returncode, time.monotonic() - started, timed_out=timed_out)

    def stat(self, path: str) -> FileStat | None:
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileStat(st.st_size, st.st_mtime_ns, st.st_mode)

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        st = self.stat(path)
        if st is None or not stat.S_ISREG(st.mode):
            raise BackendError(f"{path} is not a regular file")
        if st.size > max_bytes:
            raise BackendError(f"{path} is {st.size:,} bytes, more than {max_bytes:,}")
        return Path(path).read_bytes()

    def write_bytes(self, path: str, data: bytes, mode: int | None = None) -> FileStat:
        from hermes.config.atomic import atomic_write

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data, mode=mode)
        found = self.stat(path)
        assert found is not None
        return found
