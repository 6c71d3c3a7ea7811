"""Where a running ``hermes toolgateway serve`` can be reached: ``HERMES_HOME/toolgateway/serving.json``.

``serve`` writes ``{"url", "pid", "started"}`` (atomically) once its port is bound and removes the file
when it stops; ``users login-link`` reads it, so the link it prints names the port the server really
listens on (``--port 9000`` on the command line included), not the default. A record whose process is
gone (the server was killed) is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass

from hermes.toolgateway.config import GatewayConfig


@dataclass(frozen=True)
class ServingRecord:
    url: str
    pid: int


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


class Serving:
    """The record of the server running with ``config``'s state folder."""

    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.path = config.state_dir / "serving.json"

    def write(self) -> None:
        from hermes.config.atomic import atomic_write

        atomic_write(self.path, json.dumps({"url": self.config.base_url(), "pid": os.getpid(),
                                            "started": time.time()}) + "\n", mode=0o600)

    def remove(self) -> None:
        found = self.read()
        if found is not None and found.pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def read(self) -> ServingRecord | None:
        """The record, or None when there is none, it is malformed, or its process is gone."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if not isinstance(data, dict):
            return None
        url, pid = data.get("url"), data.get("pid")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not isinstance(pid, int) \
                or isinstance(pid, bool) or pid <= 0 or not _alive(pid):
            return None
        return ServingRecord(url.rstrip("/"), pid)
