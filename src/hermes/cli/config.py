"""``hermes config``: show, read and change ``config.yaml`` and ``.env``.

Subcommands: ``show`` (default), ``get KEY``, ``set KEY VALUE``, ``unset KEY``, ``path``,
``set-env NAME [VALUE]``, ``unset-env NAME`` and ``edit``. Keys are dotted (``model.base_url``).
Edits keep the file's comments, key order and formatting; only the changed lines differ. Secrets
belong in ``HERMES_HOME/.env`` (mode 0600), so ``set`` refuses values that look like one. Only
argparse is imported at module level (``hermes --help`` imports every command module).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.config.paths import HermesPaths
    from hermes.config.settings import Settings
    from hermes.config.yamlfile import ConfigFile

def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``config`` subcommands to ``parser``."""
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND")
    sub.add_parser("show", help="print the config file (secrets masked) and the names kept in .env")
    p = sub.add_parser("get", help="print one value, e.g. 'hermes config get model.name'")
    p.add_argument("key", help="dotted key such as model.base_url")
    p.add_argument("--reveal", action="store_true", help="print a secret-looking value unmasked")
    p = sub.add_parser("set", help="set one value; VALUE is YAML: true, 3 and [a, b] keep their types")
    p.add_argument("key", help="dotted key such as agent.max_iterations")
    p.add_argument("value", help="the value (quote it, e.g. '\"3\"', to force a string)")
    p = sub.add_parser("unset", help="remove one key")
    p.add_argument("key")
    p = sub.add_parser("path", help="print the path of config.yaml (or of .env or HERMES_HOME)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--env", action="store_true", help="print the path of .env instead")
    g.add_argument("--home", action="store_true", help="print HERMES_HOME instead")
    p = sub.add_parser("set-env", help="store a secret in HERMES_HOME/.env (mode 0600); never echoed")
    p.add_argument("name", help="variable name, e.g. OPENROUTER_API_KEY")
    p.add_argument("value", nargs="?", help="the value; omitted: read it (masked) from the terminal or stdin")
    p = sub.add_parser("unset-env", help="remove a variable from HERMES_HOME/.env")
    p.add_argument("name")
    sub.add_parser("edit", help="open config.yaml in $VISUAL or $EDITOR")


def run(args: argparse.Namespace) -> int:
    """Run the chosen ``config`` subcommand (``show`` when none is given)."""
    from hermes.config.paths import HermesPaths

    command = getattr(args, "config_command", None) or "show"
    handlers = {
        "show": _show, "get": _get, "set": _set, "unset": _unset, "path": _path,
        "set-env": _set_env, "unset-env": _unset_env, "edit": _edit,
    }
    # only get/set/unset parse config.yaml: show, path and edit must work on a broken file
    return handlers[command](HermesPaths.current(), args)


def _settings(paths: HermesPaths) -> Settings:
    from hermes.config.settings import Settings

    return Settings.load(paths)


# -- reading ------------------------------------------------------------------------------------
def _show(paths: HermesPaths, args: argparse.Namespace) -> int:
    from hermes.config.dotenv import Environment, read_dotenv

    path = paths.config
    if not path.exists():
        print(f"No config file yet; hermes uses its defaults. It would be at: {path}")
        print("Create it with 'hermes setup' or 'hermes config set KEY VALUE'.")
    else:
        print(f"# {path}")
        text = mask_secrets(path.read_text(encoding="utf-8"), Environment.load(paths.env).as_dict())
        print(text, end="" if text.endswith("\n") else "\n")
    names = sorted(read_dotenv(paths.env))
    if names:
        print(f"# {paths.env} (values hidden): {', '.join(names)}")
    return 0


def mask_secrets(text: str, env: dict[str, str]) -> str:
    """Mask values of secret-looking keys (``api_key: ...``) and known secret values in YAML text."""
    import re

    from hermes.redact import MASK, redact, secret_values

    def repl(m: re.Match[str]) -> str:
        key, value = m.group(2), m.group(4)
        if is_secret_key(key) and value.strip() and not value.lstrip().startswith("#"):
            return f"{m.group(1)}{key}{m.group(3)}{MASK}"
        return m.group(0)

    masked = re.sub(r"^([ \t]*-?[ \t]*)([A-Za-z0-9_.-]+)([ \t]*:[ \t]+)(.+)$", repl, text, flags=re.MULTILINE)
    return redact(masked, secret_values(env))


def is_secret_key(key: str) -> bool:
    """Whether a config key's name says it holds a secret (see :func:`hermes.config.edit.is_secret_key`)."""
    from hermes.config.edit import is_secret_key as secret

    return secret(key)


