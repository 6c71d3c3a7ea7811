"""The client side of the compatibility check: the unmodified upstream ``hermes-agent`` in its own venv.

Everything here runs the upstream package as subprocesses of its own interpreter, with a private
``HOME``/``HERMES_HOME`` and an environment that keeps it on this machine:

* the vendor pins (``FIRECRAWL_GATEWAY_URL``, ``FAL_QUEUE_GATEWAY_URL``, ``OPENAI_AUDIO_GATEWAY_URL``,
  ``KREA_GATEWAY_URL``, ``MODAL_GATEWAY_URL``) point at our gateway's ``/relay/<label>`` origins;
* ``HTTP(S)_PROXY``/``ALL_PROXY`` point at a closed loopback port and ``NO_PROXY`` lists only
  loopback, so any request the client might make to a host on the internet (the production portal,
  inference API or model catalog) fails locally instead of leaving the machine with our token;
* ``NOUS_INFERENCE_BASE_URL`` points at a closed loopback port for the same reason.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

UPSTREAM_VERSION = "0.19.0"
#: the SDKs upstream installs lazily on first use (tools/lazy_deps.py); the check installs them up front
LAZY_SDKS = {"firecrawl-py": "4.17.0", "fal-client": "0.13.1"}
CALLS_SCRIPT = Path(__file__).with_name("upstream_calls.py")
_CODE = re.compile(r"enter code:\s*([A-Z0-9]{4}-[A-Z0-9]{4})")
_CLOSED = "http://127.0.0.1:9"  # the discard port: nothing listens there

#: config.yaml of the upstream client: which backends its tools use (docs/gateway/compat.md)
UPSTREAM_CONFIG = """\
web:
  backend: firecrawl          # the only web backend that goes through a Tool Gateway
tts:
  provider: openai            # the only TTS provider that goes through a Tool Gateway
stt:
  provider: openai            # the only STT provider that goes through a Tool Gateway
image_gen:
  provider: fal
terminal:
  backend: modal              # the terminal tool runs its commands in a gateway sandbox
  modal_mode: managed         # never direct Modal (no modal SDK or credentials here)
security:
  allow_private_urls: true    # the page to extract is served on 127.0.0.1
  allow_lazy_installs: false  # never pip-install during the check (the SDKs are installed up front)
