"""The llama.cpp engines behind the ``local`` provider, one interface over two sets of bindings.

* ``llama_cpp`` (``llama-cpp-python``): compiled from source by pip (about ten minutes on two cores);
  used whenever it is installed.
* ``cyllama``: Cython bindings shipped as a prebuilt manylinux wheel (llama.cpp linked in, no
  dependencies), the default of the ``local`` extra: it installs in seconds.

Both run the same GGUF with the same sampling (penalties, grammar, top-p, temperature or greedy) and
expose what the provider needs: tokenize, stream a reply to a token list under an optional grammar
(reusing the longest prefix already in the KV cache), and get/set the KV state of sequence 0 so that
an evaluated prompt prefix can be saved and reused by the next process (:mod:`hermes.agent.local_prefix`).
Each engine module is imported only when a model is loaded.
"""

from __future__ import annotations

import codecs
import ctypes
import importlib
import importlib.util
import json
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from hermes.agent.local_templates import CHATML, Renderer, known_renderer

#: module names of the engines, in order of preference
ENGINES = ("llama_cpp", "cyllama")
PENALTY_WINDOW = 64  # tokens the repeat penalty looks back over


def installed_engines() -> list[str]:
    """The engines importable here, preferred first (nothing is imported)."""
    found = []
    for name in ENGINES:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            continue
    return found


def shared_prefix(a: list[int], b: list[int]) -> int:
    """How many tokens ``a`` and ``b`` share from their start."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


class Engine(ABC):
    """One loaded model and its context; use under :attr:`lock` (llama.cpp is not thread-safe)."""

    name = ""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n_ctx = 0
        self.template = CHATML
        self.eos_text = ""
        self.bos_text = ""
        self._grammars: dict[str, Any] = {}
        self._renderer: Renderer | None = None
        #: set (under :attr:`lock`) when the model is freed: a thread that held a reference must not use it
        self.closed = False

    # -- what each engine provides -------------------------------------------------------------------
    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """The model's tokens for ``text`` (special tokens parsed)."""

    @abstractmethod
    def stream(self, tokens: list[int], grammar: Any, max_tokens: int, temperature: float,
               cancelled: Callable[[], bool]) -> Iterator[str]:
        """Pieces of text sampled after ``tokens``; sets :attr:`finish` (``stop``/``length``) at the end."""

    @abstractmethod
    def _compile(self, gbnf: str) -> Any:
        """The engine's compiled form of a GBNF grammar."""

    @abstractmethod
    def _schema_to_gbnf(self, schema: dict[str, Any]) -> str:
        """A GBNF grammar accepting exactly the JSON documents ``schema`` allows."""

    @abstractmethod
    def cached(self) -> list[int]:
        """The tokens whose keys and values sequence 0 of the KV cache holds."""

    @abstractmethod
    def evaluate(self, tokens: list[int]) -> None:
        """Clear the cache and evaluate ``tokens`` into it (a prompt prefix, to save)."""

    @abstractmethod
    def extend(self, tokens: list[int]) -> None:
        """Make the cache hold exactly ``tokens``: keep what it shares with them, evaluate the rest."""

    @abstractmethod
    def get_state(self) -> bytes:
        """The serialised KV cache of sequence 0 (for the saved prefix)."""

    @abstractmethod
    def set_state(self, tokens: list[int], data: bytes) -> bool:
        """Load a saved cache for ``tokens``; False when the engine refuses it."""

    @abstractmethod
    def close(self) -> None:
        """Free the model and its context."""

    # -- shared ---------------------------------------------------------------------------------------
    finish = "stop"

    def count(self, text: str) -> int:
        return len(self.tokenize(text))

    def render(self, messages: list[dict[str, str]], generation_prompt: bool = True) -> str:
        """``messages`` through the model's chat template (sandboxed Jinja, as the model's authors wrote it;
        the ChatML templates of :mod:`hermes.agent.local_templates` without Jinja, to the same text)."""
        if self._renderer is None:
            self._renderer = known_renderer(self.template) or self._jinja(self.template)
        return self._renderer(messages, generation_prompt)

    def _jinja(self, template: str) -> Renderer:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        compiled = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(template)

        def render(messages: list[dict[str, str]], generation_prompt: bool) -> str:
            return str(compiled.render(messages=messages, add_generation_prompt=generation_prompt,
                                       bos_token=self.bos_text, eos_token=self.eos_text))

        return render

    def grammar(self, schema: dict[str, Any]) -> Any:
        """The compiled grammar of a JSON schema (cached); raises ValueError when it does not convert."""
        key = "schema:" + json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            self._grammars[key] = self._compile(self._schema_to_gbnf(schema))
        return self._grammars[key]

    def gbnf(self, text: str) -> Any:
        """A compiled GBNF grammar (cached)."""
        key = "gbnf:" + text
        if key not in self._grammars:
            self._grammars[key] = self._compile(text)
        return self._grammars[key]