def format_value(value: Any) -> str:
    """A value as the user would write it in config.yaml (mappings and lists as a YAML block)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, dict | list):
        import io

        from ruamel.yaml import YAML

        y = YAML(typ="safe", pure=True)
        y.default_flow_style = False
        y.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
        buf = io.StringIO()
        y.dump(_plain(value), buf)
        return buf.getvalue().rstrip("\n")
    return str(value)


def _plain(value: Any) -> Any:
    from hermes.config.edit import plain

    return plain(value)


def _get(paths: HermesPaths, args: argparse.Namespace) -> int:
    from hermes.errors import ConfigError

    settings = _settings(paths)
    sentinel = object()
    value = settings.config.get(args.key, sentinel)
    if value is sentinel:
        raise ConfigError(f"{args.key} is not set in {settings.paths.config}")
    if is_secret_key(args.key) and not args.reveal and isinstance(value, str) and value:
        from hermes.redact import MASK

        print(f"{MASK}  (a secret; add --reveal to print it)")
        return 0
    print(format_value(value))
    return 0


def _path(paths: HermesPaths, args: argparse.Namespace) -> int:
    print(paths.env if args.env else paths.home if args.home else paths.config)
    return 0


# -- writing config.yaml ------------------------------------------------------------------------
def _set(paths: HermesPaths, args: argparse.Namespace) -> int:
    from hermes.config.edit import assign
    from hermes.config.yamlfile import parse_scalar

    settings = _settings(paths)
    key: str = args.key
    value = parse_scalar(args.value)
    assign(settings, key, value)
    kind = _KINDS.get(type(value).__name__, "")
    print(f"Set {key} = {args.value.strip()}{f' ({kind})' if kind else ''} in {settings.paths.config}")
    return 0


_KINDS = {
    "bool": "boolean", "int": "integer", "float": "number", "list": "list", "dict": "mapping",
    "CommentedSeq": "list", "CommentedMap": "mapping", "NoneType": "null",
}


def _unset(paths: HermesPaths, args: argparse.Namespace) -> int:
    settings = _settings(paths)
    key: str = args.key
    if not settings.config.has(key):
        print(f"{key} was not set in {settings.paths.config}")
        return 0
    delete_key(settings.config, key)
    print(f"Removed {key} from {settings.paths.config}")
    return 0


def delete_key(cfg: ConfigFile, key: str) -> None:
    """Delete ``key`` and save, keeping the comments around it (see
    :meth:`~hermes.config.yamlfile.ConfigFile.delete_preserving_comments`)."""
    cfg.delete_preserving_comments(key)


# -- .env and the editor ------------------------------------------------------------------------
def _set_env(paths: HermesPaths, args: argparse.Namespace) -> int:
    import os
    import sys

    from hermes.config.dotenv import set_dotenv_value
    from hermes.errors import ConfigError

    name: str = args.name
    value: str | None = args.value
    if value is None:
        if sys.stdin.isatty():
            import getpass

            value = getpass.getpass(f"Value for {name} (input hidden): ")
        else:
            value = sys.stdin.readline().rstrip("\r\n")
    if not value:
        raise ConfigError(f"no value given for {name}; to remove it use 'hermes config unset-env {name}'")
    try:
        set_dotenv_value(paths.env, name, value)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    print(f"Saved {name} in {paths.env} (mode 0600).")
    if os.environ.get(name):
        print(f"Note: {name} is also exported in your shell, and the exported value takes precedence.")
    return 0


def _unset_env(paths: HermesPaths, args: argparse.Namespace) -> int:
    from hermes.config.dotenv import read_dotenv, set_dotenv_value
    from hermes.errors import ConfigError

    name: str = args.name
    if name not in read_dotenv(paths.env):
        print(f"{name} was not set in {paths.env}")
        return 0
    try:
        set_dotenv_value(paths.env, name, None)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    print(f"Removed {name} from {paths.env}")
    return 0


def _edit(paths: HermesPaths, args: argparse.Namespace) -> int:
    import os
    import shlex
    import subprocess

    from hermes.config.yamlfile import ConfigFile
    from hermes.errors import ConfigError

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    path = paths.config
    if not editor:
        raise ConfigError(f"set $EDITOR (or $VISUAL) to choose an editor, or edit {path} directly")
    if not path.exists():
        from hermes.config.atomic import atomic_write

        atomic_write(path, "# hermes configuration — see docs/configuration.md\n")
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except OSError as exc:
        raise ConfigError(f"could not start the editor {editor!r}: {exc}") from None
    if code != 0:
        print(f"The editor exited with status {code}.")
    ConfigFile.load(path)  # raises ConfigError naming the problem when the YAML is broken
    print(f"{path} is valid YAML. Changes apply from the next session.")
    return 0
