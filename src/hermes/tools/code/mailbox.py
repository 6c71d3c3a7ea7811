"""Tool calls of an ``execute_code`` script on a backend with no way back to this machine (``docker``,
``modal``): the same RPC messages, carried through files of the run folder there.

A sandbox with no network (docker's default ``network: none``) or behind a relay (modal) cannot reach
a socket here, but hermes can always run commands there. So the script's ``hermes_tools`` stub writes
each request (the socket protocol's ``{"token", "tool", "args"}`` JSON, see :mod:`.rpc`) to
``mail/req-<id>.json`` — written beside and renamed, so it is never seen half-written — and waits for
``mail/resp-<id>.json``. While the script runs, hermes runs the small *pump* below there, again and
again: each run first writes the answers hermes has ready (given on stdin), then waits up to
:data:`PUMP_WAIT` seconds for requests, prints them and removes them. Every request is answered by the
run's :class:`~.rpc.RpcServer` exactly as a socket request is (the one-time token, the allowed tools,
the call limit, the message size limit, the calling session's dispatch), so a script's tool calls
behave the same on every backend; each call costs two commands on the backend. The folder is 0700 and
private to the run; the pump stops early once the script has ended (``mail/.done``).
"""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Callable
from typing import TypeVar

from hermes.tools.backends.base import Backend, BackendError
from hermes.tools.code.rpc import RpcServer

T = TypeVar("T")

#: the most seconds one pump run waits for a request
PUMP_WAIT = 1.0
#: the most requests one pump run hands over
PUMP_BATCH = 8
#: what starts a line of the pump's output that carries a request
MARK = "HERMES-MAIL "

PUMP = r'''
import json, os, sys, time
box, wait, batch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
for line in sys.stdin:
    if line.strip():
        item = json.loads(line)
        part = os.path.join(box, ".resp-" + item["id"])
        with open(part, "w", encoding="ascii") as fh:
            fh.write(item["body"])
        os.rename(part, os.path.join(box, "resp-" + item["id"] + ".json"))
deadline = time.monotonic() + wait
while True:
    names = sorted(n for n in os.listdir(box) if n.startswith("req-") and n.endswith(".json"))[:batch]
    if names or os.path.exists(os.path.join(box, ".done")) or time.monotonic() >= deadline:
        break
    time.sleep(0.01)
for name in names:
    path = os.path.join(box, name)
    with open(path, "r", encoding="utf-8") as fh:
        body = fh.read()
    os.unlink(path)
    print("HERMES-MAIL " + json.dumps({"id": name[4:-5], "body": body}), flush=True)
'''


class Mailbox:
    """The hermes side of one run's mailbox in ``folder`` on ``backend`` (see the module docstring)."""

    def __init__(self, backend: Backend, server: RpcServer, folder: str) -> None:
        self.backend = backend
        self.server = server
        self.folder = folder
        self.pump = f"{folder}/pump.py"
        #: commands the relay ran on the backend (for the result's figures and tests)
        self.rounds = 0

    @property
    def address(self) -> dict[str, str]:
        """What the stub gets instead of a socket address."""
        return {"mailbox": self.folder}

    @property
    def done_marker(self) -> str:
        return f"{self.folder}/.done"

    def install(self) -> None:
        q = shlex.quote(self.folder)
        made = self.backend.exec(f"mkdir -m 700 -p {q}", timeout=30)
        if made.exit_code != 0:
            raise BackendError(f"cannot make the tool-call folder on {self.backend.describe()}")
        self.backend.write_bytes(self.pump, PUMP.encode("ascii"), 0o600)

    def _round(self, answers: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        """One pump run: hand over ``answers``, return the requests it found as ``(id, body)``."""
        q = shlex.quote
        stdin = "".join(json.dumps({"id": ident, "body": body.decode("ascii")}) + "\n" for ident, body in answers)
        limit = self.server.max_message_bytes * (PUMP_BATCH + 1) * 2
        result = self.backend.exec(f"python3 {q(self.pump)} {q(self.folder)} {PUMP_WAIT} {PUMP_BATCH}",
                                   stdin=stdin.encode("ascii") or None, timeout=PUMP_WAIT + 60, max_bytes=limit)
        self.rounds += 1
        if result.exit_code != 0 and not result.output:
            raise BackendError(f"the tool-call pump failed on {self.backend.describe()} (exit {result.exit_code})")
        found: list[tuple[str, bytes]] = []
        for line in result.output.decode("utf-8", "replace").splitlines():
            if not line.startswith(MARK):
                continue
            try:
                item = json.loads(line[len(MARK):])
                found.append((str(item["id"]), str(item["body"]).encode("utf-8")))
            except (ValueError, KeyError, TypeError):
                continue
        return found

    def serve_while(self, work: Callable[[], T]) -> T:
        """Run ``work`` (the script's command) in a thread and answer its tool calls until it returns."""
        outcome: list[T] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(work())
            except BaseException as exc:  # handed back to the caller below
                failure.append(exc)

        worker = threading.Thread(target=run, name="execute_code-remote", daemon=True)
        worker.start()
        answers: list[tuple[str, bytes]] = []
        try:
            while True:
                finished = not worker.is_alive()
                requests = self._round(answers)
                answers = [(ident, self.server.reply(body)) for ident, body in requests]
                if finished and not answers:
                    break
        except BackendError:
            pass  # the way back is gone: the script's calls time out; its own command still reports
        worker.join()
        if failure:
            raise failure[0]
        return outcome[0]

