"""Settings of the ``modal`` relay's sandbox engine: the ``[relays.modal]`` table of the gateway config.

Every key is optional; ``backend = "off"`` (the default) means the relay does not exist. The meaning of
each key is documented in ``docs/gateway/server.md`` ("``modal`` — sandboxes (local engine)"). A wrong
type or value is a :class:`~hermes.errors.ConfigError` naming ``relays.modal.<key>``.

Whether the gateway may actually run commands with these settings (``run_as`` versus the gateway's own
Unix user) is decided when the relay is built (:func:`hermes.toolgateway.sandbox.engine.resolve_identity`),
because it depends on the user the server runs as, not on the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError
from hermes.toolgateway.configread import TableReader

MODAL_BACKENDS = ("local", "off")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MIB = 1024 * 1024


@dataclass(frozen=True)
class SandboxConfig:
    """``[relays.modal]``: the backend, where sandboxes live, who runs commands, and every limit."""

    backend: str = "off"
    root: Path | None = None  # default: <state dir>/sandboxes
    run_as: str | None = None
    allow_gateway_user: bool = False
    images: tuple[str, ...] = ()  # empty: any image name is recorded and ignored
    home_aliases: tuple[str, ...] = ("/root",)
    path: str = DEFAULT_PATH
    max_sandboxes: int = 32
    max_per_user: int = 4
    max_running_execs: int = 8
    max_execs_kept: int = 256
    max_lifetime: float = 3600.0
    max_idle: float = 3600.0
    max_exec_timeout: float = 3600.0
    default_exec_timeout: float = 60.0
    exec_wait: float = 5.0
    max_output_bytes: int = MIB
    max_output_kept_per_user: int = 32 * MIB  # finished execs' output held per user (oldest dropped first)
    max_output_kept: int = 256 * MIB  # the same, all users together
    max_memory_mib: int = 8192
    max_file_mib: int = 1024
    max_processes: int = 256
    nice: int = 10
    keep_days: float = 7.0
    tombstone_seconds: float = 600.0
    reap_interval: float = 1.0  # not a config key: how often the reaper looks


def sandbox_config(table: Mapping[str, Any]) -> SandboxConfig:
    """The engine settings from the ``[relays.modal]`` table (a ConfigError names a wrong key)."""
    read = TableReader(table, "relays.modal.")
    backend = table.get("backend", "off")
    if backend not in MODAL_BACKENDS:
        raise ConfigError(f"gateway config: {read.name('backend')} must be one of {', '.join(MODAL_BACKENDS)}, "
                          f"not {backend!r}")
    allow = table.get("allow_gateway_user", False)
    if not isinstance(allow, bool):
        raise ConfigError(f"gateway config: {read.name('allow_gateway_user')} must be true or false")
    root = read.word("root")
    if root is not None and not Path(root).expanduser().is_absolute():
        raise ConfigError(f"gateway config: {read.name('root')} must be an absolute folder path")
    aliases = read.strings("home_aliases", ("/root",))
    for alias in aliases:
        if not alias.startswith("/") or alias.rstrip("/") == "" or "\x00" in alias:
            raise ConfigError(f"gateway config: {read.name('home_aliases')} must list absolute paths other than /")
    path = read.word("path") or DEFAULT_PATH
    per_user = read.integer("max_per_user", 4, minimum=1, maximum=10_000)
    total = read.integer("max_sandboxes", 32, minimum=1, maximum=100_000)
    output = read.integer("max_output_bytes", MIB, minimum=1024, maximum=64 * MIB)
    # never below one exec's output, so the exec that just finished always keeps its own
    kept_per_user = max(read.integer("max_output_kept_per_user", 32 * MIB, minimum=1024, maximum=1 << 40), output)
    kept = max(read.integer("max_output_kept", 256 * MIB, minimum=1024, maximum=1 << 40), kept_per_user)
    return SandboxConfig(
        backend=str(backend),
        root=Path(root).expanduser() if root is not None else None,
        run_as=read.word("run_as"),
        allow_gateway_user=allow,
        images=read.strings("images", ()),
        home_aliases=tuple(a.rstrip("/") for a in aliases),
        path=path,
        max_sandboxes=total,
        max_per_user=min(per_user, total),
        max_running_execs=read.integer("max_running_execs", 8, minimum=1, maximum=1000),
        max_execs_kept=read.integer("max_execs_kept", 256, minimum=16, maximum=100_000),
        max_lifetime=read.number("max_lifetime", 3600.0, minimum=10, maximum=7 * 86400),
        max_idle=read.number("max_idle", 3600.0, minimum=10, maximum=7 * 86400),
        max_exec_timeout=read.number("max_exec_timeout", 3600.0, minimum=1, maximum=7 * 86400),
        default_exec_timeout=read.number("default_exec_timeout", 60.0, minimum=1, maximum=7 * 86400),
        exec_wait=read.number("exec_wait", 5.0, minimum=0, maximum=60),
        max_output_bytes=output,
        max_output_kept_per_user=kept_per_user,
        max_output_kept=kept,
        max_memory_mib=read.integer("max_memory_mib", 8192, minimum=64, maximum=1 << 30),
        max_file_mib=read.integer("max_file_mib", 1024, minimum=1, maximum=1 << 30),
        max_processes=read.integer("max_processes", 256, minimum=8, maximum=1 << 22),
        nice=read.integer("nice", 10, minimum=0, maximum=19),
        keep_days=read.number("keep_days", 7.0, minimum=0.001, maximum=3650),
        tombstone_seconds=read.number("tombstone_seconds", 600.0, minimum=1, maximum=86400),
    )


__all__ = ["DEFAULT_PATH", "MIB", "MODAL_BACKENDS", "SandboxConfig", "sandbox_config"]
