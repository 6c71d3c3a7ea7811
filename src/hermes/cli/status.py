"""``hermes status [--full] [--json]``: the model a chat would run and the Tool Gateway routing; ``--full`` adds the
toolsets of each surface with the tools ready here (counted as ``hermes tools list`` counts them, plugins
included), storage paths and sizes, the cron scheduler and the command sandbox (whether it can run here,
and what is missing when not).

Secrets are never shown: the model section names the variable the API key comes from, not the key. The
gateway section is the same report as ``hermes portal info`` (no network, no refresh). Only argparse is
imported at module level.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from hermes.config.settings import Settings

#: (name, HermesPaths attribute or path under HERMES_HOME) listed under storage
STORAGE: tuple[tuple[str, str], ...] = (
    ("config.yaml", "config"), (".env", "env"), ("auth.json", "auth"), ("state.db", "database"),
    ("plugins", "plugins"), ("cache", "cache"), ("chat_history", "history"), ("cron", "cron"),
    ("toolgateway", "toolgateway"), ("video_jobs.db", "video_jobs.db"), ("media", "media"),
)
_MAX_ENTRIES = 50_000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help="also the toolsets of each surface, storage paths and sizes, the cron scheduler "
                             "and the command sandbox")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    from hermes.config.settings import Settings

    settings = Settings.load()
    data = collect(settings, full=args.full)
    if args.json:
        import json

        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print("\n".join(render(data)))
    return 0


def collect(settings: Settings, *, full: bool) -> dict[str, Any]:
    """Everything the command shows, as JSON-ready data."""
    from hermes.routing.report import load_report

    report = load_report(settings.paths.auth, settings.config.data, settings.env.as_dict())
    data: dict[str, Any] = {"model": model_status(settings), "gateway": report.to_json()}
    data["gateway"]["lines"] = report.lines()
    if full:
        data["toolsets"] = toolsets_by_surface(settings)
        data["storage"] = storage(settings.paths.home)
        data["scheduler"] = scheduler(settings.paths.home)
        data["sandbox"] = sandbox_status(settings)
    if full or "computer_use" in (settings.requested_toolsets() or ()):
        data["computer_use"] = computer_use_status(settings)
        if settings.get("mcp_servers"):
            from hermes.tools.mcp.tool import server_report

            data["mcp_servers"] = server_report(settings)
    return data


def sandbox_status(settings: Settings) -> dict[str, Any]:
    """The OS sandbox of terminal and execute_code: the configured mode and whether it works here."""
    from hermes.errors import ConfigError
    from hermes.tools import sandbox

    try:
        policy = sandbox.load_policy(settings.config)
    except ConfigError as exc:
        found = sandbox.support()
        return {"mode": None, "active": False, "available": found.available, "backend": found.backend,
                "missing": found.missing, "error": str(exc),
                "note": "commands are refused until the sandbox settings are fixed"}
    described = dict(sandbox.describe(policy))
    from hermes.tools.backends.registry import chosen_name

    described["execution_backend"] = chosen_name(settings.config)  # terminal.backend (docs/backends.md)
    return described


def computer_use_status(settings: Settings) -> dict[str, Any]:
    """The opt-in computer_use toolset: enabled or not, and whether a display can be opened here (offline)."""
    from hermes.errors import HermesError
    from hermes.tools.computer_use.config import display_ready

    try:
        available, detail = display_ready(settings)
    except HermesError as exc:
        available, detail = False, str(exc)
    return {"enabled": "computer_use" in (settings.requested_toolsets() or ()), "available": available,
            "detail": detail}


def model_status(settings: Settings) -> dict[str, Any]:
    """What a chat started now would run: the same choice ``hermes chat`` makes, without asking the endpoint."""
    from hermes.agent.model_choice import choose_model
    from hermes.errors import ConfigError
    from hermes.routing.inference import with_portal_key

    try:
        choice = choose_model(settings, ask_endpoint=False)
    except ConfigError as exc:
        return {"configured": False, "provider": None, "base_url": None, "model": None,
                "api_key_source": None, "error": str(exc), "notes": []}
    notes = [n.removeprefix("hermes: ") for n in choice.notes]
    if choice.model is None:
        return {"configured": False, "provider": None, "base_url": None, "model": None,
                "api_key_source": None, "error": choice.error, "notes": notes}
    model = with_portal_key(choice.model, settings)
    return {"configured": True, "provider": model.provider, "base_url": model.base_url or None,
            "model": None if choice.unresolved_name else model.model, "api_key_source": model.api_key_source,
            "error": None, "describe": choice.describe(), "notes": notes}


def toolsets_by_surface(settings: Settings) -> dict[str, Any]:
    """Per surface: the toolsets, and the tools a new session would get, as ``hermes tools list`` counts them."""
    from hermes.cli.tools import load_registry, tool_counts
    from hermes.errors import ConfigError
    from hermes.tools.toolsets import Surface, resolve_toolsets

    reg = load_registry(settings)
    out: dict[str, Any] = {}
    for surface in Surface:
        try:
            resolved = resolve_toolsets(surface, settings.requested_toolsets(),
                                        disabled=settings.agent().disabled_toolsets, registered=reg.toolsets())
        except ConfigError as exc:
            out[surface.value] = {"toolsets": [], "tools": 0, "unavailable": [], "switched_off": [], "not_built": 0,
                                  "dropped": [], "error": str(exc)}
            continue
        counts = tool_counts(resolved.tools, reg, settings)
        out[surface.value] = {"toolsets": list(resolved.toolsets), "tools": len(counts["ready"]),
                              "unavailable": counts["unavailable"], "switched_off": counts["switched_off"],
                              "not_built": len(counts["not_built"]),
                              "dropped": [list(d) for d in resolved.dropped], "error": None}
    return out


def _size(path: Path) -> tuple[int, int, bool]:
    """(bytes, files, complete) of a file or folder; folders are walked up to a bounded number of entries."""
    import os
    from pathlib import Path

    if path.is_file():
        return path.stat().st_size, 1, True
    total = files = seen = 0
    stack = [path]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > _MAX_ENTRIES:
                return total, files, False
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
                    files += 1
            except OSError:
                continue
    return total, files, True


def storage(home: Path) -> dict[str, Any]:
    from hermes.config.paths import HermesPaths

    paths = HermesPaths(home)
    items = []
    for name, attr in STORAGE:
        path = getattr(paths, attr, None) or home / attr
        exists = path.exists()
        size, files, complete = _size(path) if exists else (0, 0, True)
        if name.endswith(".db"):
            for extra in ("-wal", "-shm"):
                side = path.with_name(path.name + extra)
                if side.is_file():
                    size += side.stat().st_size
        items.append({"name": name, "path": str(path), "exists": exists, "bytes": size, "files": files,
                      "complete": complete})
    return {"home": str(home), "items": items, "total_bytes": sum(i["bytes"] for i in items)}


def scheduler(home: Path) -> dict[str, Any]:
    """The cron scheduler lock (``HERMES_HOME/cron/scheduler.lock``), read without taking it."""
    import os

    lock = home / "cron" / "scheduler.lock"
    present = lock.is_file()
    pid: int | None = None
    if present:
        try:
            text = lock.read_text(encoding="utf-8").strip()
            pid = int(text) if text.isdigit() else None
        except OSError:
            pid = None
    running = False
    if pid is not None:
        try:
            os.kill(pid, 0)
            running = True
        except PermissionError:
            running = True
        except OSError:
            running = False
    return {"lock_file": str(lock), "present": present, "pid": pid, "running": running}


def _human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def render(data: dict[str, Any]) -> list[str]:
    model = data["model"]
    lines = ["◆ Model"]
    if model["configured"]:
        lines.append(f"  Endpoint          {model['describe']}")
        lines.append(f"  API key           {model['api_key_source']}")
    else:
        lines.append(f"  ✗ {model['error']}")
    lines += [f"  Note              {note}" for note in model["notes"]]
    lines += data["gateway"]["lines"]
    lines += [f"  ⚠ {w}" for w in data["gateway"]["warnings"]]
    if "toolsets" in data:
        lines.append("◆ Toolsets by surface (tools ready here; see 'hermes tools list --surface S')")
        for surface, info in data["toolsets"].items():
            text = info["error"] or f"{', '.join(info['toolsets']) or '(none)'} — {info['tools']} tools ready"
            if not info["error"] and info["unavailable"]:
                text += f", unavailable here: {', '.join(info['unavailable'])}"
            if not info["error"] and info["switched_off"]:
                text += f", switched off by settings: {', '.join(info['switched_off'])}"
            if not info["error"] and info["not_built"]:
                text += f"; {info['not_built']} not built yet"
            lines.append(f"  {surface:<11}{text}")
    if "storage" in data:
        st = data["storage"]
        lines.append(f"◆ Storage (HERMES_HOME {st['home']}, {_human(st['total_bytes'])})")
        for item in st["items"]:
            size = (_human(item["bytes"]) + ("" if item["complete"] else "+")) if item["exists"] else "—"
            lines.append(f"  {item['name']:<14}{size:>10}  {item['path']}")
    if "sandbox" in data:
        sb = data["sandbox"]
        lines.append("◆ Command sandbox (terminal, process_manage, execute_code)")
        if sb.get("error"):
            lines.append(f"  ✗ {sb['error']}")
        elif sb["active"]:
            net = "network allowed" if sb["network"] else "no network"
            lines.append(f"  ✓ {sb['mode']} via {sb['backend']} — {net}")
        else:
            lines.append(f"  ✗ not active: {sb['note']}")
        where = sb.get("execution_backend") or "local"
        if where != "local":
            lines.append(f"  commands and files are on the {where} backend (terminal.backend); this sandbox covers "
                         "local commands only — see docs/backends.md")
    if "computer_use" in data:
        cu = data["computer_use"]
        lines.append("◆ Computer use (opt-in toolset computer_use)")
        state = "enabled" if cu["enabled"] else "off — 'hermes tools enable computer_use' turns it on"
        mark = f"✓ can run on {cu['detail']}" if cu["available"] else f"✗ cannot run here: {cu['detail']}"
        lines.append(f"  {mark}; {state}")
    if "scheduler" in data:
        sc = data["scheduler"]
        if sc["running"]:
            state = f"running (pid {sc['pid']})"
        elif sc["present"] and sc["pid"] is not None:
            state = f"not running (stale lock of pid {sc['pid']})"
        else:
            state = "not running"
        lines.append("◆ Cron scheduler")
        lines.append(f"  {state} — lock file {sc['lock_file']}")
    if "mcp_servers" in data:
        from hermes.tools.mcp.tool import report_lines

        lines.append("◆ MCP servers (each session connects them in the background; 'hermes mcp test' checks now)")
        lines += report_lines(data["mcp_servers"])
    return lines
