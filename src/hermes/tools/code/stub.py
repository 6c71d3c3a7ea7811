"""Generating the ``hermes_tools`` module a script imports.

The module holds one function per tool the script may call, named like the tool, taking the tool's
parameters as arguments (required ones first, optional ones defaulting to None, which means "not
given") and documented with the tool's description and parameter list. Each function sends the
call to the parent over the run's socket (see :mod:`hermes.tools.code.rpc`), or through the run's
mailbox folder on a backend with no socket back (``address`` ``{"mailbox": folder, "wait": seconds}``,
see :mod:`hermes.tools.code.mailbox`), and returns the tool's
result as a dict (``{"error": ...}`` when the tool failed). Protocol failures (the parent is gone, a
refused call) raise ``hermes_tools.HermesToolsError``.

The module uses the standard library only and works from threads and subprocesses of the script.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from typing import Any

from hermes.tools.registry import ToolEntry

_RUNTIME = '''
import json as _json
import socket as _socket
import struct as _struct

__all__ = ["HermesToolsError", "TOOLS", *TOOLS]


class HermesToolsError(RuntimeError):
    """The call could not be made: the parent refused it or could not be reached."""


def _recv_exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise HermesToolsError("the hermes parent closed the connection")
        data += chunk
    return data


def _send(payload):
    if isinstance(_ADDRESS, str):
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    else:
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(_ADDRESS)
            sock.sendall(_struct.pack(">I", len(payload)) + payload)
            (size,) = _struct.unpack(">I", _recv_exact(sock, 4))
            return _json.loads(_recv_exact(sock, size).decode("utf-8"))
        except OSError as exc:
            raise HermesToolsError("cannot reach the hermes parent: %s" % exc) from None
    finally:
        sock.close()


def _mail(payload):
    import os
    import time
    import uuid

    box = _ADDRESS["mailbox"]
    name = uuid.uuid4().hex
    part = os.path.join(box, ".req-" + name)
    with open(part, "wb") as fh:
        fh.write(payload)
    os.rename(part, os.path.join(box, "req-" + name + ".json"))
    answer = os.path.join(box, "resp-" + name + ".json")
    deadline = time.monotonic() + float(_ADDRESS.get("wait", 600))
    delay = 0.002
    while not os.path.exists(answer):
        if time.monotonic() > deadline:
            raise HermesToolsError("no answer from the hermes parent")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)
    with open(answer, "rb") as fh:
        data = fh.read()
    os.unlink(answer)
    return _json.loads(data.decode("utf-8"))


def _call(tool, args):
    payload = _json.dumps({"token": _TOKEN, "tool": tool, "args": args}).encode("utf-8")
    if len(payload) > _MAX_MESSAGE_BYTES:
        raise HermesToolsError(
            "arguments of %s are %d bytes; the limit is %d" % (tool, len(payload), _MAX_MESSAGE_BYTES))
    reply = _mail(payload) if isinstance(_ADDRESS, dict) else _send(payload)
    if not reply.get("ok"):
        raise HermesToolsError(reply.get("error") or "the call was refused")
    return reply.get("result")


def _clean(args):
    return {k: v for k, v in args.items() if v is not None}
'''

#: module-level names of the runtime that a tool function must not replace
_RESERVED = frozenset({"HermesToolsError", "TOOLS"})

_JSON_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool",
               "array": "list", "object": "dict", "null": "None"}


def python_name(name: str) -> str:
    """A valid Python identifier for a tool or parameter name (``-`` and dots become ``_``)."""
    out = re.sub(r"\W", "_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    if keyword.iskeyword(out) or keyword.issoftkeyword(out):
        out += "_"
    return out


def _type_label(schema: dict[str, Any]) -> str:
    declared = schema.get("type")
    types = declared if isinstance(declared, list) else [declared] if declared else []
    label = " | ".join(_JSON_TYPES.get(str(t), str(t)) for t in types) or "any"
    if schema.get("enum"):
        label += " (one of " + ", ".join(repr(v) for v in schema["enum"]) + ")"
    return label


def docstring(entry: ToolEntry, odd: frozenset[str] = frozenset()) -> str:
    """The function's docstring: the tool description, then one line per parameter.

    ``odd`` names parameters that are not Python identifiers; they are passed as ``**{"name": value}``.
    """
    params = entry.schema.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or [])
    lines = [entry.description.strip() or f"Call the {entry.name} tool.", ""]
    if props:
        lines.append("Args:")
        for name, spec in props.items():
            spec = spec if isinstance(spec, dict) else {}
            need = "required" if name in required else "optional"
            desc = " ".join(str(spec.get("description", "")).split())
            shown = f"{name!r} (pass as **{{{name!r}: ...}}; " if name in odd else f"{name} ("
            lines.append(f"    {shown}{_type_label(spec)}, {need}): {desc}".rstrip())
    lines += ["", "Returns:", "    dict: the tool's JSON result ({'error': ...} when the tool failed)."]
    return "\n".join(lines)


def function_source(entry: ToolEntry) -> tuple[str, str]:
    """``(python function name, source)`` of the stub function for one tool."""
    params = entry.schema.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required = [p for p in params.get("required") or [] if p in props]
    ordered = required + [p for p in props if p not in required]
    arg_names: dict[str, str] = {}
    odd: list[str] = []
    for prop in ordered:
        py = python_name(prop)
        if py == prop and not py.startswith("_") and py not in arg_names.values():
            arg_names[prop] = py
        else:
            odd.append(prop)  # passed through ** under its real name, e.g. **{"max-results": 5}
    signature = [name if prop in required else f"{name}=None" for prop, name in arg_names.items()]
    if odd:
        signature.append("**_extra_args")
    fname = python_name(entry.name)
    if fname.startswith("_") or fname in _RESERVED:
        fname = "tool" + fname if fname.startswith("_") else fname + "_tool"
    mapping = ", ".join(f"{prop!r}: {name}" for prop, name in arg_names.items())
    body = f"_clean({{{mapping}}})"
    if odd:
        body = f"_clean({{{mapping}{', ' if mapping else ''}**_extra_args}})"
    source = (
        f"def {fname}({', '.join(signature)}):\n"
        f"    {docstring(entry, frozenset(odd))!r}\n"
        f"    return _call({entry.name!r}, {body})\n"
    )
    return fname, source


def render_module(entries: Iterable[ToolEntry], address: str | tuple[str, int] | dict[str, Any], token: str,
                  max_message_bytes: int) -> str:
    """The complete source of ``hermes_tools.py`` for one run."""
    functions: list[tuple[str, str]] = []
    for entry in entries:
        name, source = function_source(entry)
        if any(name == seen for seen, _ in functions):  # two tool names that map to one identifier
            continue
        functions.append((name, source))
    names = [name for name, _ in functions]
    listing = "\n".join(f"    {name}" for name in names) or "    (none: no tools are enabled for scripts)"
    header = (
        f'"""Tools of the hermes agent, callable from this script.\n\n'
        f"Each function returns the tool's result as a dict. Available functions:\n\n{listing}\n\n"
        'Use help(hermes_tools.<name>) for the arguments of one tool.\n"""\n'
    )
    constants = (
        f"_ADDRESS = {address!r}\n"
        f"_TOKEN = {token!r}\n"
        f"_MAX_MESSAGE_BYTES = {int(max_message_bytes)}\n"
        f"TOOLS = {names!r}\n"
    )
    return "\n".join([header, constants, _RUNTIME, *(src + "\n" for _, src in functions)])