class LlamaCppPython(Engine):
    """``llama-cpp-python``: its ``Llama`` object, whose completion keeps the longest common prefix."""

    name = "llama-cpp-python"

    def __init__(self, path: str, n_ctx: int, threads: int) -> None:
        super().__init__()
        self._mod: Any = importlib.import_module("llama_cpp")  # the heavy import; no type stubs
        self.llm: Any = self._mod.Llama(model_path=path, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                        verbose=False)
        self.n_ctx = int(self.llm.n_ctx())
        self.eos_text, self.bos_text = self._text(self.llm.token_eos()), self._text(self.llm.token_bos())
        self.template = self.llm.metadata.get("tokenizer.chat_template") or CHATML

    def _text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", errors="ignore")

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def _compile(self, gbnf: str) -> Any:
        return self._mod.LlamaGrammar.from_string(gbnf, verbose=False)

    def _schema_to_gbnf(self, schema: dict[str, Any]) -> str:
        converter: Any = importlib.import_module("llama_cpp.llama_grammar")
        return str(converter.json_schema_to_gbnf(json.dumps(schema)))

    def stream(self, tokens: list[int], grammar: Any, max_tokens: int, temperature: float,
               cancelled: Callable[[], bool]) -> Iterator[str]:
        self.finish = "stop"
        chunks = self.llm.create_completion(
            tokens, max_tokens=max(1, max_tokens), temperature=temperature, top_p=0.9, repeat_penalty=1.1,
            stop=[self.eos_text] if self.eos_text else [], stream=True, grammar=grammar,
        )
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                if choice.get("text"):
                    yield str(choice["text"])
                if choice.get("finish_reason"):
                    self.finish = str(choice["finish_reason"])
        finally:
            chunks.close()

    def cached(self) -> list[int]:
        return [int(t) for t in self.llm.input_ids[: self.llm.n_tokens]]

    def evaluate(self, tokens: list[int]) -> None:
        self.llm.reset()
        self.llm.eval(tokens)

    def extend(self, tokens: list[int]) -> None:
        common = shared_prefix(self.cached(), tokens)
        self.llm.n_tokens = common  # eval drops the cache beyond n_tokens before it evaluates
        if common < len(tokens):
            self.llm.eval(tokens[common:])

    def get_state(self) -> bytes:
        ctx = self.llm._ctx.ctx
        size = int(self._mod.llama_state_seq_get_size(ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        written = int(self._mod.llama_state_seq_get_data(ctx, buf, size, 0))
        return bytes(buf)[:written]

    def set_state(self, tokens: list[int], data: bytes) -> bool:
        self.llm.reset()
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if int(self._mod.llama_state_seq_set_data(self.llm._ctx.ctx, buf, len(data), 0)) == 0:
            return False
        self.llm.input_ids[: len(tokens)] = tokens
        self.llm.n_tokens = len(tokens)
        return True

    def close(self) -> None:
        self.llm.close()


def _cyllama_bindings() -> Any:
    """``cyllama.llama.llama_cpp`` without running ``cyllama/__init__.py``.

    The package's ``__init__`` imports its high-level API, batching, memory helpers and a vendored Jinja
    (about 0.1 s on a slow machine) that hermes never uses: only the extension module is needed. A hollow
    package stands in while the extension loads and is taken out of ``sys.modules`` right after, so a
    later ``import cyllama`` anywhere runs the real ``__init__`` as usual.
    """
    name = "cyllama.llama.llama_cpp"
    if "cyllama" in sys.modules or name in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("cyllama")
    if spec is None or spec.loader is None:
        raise ImportError("cyllama is not installed")
    sys.modules["cyllama"] = importlib.util.module_from_spec(spec)
    try:
        return importlib.import_module(name)
    finally:
        del sys.modules["cyllama"]


class Cyllama(Engine):
    """``cyllama``: the llama.cpp C API through Cython; the decode/sample loop and prefix reuse are here."""

    name = "cyllama"

    def __init__(self, path: str, n_ctx: int, threads: int) -> None:
        super().__init__()
        cy: Any = _cyllama_bindings()
        cy.disable_logging()
        self._cy = cy
        model_params = cy.LlamaModelParams()
        model_params.n_gpu_layers = 0
        self.model: Any = cy.LlamaModel(path, model_params)
        ctx_params = cy.LlamaContextParams()
        ctx_params.n_ctx, ctx_params.n_batch = n_ctx, 512
        ctx_params.n_threads = ctx_params.n_threads_batch = threads
        self.ctx: Any = cy.LlamaContext(self.model, ctx_params)
        self.vocab: Any = self.model.get_vocab()
        self.n_ctx = int(self.ctx.n_ctx)
        self._tokens: list[int] = []  # what sequence 0 of the KV cache holds
        self.eos_text = self._text(self.vocab.token_eos())
        self.bos_text = self._text(self.vocab.token_bos())
        try:
            self.template = str(self.model.meta_val_str("tokenizer.chat_template")) or CHATML
        except ValueError:
            self.template = CHATML

    def _text(self, token: int) -> str:
        return str(self.vocab.token_to_piece(token, special=True)) if token >= 0 else ""

    def tokenize(self, text: str) -> list[int]:
        return list(self.vocab.tokenize(text, add_special=False, parse_special=True))

    def _compile(self, gbnf: str) -> Any:
        return gbnf  # a grammar sampler is built for each reply (it keeps its parse state)

    def _schema_to_gbnf(self, schema: dict[str, Any]) -> str:
        return str(self._cy.json_schema_to_grammar(json.dumps(schema)))

    def _decode(self, tokens: list[int]) -> None:
        for start in range(0, len(tokens), 512):
            chunk = tokens[start:start + 512]
            self.ctx.decode(self._cy.llama_batch_get_one(chunk, len(self._tokens)))
            self._tokens.extend(chunk)

    def _keep(self, tokens: list[int]) -> None:
        """Keep the longest cached prefix of ``tokens`` (at least one token left to evaluate), drop the rest."""
        self._truncate(shared_prefix(self._tokens, tokens[:-1]))

    def _truncate(self, common: int) -> None:
        """Drop the cache after its first ``common`` tokens (all of it when llama.cpp cannot)."""
        if common < len(self._tokens):
            if not self.ctx.memory_seq_rm(0, common, -1):
                self.ctx.kv_cache_clear()
                common = 0
            del self._tokens[common:]

    def stream(self, tokens: list[int], grammar: Any, max_tokens: int, temperature: float,
               cancelled: Callable[[], bool]) -> Iterator[str]:
        self.finish = "length"
        self._keep(tokens)
        self._decode(tokens[len(self._tokens):])
        sampler = self._sampler(grammar, temperature)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        try:
            for _ in range(max(1, max_tokens)):
                if cancelled():
                    return
                token = int(sampler.sample(self.ctx, -1))
                if self.vocab.is_eog(token):
                    self.finish = "stop"
                    return
                piece = decoder.decode(self.vocab.token_to_piece(token, special=False).encode("utf-8"))
                self._decode([token])
                if piece:
                    yield piece
                if len(self._tokens) >= self.n_ctx:
                    return
        finally:
            sampler.close()
            if self.finish != "stop":  # cancelled or cut off: the next call starts from a clean cache
                self.ctx.kv_cache_clear()
                self._tokens = []

    def _sampler(self, grammar: str | None, temperature: float) -> Any:
        params = self._cy.LlamaSamplerChainParams()
        sampler = self._cy.LlamaSampler(params)
        sampler.add_penalties(PENALTY_WINDOW, 1.1, 0.0, 0.0)
        if grammar is not None:
            sampler.add_grammar(self.vocab, grammar, "root")
        if temperature <= 0:
            sampler.add_greedy()
        else:
            sampler.add_top_p(0.9, 1)
            sampler.add_temp(temperature)
            sampler.add_dist(0xFFFFFFFF)
        return sampler

    def cached(self) -> list[int]:
        return list(self._tokens)

    def evaluate(self, tokens: list[int]) -> None:
        self.ctx.kv_cache_clear()
        self._tokens = []
        self._decode(tokens)

    def extend(self, tokens: list[int]) -> None:
        self._truncate(shared_prefix(self._tokens, tokens))
        self._decode(tokens[len(self._tokens):])

    def get_state(self) -> bytes:
        return bytes(self.ctx.get_state_seq_data(0))

    def set_state(self, tokens: list[int], data: bytes) -> bool:
        self.ctx.kv_cache_clear()
        self._tokens = []
        try:
            self.ctx.set_state_seq_data(data, 0)
        except (ValueError, RuntimeError):
            return False
        if int(self.ctx.memory_seq_pos_max(0)) != len(tokens) - 1:
            self.ctx.kv_cache_clear()
            return False
        self._tokens = list(tokens)
        return True

    def close(self) -> None:
        self.ctx.close()
        self.model.close()


def open_engine(path: str, n_ctx: int, threads: int, engine: str | None = None) -> Engine:
    """Load ``path`` with ``engine`` (a module name of :data:`ENGINES`), or the first one installed."""
    name = engine or next(iter(installed_engines()), None)
    if name == "llama_cpp":
        return LlamaCppPython(path, n_ctx, threads)
    if name == "cyllama":
        return Cyllama(path, n_ctx, threads)
    raise ValueError(f"no llama.cpp engine {name!r} is installed (one of: {', '.join(ENGINES)})")