"""
#: the same, except that image generation names a native Krea model: a portal user's image_generate then
#: goes to the ``krea`` relay (``image_gen.provider`` must be unset, or ``fal`` would take the call first)
KREA_CONFIG = UPSTREAM_CONFIG.replace("image_gen:\n  provider: fal\n", "image_gen:\n  model: krea-2-medium\n")
assert KREA_CONFIG != UPSTREAM_CONFIG


class UpstreamError(RuntimeError):
    """The upstream client did something the check did not expect."""


class Upstream:
    """One upstream installation (``venv``) with one private home under ``workdir``."""

    def __init__(self, venv: Path, workdir: Path, pins: dict[str, str], portal_url: str) -> None:
        self.venv = venv
        self.python = venv / "bin" / "python"
        self.hermes = venv / "bin" / "hermes"
        self.home = workdir / "upstream-home"
        self.hermes_home = self.home / ".hermes"
        self.workdir = workdir
        self.pins = pins
        self.portal_url = portal_url

    # -- installation ----------------------------------------------------------------------------------
    def installed_versions(self) -> dict[str, str | None]:
        """Versions of hermes-agent and the lazy SDKs in the venv (None when missing)."""
        names = ["hermes-agent", *LAZY_SDKS]
        code = ("import importlib.metadata as m, json, sys\n"
                "def v(n):\n    try:\n        return m.version(n)\n    except m.PackageNotFoundError:\n"
                "        return None\n"
                "print(json.dumps({n: v(n) for n in sys.argv[1:]}))")
        done = subprocess.run([str(self.python), "-c", code, *names], capture_output=True, text=True, timeout=60,
                              env=self.env())
        if done.returncode != 0:
            raise UpstreamError(f"{self.python} does not run: {done.stderr.strip()[-500:]}")
        versions: dict[str, str | None] = json.loads(done.stdout)
        return versions

    def prepare(self, config: str = UPSTREAM_CONFIG) -> None:
        """Create the private home and write the client's ``config.yaml`` (again, to switch backends)."""
        self.hermes_home.mkdir(parents=True, exist_ok=True)
        (self.hermes_home / "config.yaml").write_text(config, encoding="utf-8")

    def env(self) -> dict[str, str]:
        env = {"PATH": f"{self.venv / 'bin'}:/usr/bin:/bin", "HOME": str(self.home),
               "HERMES_HOME": str(self.hermes_home), "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1",
               "PYTHONUNBUFFERED": "1", "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
               "NOUS_INFERENCE_BASE_URL": f"{_CLOSED}/v1"}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            env[name] = _CLOSED
        env.update(self.pins)
        return env

    # -- login -------------------------------------------------------------------------------------------
    def login(self, approve: Callable[[str], None], timeout: float = 90.0) -> str:
        """``hermes auth add nous --type oauth --no-browser`` against our portal; ``approve(user_code)``
        is called once the client shows its code. Returns the client's output (it prints no secrets)."""
        cmd = [str(self.hermes), "auth", "add", "nous", "--type", "oauth", "--no-browser",
               "--portal-url", self.portal_url, "--timeout", "15"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=self.env(), cwd=self.home)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        reader = threading.Thread(target=pump, daemon=True, name="upstream-login")
        reader.start()
        output: list[str] = []
        deadline = time.monotonic() + timeout
        approved = False
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    raise UpstreamError("the upstream login timed out:\n" + "".join(output)[-2000:]) from None
                if line is None:
                    break
                output.append(line)
                match = _CODE.search(line)
                if match and not approved:
                    approve(match.group(1))
                    approved = True
            code = proc.wait(max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            reader.join(5)
            if proc.stdout is not None:
                proc.stdout.close()
        text = "".join(output)
        if code != 0 or not approved:
            raise UpstreamError(f"the upstream login failed (exit {code}, code seen: {approved}):\n{text[-2000:]}")
        return text

    def auth_state(self) -> dict[str, Any]:
        """``providers.nous`` of the upstream ``auth.json``."""
        data = json.loads((self.hermes_home / "auth.json").read_text(encoding="utf-8"))
        state: dict[str, Any] = data.get("providers", {}).get("nous", {})
        return state

    def age_access_token(self, seconds_left: float) -> None:
        """Make the stored login look like it expires in ``seconds_left`` (as if time had passed), so the
        client's tool path refreshes it through our portal before the next call. The client keeps a copy
        in ``shared/nous_auth.json`` and takes whichever copy expires later, so both are aged."""
        moment = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + seconds_left))
        for path, keys in ((self.hermes_home / "auth.json", ("providers", "nous")),
                           (self.hermes_home / "shared" / "nous_auth.json", ())):
            if not path.exists():
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
            node = data
            for key in keys:
                node = node[key]
            node["expires_at"] = moment
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
            os.chmod(tmp, 0o600)
            tmp.replace(path)

    # -- tools -------------------------------------------------------------------------------------------
    def call_tools(self, toolsets: list[str], calls: list[dict[str, Any]], timeout: float = 180.0,
                   name: str = "calls") -> dict[str, Any]:
        """Run ``calls`` through the upstream dispatcher (:mod:`compat.upstream_calls`) in one process;
        its spec and output are kept as ``NAME.json`` and ``upstream-NAME.log`` in the workdir."""
        spec = self.workdir / f"{name}.json"
        spec.write_text(json.dumps({"toolsets": toolsets, "calls": calls}), encoding="utf-8")
        done = subprocess.run([str(self.python), str(CALLS_SCRIPT), str(spec)], capture_output=True, text=True,
                              env=self.env(), cwd=self.home, timeout=timeout)
        (self.workdir / f"upstream-{name}.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr,
                                                           encoding="utf-8")
        last = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if done.returncode != 0 or not last:
            raise UpstreamError(f"the upstream tool run failed (exit {done.returncode}): {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(last[0])
        return result

    def portal_info(self) -> str:
        """``hermes portal info``: the client's own view of its login and Tool Gateway routing."""
        done = subprocess.run([str(self.hermes), "portal", "info"], capture_output=True, text=True,
                              env=self.env(), cwd=self.home, timeout=120)
        if done.returncode != 0:
            raise UpstreamError(f"hermes portal info failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout
