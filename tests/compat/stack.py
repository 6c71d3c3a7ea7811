"""The server side of the upstream compatibility check: vendor fakes in threads, our gateway as a process.

:class:`Stack` starts the fakes (SearXNG, plain pages, FAL queue, OpenAI audio, Krea) on ``127.0.0.1``,
writes a gateway config pointing the ``firecrawl``, ``fal-queue``, ``openai-audio`` and ``krea`` relays at
them and turning on the ``modal`` relay's ``local`` sandbox engine, and runs ``python -m hermes
toolgateway serve --config FILE`` as a subprocess with its own ``HERMES_HOME`` — the way an operator runs
it. :meth:`Stack.cli` runs other ``hermes toolgateway`` commands against the same database.

Sandboxes live in a folder of their own under ``/tmp`` (mode 0711): when the check runs as root, commands
run as ``nobody``, who must be able to pass through every folder above them — a pytest or ``tempfile``
work folder (0700) would stop it. Otherwise they run as the check's own user (``allow_gateway_user``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx

from fakes.vendors import ServerThread, pages_app, searxng_app
from fakes.vendors.fal import FakeFal
from fakes.vendors.krea import FakeKrea
from fakes.vendors.openai_audio import FakeOpenAIAudio

#: the operator's vendor keys: only the gateway knows them; the fakes check them
FAL_KEY = "fal-compat-operator-key"
OPENAI_KEY = "sk-compat-operator-key"
KREA_KEY = "krea-compat-operator-key"
#: what the audio fake "hears" in any file: the upstream's transcript must be exactly this
TRANSCRIPT = "Transcribed by the audio fake behind our gateway."
AS_ROOT = os.geteuid() == 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Stack:
    """Fakes + gateway under ``workdir``; ``with Stack(workdir) as stack: ...``."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.fal = FakeFal(key=FAL_KEY, polls_before_done=2)
        self.audio = FakeOpenAIAudio(key=OPENAI_KEY, transcript=TRANSCRIPT)
        self.krea = FakeKrea(key=KREA_KEY)
        self.threads = {"searxng": ServerThread(searxng_app()), "pages": ServerThread(pages_app()),
                        "fal": ServerThread(self.fal.app), "audio": ServerThread(self.audio.app),
                        "krea": ServerThread(self.krea.app)}
        self.sandbox_parent: Path | None = None
        self.port = 0
        self.home = workdir / "gateway-home"
        self.config_path = workdir / "gateway.toml"
        self.access_log = workdir / "gateway-access.log"
        self.stderr_path = workdir / "gateway-stderr.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None

    # -- addresses -----------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def relay_url(self, label: str) -> str:
        return f"{self.url}/relay/{label}"

    def fake_url(self, name: str) -> str:
        return self.threads[name].url

    @property
    def sandbox_root(self) -> Path:
        """Where the ``modal`` relay keeps its sandboxes (the commands' working folders are below it)."""
        assert self.sandbox_parent is not None, "the stack is not started"
        return self.sandbox_parent / "sandboxes"

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> Stack:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.home.mkdir(exist_ok=True)
        self.sandbox_parent = Path(tempfile.mkdtemp(prefix="hermes-compat-modal-", dir="/tmp"))
        self.sandbox_parent.chmod(0o711)
        for thread in self.threads.values():
            thread.start()
        self.port = free_port()
        self.config_path.write_text(self._config(), encoding="utf-8")
        with self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "hermes", "toolgateway", "serve", "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=self._env())
        self._wait_ready()
        return self

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
            self.exit_code = self.process.returncode
            self.process = None
        for thread in self.threads.values():
            thread.stop()
        if self.sandbox_parent is not None:
            shutil.rmtree(self.sandbox_parent, ignore_errors=True)
            self.sandbox_parent = None

    def __enter__(self) -> Stack:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    # -- operator commands -----------------------------------------------------------------------------
    def cli(self, *args: str) -> str:
        """``hermes toolgateway ARGS --config FILE`` (our CLI, our venv); stdout, or RuntimeError."""
        done = subprocess.run([sys.executable, "-m", "hermes", "toolgateway", *args, "--config",
                               str(self.config_path)], capture_output=True, text=True, env=self._env(), timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"hermes toolgateway {args[0]} failed ({done.returncode}): {done.stderr.strip()}")
        return done.stdout

    # -- internals ---------------------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "FIRECRAWL_", "SEARXNG_"))}
        env.update(HERMES_HOME=str(self.home), NO_PROXY="127.0.0.1,localhost")
        for name in ("OPENAI_API_KEY", "FAL_KEY", "KREA_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                     "http_proxy", "https_proxy", "all_proxy"):
            env.pop(name, None)
        return env

    def _config(self) -> str:
        return "\n".join([
            'host = "127.0.0.1"',
            f"port = {self.port}",
            f'database = "{self.home / "gateway.db"}"',
            f'access_log = "{self.access_log}"',
            "[relays.firecrawl]",
            'search = "searxng"',
            'scrape = "local"',
            f'searxng_url = "{self.fake_url("searxng")}"',
            "allow_loopback = true            # the page fake listens on 127.0.0.1",
            '[relays.openai-audio]',
            'backend = "vendor"',
            f'url = "{self.fake_url("audio")}"',
            f'api_key = "{OPENAI_KEY}"',
            '[relays.fal-queue]',
            'backend = "vendor"',
            f'url = "{self.fake_url("fal")}"',
            f'api_key = "{FAL_KEY}"',
            "[relays.krea]",
            f'url = "{self.fake_url("krea")}"',
            f'api_key = "{KREA_KEY}"',
            "[relays.modal]",
            'backend = "local"',
            f'root = "{self.sandbox_root}"',
            'run_as = "nobody"                # the gateway runs as root: commands never do' if AS_ROOT else
            "allow_gateway_user = true        # not root: commands run as the check's own user",
            "",
        ])

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited with {self.process.returncode}: {self.stderr_tail()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the gateway did not become ready: {self.stderr_tail()}")

    def stderr_tail(self, limit: int = 2000) -> str:
        try:
            return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-limit:]
        except OSError:
            return ""
