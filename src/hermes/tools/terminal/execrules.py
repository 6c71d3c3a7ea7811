"""Rules for programs that run other code: shells, interpreters, ``eval``/``source``, ``su``, ``ssh``,
``watch``, and the programs whose output may be fed to them (``echo``, ``printf``, ``cat``, ``base64 -d``).
"""

from __future__ import annotations

import re

from hermes.tools.terminal.calls import Call, b64decode
from hermes.tools.terminal.shelltokens import decode_escapes

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh"})
INTERP = re.compile(r"(?:python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|php[0-9.]*|lua[0-9.]*)$")
CODE_FLAGS = {"python": ("-c",), "pypy": ("-c",), "perl": ("-e", "-E"), "ruby": ("-e",),
              "node": ("-e", "--eval", "-p", "--print"), "php": ("-r",), "lua": ("-e",)}
SSH_ARG_OPTS = frozenset("bcDEeFIiJLlmOopQRSWwBP")


def shell(c: Call) -> None:
    """``bash``/``sh``/...: inspect ``-c`` code; without a script the shell reads commands from stdin."""
    args = c.args
    j, code_next, reads_stdin = 0, False, False
    while j < len(args):
        arg = args[j]
        if arg == "--":
            j += 1
            break
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            j += 2
            continue
        if arg.startswith("--"):
            j += 1
            continue
        if len(arg) > 1 and arg[0] in "-+":
            code_next = code_next or (arg[0] == "-" and "c" in arg[1:])
            reads_stdin = reads_stdin or (arg[0] == "-" and "s" in arg[1:])
            j += 1
            continue
        break
    if c.sub_download:
        c.hit("pipe_to_shell")
    if code_next:
        if j < len(args):
            c.a.text(args[j], c.depth + 1)
    elif reads_stdin or j >= len(args) or args[j] == "-":
        c.stage.reads = "shell"


def interpreter(c: Call, family: str) -> None:
    """``python``/``perl``/``ruby``/``node``/``php``/``lua``: inline code, ``-m pip``, or code from stdin."""
    args = c.args
    flags = CODE_FLAGS[family]
    j = 0
    while j < len(args):
        arg = args[j]
        if arg in flags:
            if j + 1 < len(args):
                c.a.code(args[j + 1], c.depth + 1, c.segment)
            return
        if family == "python" and arg.startswith("-c") and len(arg) > 2:
            c.a.code(arg[2:], c.depth + 1, c.segment)
            return
        if family == "python" and arg == "-m":
            if j + 1 < len(args):
                c.a.run_words(args[j + 1:], c.depth + 1, c.stage)
            return
        if arg in ("-W", "-X", "-I", "-r", "--require") and family != "php":
            j += 2
            continue
        if arg == "-" or not arg.startswith("-"):
            break
        j += 1
    if c.sub_download:
        c.hit("pipe_to_shell")
    if j >= len(args) or args[j] == "-":
        c.stage.reads = "code"


def echo_printf(c: Call) -> None:
    """``echo``/``printf`` print their arguments (escapes decoded): known text for a shell downstream."""
    if c.name == "echo":
        args = c.args
        j = 0
        while j < len(args) and re.match(r"-[neE]+$", args[j]):
            j += 1
        c.stage.output = decode_escapes(" ".join(args[j:]))
    else:
        c.stage.output = decode_escapes(" ".join(c.args))


def cat(c: Call) -> None:
    """``cat`` without files prints its here-document, or passes its stdin through."""
    if c.positionals():
        return
    if c.stdin_texts:
        c.stage.output = "\n".join(c.stdin_texts)
    else:
        c.stage.passthrough = True


def base64_decode(c: Call) -> None:
    """``base64 -d`` decodes its input; a literal here-string is decoded right away."""
    if c.has_flag("d", "--decode") or c.has_flag("D"):
        c.stage.decodes = True
        if c.stdin_texts:
            c.stage.output = b64decode("\n".join(c.stdin_texts))


def eval_source(c: Call) -> None:
    """``eval`` runs its arguments as a script; ``source``/``.`` of stdin reads commands from the pipe."""
    if c.sub_download:
        c.hit("pipe_to_shell")
    if c.name == "eval":
        c.a.text(" ".join(c.args), c.depth + 1)
    elif c.args and c.args[0] in ("/dev/stdin", "-", "/proc/self/fd/0", "/dev/fd/0"):
        c.stage.reads = "shell"


def su(c: Call) -> None:
    """``su -c CMD`` / ``runuser ... -- CMD``; a bare ``su`` reads commands from stdin."""
    for k, arg in enumerate(c.args):
        if arg in ("-c", "--command") and k + 1 < len(c.args):
            c.a.text(c.args[k + 1], c.depth + 1)
            return
        if arg.startswith("--command="):
            c.a.text(arg.split("=", 1)[1], c.depth + 1)
            return
        if arg == "--" and c.name == "runuser":
            c.a.run_words(c.args[k + 1:], c.depth + 1, c.stage)
            return
    c.stage.reads = "shell"


def ssh(c: Call) -> None:
    """``ssh host CMD`` runs CMD in a remote shell; without CMD the remote shell reads stdin."""
    args = c.args
    j = 0
    while j < len(args) and args[j].startswith("-") and args[j] != "--":
        arg = args[j]
        j += 2 if len(arg) == 2 and arg[1] in SSH_ARG_OPTS else 1
    if j < len(args) and args[j] == "--":
        j += 1
    rest = args[j + 1:]
    if rest:
        c.a.text(" ".join(rest), c.depth + 1)
    elif j < len(args):
        c.stage.reads = "shell"


def watch(c: Call) -> None:
    """``watch CMD`` runs CMD through ``sh -c`` over and over (``-x``: without a shell)."""
    pos = c.positionals(frozenset({"-n", "--interval"}))
    if c.has_flag("x", "--exec"):
        c.a.run_words(pos, c.depth + 1, c.stage)
    elif pos:
        c.a.text(" ".join(pos), c.depth + 1)
