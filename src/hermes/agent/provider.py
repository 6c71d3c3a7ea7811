"""Model providers: one interface, and its implementation for OpenAI-compatible endpoints.

:class:`ChatProvider` is what the loop needs: send messages and tool definitions, stream text back,
get the finished reply with its tool calls. :class:`OpenAICompatProvider` speaks chat completions
through the official ``openai`` client (imported on first use) to OpenRouter, OpenAI, a Nous-style
portal, vLLM, llama.cpp, Ollama or any other compatible server.

Transient failures (429, 5xx, timeouts, refused connections) are retried with exponential backoff
that honours ``Retry-After``; the client's own retries are switched off so there is one policy.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from hermes.config.settings import ModelSettings
from hermes.errors import ModelError, ModelUnreachable, TurnInterrupted
from hermes.net.retry_timing import backoff_delay, parse_retry_after

MAX_BACKOFF = 30.0
MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str

    def as_message_part(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Completion:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning: str | None = None

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [c.as_message_part() for c in self.tool_calls]
        return msg


@dataclass
class CallOptions:
    """Per-call knobs and hooks."""

    on_text: Callable[[str], None] | None = None
    on_reasoning: Callable[[str], None] | None = None
    on_retry: Callable[[int, float, str], None] | None = None
    cancel: threading.Event | None = None
    tool_choice: str | dict[str, Any] | None = None
    #: the text answer must be one of these, quoted (the local model enforces it with a grammar; an HTTP
    #: endpoint is not told): ``hermes chat --demo`` answers by quoting a line of the tool's result
    answer_choices: tuple[str, ...] | None = None


class ChatProvider(Protocol):
    name: str
    model: str

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion: ...


class _Transient(Exception):
    def __init__(self, reason: str, retry_after: float | None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class OpenAICompatProvider:
    """Chat completions against an OpenAI-compatible endpoint."""

    def __init__(self, settings: ModelSettings, *, stream: bool = True, base_delay: float = 1.0) -> None:
        self.settings = settings
        self.name = settings.provider
        self.model = settings.model
        self.stream = stream
        self.base_delay = base_delay
        self._client: Any = None
        self._client_key: str | None = None
        self._retired: list[Any] = []

    def _get_client(self) -> Any:
        key = self.settings.current_key()
        if self._client is None or key != self._client_key:
            import openai

            if self._client is not None:  # a renewed key; requests in flight on the old client may finish
                self._retired.append(self._client)
            self._client = openai.OpenAI(
                base_url=self.settings.base_url,
                api_key=key or "no-key-needed",
                timeout=self.settings.timeout,
                max_retries=0,
            )
            self._client_key = key
        return self._client

    def close(self) -> None:
        """Close the HTTP connections of the client (a later call opens new ones)."""
        for client in (*self._retired, self._client):
            if client is not None:
                client.close()
        self._client, self._retired = None, []

    # -- public -------------------------------------------------------------------------------------
    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, options: CallOptions
    ) -> Completion:
        attempt = 0
        while True:
            if options.cancel is not None and options.cancel.is_set():
                raise TurnInterrupted("interrupted")
            try:
                return _interruptible(lambda: self._once(messages, tools, options), options.cancel)
            except _Transient as exc:
                attempt += 1
                if attempt > self.settings.max_retries:
                    raise self._give_up(exc) from None
                delay = self._delay(attempt, exc.retry_after)
                if options.on_retry is not None:
                    options.on_retry(attempt, delay, str(exc))
                if options.cancel is not None:
                    if options.cancel.wait(delay):
                        raise TurnInterrupted("interrupted") from None
                else:
                    time.sleep(delay)

    # -- internals ----------------------------------------------------------------------------------
    def _delay(self, attempt: int, retry_after: float | None) -> float:
        return backoff_delay(attempt, retry_after, base_delay=self.base_delay, max_delay=MAX_BACKOFF,
                             max_retry_after=MAX_RETRY_AFTER)

    def _give_up(self, exc: _Transient) -> ModelError:
        where = f"{self.settings.base_url} (model.base_url / --base-url / OPENAI_BASE_URL)"
        if str(exc).startswith("connection"):
            return ModelUnreachable(f"cannot reach the model endpoint at {where}: {exc}")
        return ModelError(f"the model endpoint at {self.settings.base_url} kept failing: {exc}")

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 options: CallOptions) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
            if options.tool_choice is not None:
                kwargs["tool_choice"] = options.tool_choice
        if self.settings.temperature is not None:
            kwargs["temperature"] = self.settings.temperature
        return kwargs

    def _once(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
              options: CallOptions) -> Completion:
        import openai

        client = self._get_client()
        kwargs = self._request(messages, tools, options)
        try:
            if self.stream:
                return self._streamed(client.chat.completions.create(stream=True, **kwargs), options)
            return self._whole(client.chat.completions.create(**kwargs))
        except openai.APIStatusError as exc:
            status = exc.status_code
            message = _error_message(exc)
            if status == 429 or status >= 500:
                raise _Transient(f"HTTP {status}: {message}", _retry_after(exc)) from None
            if status in (401, 403):
                raise ModelError(
                    f"the model endpoint refused the API key (HTTP {status}: {message}); the key comes from "
                    f"{self.settings.api_key_source}. Set it in .env (hermes config set-env) or run 'hermes setup'."
                ) from None
            if status == 404:
                raise ModelError(
                    f"HTTP 404 from {self.settings.base_url}: {message}. Check model.name "
                    f"({self.model!r}) and model.base_url (it usually ends in /v1)."
                ) from None
            raise ModelError(f"the model endpoint answered HTTP {status}: {message}") from None
        except openai.APITimeoutError:
            raise _Transient(f"timeout after {self.settings.timeout:.0f} s", None) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if _is_permanent(cause):  # retrying a URL that cannot work only delays the error
                raise ModelError(
                    f"the model base URL {self.settings.base_url!r} cannot be used ({cause}); it must be an "
                    "http:// or https:// URL with a host, e.g. https://openrouter.ai/api/v1 "
                    "(model.base_url / --base-url / OPENAI_BASE_URL)"
                ) from None
            raise _Transient(f"connection failed: {cause}", None) from None

    def _whole(self, resp: Any) -> Completion:
        if not getattr(resp, "choices", None):
            raise ModelError("the model endpoint returned no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = [
            ToolCall(c.id or f"call_{i}", c.function.name, c.function.arguments or "")
            for i, c in enumerate(msg.tool_calls or [])
        ]
        usage = getattr(resp, "usage", None)
        return Completion(
            content=msg.content,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            reasoning=getattr(msg, "reasoning_content", None) or getattr(msg, "reasoning", None),
        )

    def _streamed(self, stream: Any, options: CallOptions) -> Completion:
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage = (0, 0)
        try:
            for chunk in stream:
                if options.cancel is not None and options.cancel.is_set():
                    raise TurnInterrupted("interrupted")
                if getattr(chunk, "usage", None):
                    usage = (chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                if choice.finish_reason:
                    finish = choice.finish_reason
                if delta is None:
                    continue
                piece = getattr(delta, "content", None)
                if piece:
                    text.append(piece)
                    if options.on_text is not None:
                        options.on_text(piece)
                think = getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None)
                if isinstance(think, str) and think:
                    reasoning.append(think)
                    if options.on_reasoning is not None:
                        options.on_reasoning(think)
                for tc in getattr(delta, "tool_calls", None) or []:
                    slot = calls.setdefault(tc.index if tc.index is not None else len(calls),
                                            {"id": None, "name": "", "arguments": []})
                    if tc.id:
                        slot["id"] = tc.id
                    fn = tc.function
                    if fn is not None:
                        if fn.name:
                            slot["name"] += fn.name
                        if fn.arguments:
                            slot["arguments"].append(fn.arguments)
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        tool_calls = [
            ToolCall(slot["id"] or f"call_{idx}", slot["name"], "".join(slot["arguments"]))
            for idx, slot in sorted(calls.items())
        ]
        return Completion(
            content="".join(text) if text else None,
            tool_calls=tool_calls,
            finish_reason=finish,
            prompt_tokens=usage[0],
            completion_tokens=usage[1],
            reasoning="".join(reasoning) or None,
        )


def _interruptible(fn: Callable[[], Completion], cancel: threading.Event | None) -> Completion:
    """Run one HTTP exchange in a helper thread so an interrupt does not wait for the server.

    An abandoned exchange notices the cancel flag at its next chunk and closes its stream; a server
    that sends nothing is left to the client's timeout, in the background.
    """
    if cancel is None:
        return fn()
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="hermes-model-call", daemon=True).start()
    while not done.wait(0.05):
        if cancel.is_set():
            raise TurnInterrupted("interrupted")
    if "error" in box:
        raise box["error"]
    result: Completion = box["value"]
    return result


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    try:
        return json.dumps(body) if body else str(exc)
    except TypeError:
        return str(exc)


_URL_ERRORS = frozenset({"UnsupportedProtocol", "InvalidURL"})


def _is_permanent(cause: BaseException) -> bool:
    """Whether a connection failure comes from the URL itself (no scheme, an unsupported one, malformed).

    Told by the class names of the HTTP library's errors, as the OpenAI client may bring its own copy of it.
    """
    return any(cls.__name__ in _URL_ERRORS for cls in type(cause).__mro__)


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    return parse_retry_after(headers.get("retry-after"))
