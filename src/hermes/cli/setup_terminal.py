"""``hermes setup terminal``: choose where the agent's commands run, test it, save it (docs/backends.md).

The questions depend on the backend (``local``, ``ssh``, ``docker``, ``modal``); every answer has the
current value as its default. "Test it now" builds the backend from the answers, runs one command there
and reads its home folder — the same calls the tools make — and prints what came back and how long it
took. A failed test asks before saving. ``terminal.backend`` and the backend's table are written to
config.yaml with the round-trip editor, so comments and the order of other keys stay.

:func:`run_terminal_wizard` is a plain function over ``ask``/``out`` (tests script it); :func:`run` wires
it to the terminal.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.settings import Settings

Ask = Callable[[str], str]
Out = Callable[[str], None]

CHOICES = (
    ("local", "this machine (the default; commands run in the local OS sandbox)"),
    ("ssh", "a server over SSH (asyncssh; host-key checking on)"),
    ("docker", "a container of a Docker Engine"),
    ("modal", "a managed sandbox through the Nous Tool Gateway"),
)
#: (key in the backend's table, question, default when nothing is saved, kind)
QUESTIONS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "ssh": (("host", "Host", "", "text"), ("port", "Port", "22", "int"), ("user", "User", "", "text"),
            ("key_file", "Private key file (Enter: the SSH agent and ~/.ssh/id_*)", "", "text"),
            ("known_hosts", "known_hosts file", "~/.ssh/known_hosts", "text"),
            ("cwd", "Working directory there (Enter: the home folder)", "", "text")),
    "docker": (("image", "Image", "python:3.11-slim", "text"), ("memory", "Memory limit", "2g", "text"),
               ("cpus", "CPUs", "1", "float"), ("network", "Network (none | bridge)", "none", "text")),
    "modal": (("image", "Image", "python:3.11", "text"),),
    "local": (),
}


def run(args: argparse.Namespace) -> int:
    """The wizard on the terminal (refused without one)."""
    import sys

    from hermes.config.settings import Settings
    from hermes.errors import ConfigError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ConfigError("hermes setup terminal is interactive and needs a terminal. In scripts use "
                          "'hermes config set terminal.backend ssh' and 'hermes config set terminal.ssh.host HOST'.")
    try:
        saved = run_terminal_wizard(Settings.load(), input, print)
    except EOFError:
        raise ConfigError("setup cancelled (end of input); nothing was saved") from None
    return 0 if saved else 1


def _value(text: str, kind: str) -> Any:
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    return text


def _ask_settings(name: str, current: dict[str, Any], ask: Ask, out: Out) -> dict[str, Any]:
    import getpass

    chosen: dict[str, Any] = {}
    for key, question, default, kind in QUESTIONS[name]:
        if key == "user" and not default:
            default = getpass.getuser()
        shown = str(current.get(key, default) or "")
        for _ in range(3):
            answer = ask(f"  {question} [{shown or 'none'}]: ").strip() or shown
            if key == "host" and not answer:
                out("    a host is required")
                continue
            try:
                value = _value(answer, kind) if answer else None
            except ValueError:
                out(f"    {answer!r} is not a {'whole number' if kind == 'int' else 'number'}")
                continue
            break
        else:
            raise EOFError
        if value is not None:
            chosen[key] = value
    return chosen


def test_backend(name: str, settings: dict[str, Any], config: Any) -> tuple[bool, str]:
    """Run one command on the backend built from ``settings``; (worked, what to show)."""
    import time

    from hermes.errors import HermesError
    from hermes.tools.backends.registry import backend_class

    try:
        backend = backend_class(name)(settings)
        try:
            started = time.monotonic()
            result = backend.exec("echo hermes-backend-ok; uname -sn", timeout=30)
            took = (time.monotonic() - started) * 1000
            text = result.output.decode("utf-8", "replace").strip()
            if result.exit_code != 0 or "hermes-backend-ok" not in text:
                return False, f"the test command failed (exit {result.exit_code}): {text[:300]}"
            where = text.replace("hermes-backend-ok", "").strip()
            return True, f"ran on {backend.describe()}: {where} (home {backend.home()}; first command {took:.0f} ms)"
        finally:
            backend.close()
    except HermesError as exc:
        return False, str(exc)


def run_terminal_wizard(settings: Settings, ask: Ask, out: Out,
                        tester: Callable[[str, dict[str, Any], Any], tuple[bool, str]] | None = None) -> bool:
    """Ask, test, save; True when something was saved."""
    cfg = settings.config
    current = str(cfg.get("terminal.backend") or "local")
    out("Where should the agent's commands run? (terminal, process_manage, execute_code and the file tools)")
    for number, (name, what) in enumerate(CHOICES, 1):
        mark = " (current)" if name == current else ""
        out(f"  {number}) {name:<7} {what}{mark}")
    names = [n for n, _ in CHOICES]
    default = names.index(current) + 1 if current in names else 1
    for _ in range(3):
        answer = ask(f"Backend [{default}]: ").strip().lower() or str(default)
        if answer in names:
            name = answer
            break
        if answer.isdigit() and 1 <= int(answer) <= len(names):
            name = names[int(answer) - 1]
            break
        out(f"  choose 1-{len(names)} or a name ({', '.join(names)})")
    else:
        raise EOFError
    table = cfg.get(f"terminal.{name}")
    chosen = _ask_settings(name, dict(table) if isinstance(table, dict) else {}, ask, out)
    if name == "modal":
        _modal_route(settings, out)
    if name != "local" and ask("Test it now? [Y/n]: ").strip().lower() in ("", "y", "yes"):
        ok, message = (tester or test_backend)(name, chosen, cfg)
        out(f"  {'✓' if ok else '✗'} {message}")
        if not ok and ask("Save it anyway? [y/N]: ").strip().lower() not in ("y", "yes"):
            out("Nothing was saved.")
            return False
    cfg.set("terminal.backend", name)
    for key, value in chosen.items():
        cfg.set(f"terminal.{name}.{key}", value)
    cfg.save()
    keys = ["terminal.backend", *(f"terminal.{name}.{k}" for k in chosen)]
    out(f"Saved {', '.join(keys)} in {settings.paths.config}")
    return True


def _modal_route(settings: Settings, out: Out) -> None:
    from hermes.routing.credentials import load_credentials
    from hermes.routing.terminal import terminal_route

    env = settings.env.as_dict()
    route = terminal_route({"terminal": {"backend": "modal"}}, env, load_credentials(settings.paths.auth, env))
    out(f"  {'✓' if route.ready else '✗'} {route.message}")
    if route.missing:
        out(f"    {route.missing}")
