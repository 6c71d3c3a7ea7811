"""The conversation loop.

One :class:`Agent` holds one conversation: its frozen tool list (docs/requirements.md#ts-9), its
message history (persisted as it grows) and its :class:`~hermes.tools.session.ToolSession` — the tools'
per-session state and the one dispatch path every tool call takes. :meth:`Agent.run_turn`
takes a user message and loops: ask the model, run the tool calls it asked for (independent calls in
parallel on a bounded pool, interactive ones alone), feed the results back in order, until the model
answers without tools or the iteration budget is spent — then one last call without tools asks for a
summary answer. Ctrl-C (KeyboardInterrupt) or :meth:`Agent.interrupt` stops the turn and keeps the
session consistent: every tool call in the history gets a result.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes.agent.events import (
    AssistantMessage,
    EventSink,
    Notice,
    ReasoningDelta,
    Retrying,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    Usage,
)
from hermes.agent.provider import CallOptions, ChatProvider, Completion, ToolCall
from hermes.errors import TurnInterrupted
from hermes.tools.context import MODEL_NOTES_KEY, SESSION_END_KEY
from hermes.tools.registry import ToolRegistry
from hermes.tools.results import ToolResult, error_json
from hermes.tools.session import SessionContext, ToolSession
from hermes.tools.toolsets import Surface

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.store.sessions import SessionStore

BUDGET_NOTE = (
    "[hermes] The tool-call budget for this turn ({n} iterations) is used up. Do not call any more tools. "
    "Answer now with what you have found so far, and say what is left undone."
)


#: opens the user-role message that carries a tool's screenshots to the model (computer_use)
#: how the notes tools ask to tell the model between steps begin (resource changes an MCP server announced)
NEWS_NOTE = "[hermes] Came in while you worked (not from the person):"
IMAGES_NOTE = "[hermes] The image(s) the tool call(s) above returned, for you only:"
#: what an image becomes in the stored session and, once newer ones came, in the live history
IMAGE_LEFT_OUT = "[hermes: an image from a tool, not kept]"
#: images from tools kept in the live history (older ones are replaced by IMAGE_LEFT_OUT)
KEEP_TOOL_IMAGES = 3


def from_the_person(message: dict[str, Any]) -> bool:
    """Whether ``message`` is one the person wrote (not a user-role note the loop added, like the budget note)."""
    content = message.get("content")
    if isinstance(content, list):
        first = content[0] if content else None
        return message.get("role") == "user" and not (
            isinstance(first, dict) and str(first.get("text", "")).startswith(IMAGES_NOTE))
    return message.get("role") == "user" and not (
        isinstance(content, str) and content.startswith((BUDGET_NOTE.split("{n}", 1)[0], NEWS_NOTE)))


def _without_images(message: dict[str, Any]) -> dict[str, Any]:
    parts = [p if p.get("type") != "image_url" else {"type": "text", "text": IMAGE_LEFT_OUT}
             for p in message["content"]]
    return {**message, "content": parts}


INTERRUPTED_RESULT = "interrupted by the user before this tool finished"
#: ends the stored text of an answer the user interrupted while it streamed (so a resumed session knows)
INTERRUPTED_ANSWER_MARK = "[interrupted by the user]"
#: seconds closing a session waits for its model to finish getting ready (a first prefix: a few seconds)
PREPARE_WAIT = 60.0


@dataclass
class TurnResult:
    final: str
    iterations: int
    reason: str
    tool_calls: int = 0


@dataclass
class AgentConfig:
    max_iterations: int = 30
    max_parallel_tools: int = 4


@dataclass
class Agent:
    provider: ChatProvider
    registry: ToolRegistry
    sink: EventSink
    surface: Surface
    tools: tuple[str, ...]
    messages: list[dict[str, Any]]
    config: AgentConfig = field(default_factory=AgentConfig)
    store: SessionStore | None = None
    session_id: str | None = None
    #: per-session state of tools, keyed by a name each tool family chooses (shared with :attr:`session`)
    state: dict[str, Any] = field(default_factory=dict)
    tool_choice: str | dict[str, Any] | None = None
    settings: Settings | None = None
    #: 0 for a session a person started; children of delegate_task are one deeper
    depth: int = 0

    def __post_init__(self) -> None:
        self._cancel = threading.Event()
        #: the text of the model reply streaming now (kept when the user interrupts it)
        self._streaming: list[str] = []
        #: images the running reply's tool calls returned, by call id (shown to the model after the results)
        self._tool_images: dict[str, list[str]] = {}
        self._preparing: threading.Thread | None = None
        self.session = ToolSession(self.registry, self.tools, self._context(), state=self.state)
        self._definitions = self.session.definitions()

    def _context(self) -> SessionContext:
        """What this agent's tools see of it, and the capabilities it lends them."""
        fields: dict[str, Any] = {
            "surface": self.surface, "task_id": self.task_id, "sink": self.sink, "store": self.store,
            "session_id": self.session_id, "delegate": self._delegate, "cron_runner": _cron_runner,
            "sample": self._sample,
            "cancelled": self._cancel.is_set,
        }
        if self.settings is None:
            return SessionContext(**fields)
        return SessionContext.from_settings(self.settings, **fields)

    def _sample(self, messages: list[dict[str, Any]], max_tokens: int) -> tuple[str, str]:
        """One answer of this session's model to ``messages``, outside the conversation (MCP sampling; the
        text is cut at about ``max_tokens`` tokens, four characters each, as endpoints are not told the cap)."""
        from hermes.agent.provider import CallOptions

        completion = self.provider.complete(messages, None, CallOptions(cancel=self._cancel))
        return (completion.content or "")[: max_tokens * 4], self.provider.model

    def _delegate(self, args: dict[str, Any]) -> str:
        from hermes.agent.delegation import run_delegation

        return run_delegation(args, self)

    # -- public -------------------------------------------------------------------------------------
    @property
    def task_id(self) -> str:
        return self.session_id or f"task-{id(self):x}"

    @property
    def tool_definitions(self) -> list[dict[str, Any]]:
        return self._definitions

    def prepare(self) -> threading.Thread | None:
        """Let the provider get ready for this session's next call in the background, when it can (the
        embedded model loads and evaluates or loads its saved prompt prefix while the person types). The
        call waits for what is still running; a failure here is only logged (the call reports it)."""
        prepare = getattr(self.provider, "prepare", None)
        if prepare is None or not self.messages:
            return None

        def run() -> None:
            try:
                prepare(list(self.messages), self._definitions or None, self.tool_choice)
            except Exception:
                logger.warning("getting the model ready in the background failed", exc_info=True)

        thread = threading.Thread(target=run, name="hermes-model-prepare", daemon=True)
        thread.start()
        self._preparing = thread
        return thread

    def interrupt(self) -> None:
        """Stop the running turn as soon as possible (thread-safe)."""
        self._cancel.set()

    @property
    def interrupted(self) -> bool:
        return self._cancel.is_set()

    def close(self) -> None:
        """End the session: run what tools asked to run at its end (e.g. stop its background processes).
        A model still getting ready (:meth:`prepare`) is waited for, so that nothing frees it under that."""
        if self._preparing is not None:
            self._preparing.join(PREPARE_WAIT)
        callbacks = self.state.pop(SESSION_END_KEY, {})
        for key, callback in callbacks.items():
            try:
                callback()
            except Exception:
                logger.warning("session-end cleanup %s failed", key, exc_info=True)

    def run_turn(self, user_text: str) -> TurnResult:
        self._cancel.clear()
        self.append({"role": "user", "content": user_text})
        iterations = 0
        calls_made = 0
        try:
            while iterations < self.config.max_iterations:
                iterations += 1
                self._tell_news()
                completion = self._complete(self._definitions or None)
                self.append(completion.as_message())
                if not completion.tool_calls:
                    return self._finish(completion.content or "", iterations, "answered", calls_made)
                calls_made += len(completion.tool_calls)
                self._run_tools(completion.tool_calls)
            self.append({"role": "user", "content": BUDGET_NOTE.format(n=self.config.max_iterations)})
            completion = self._complete(None)
            self.append(completion.as_message())
            return self._finish(completion.content or "", iterations, "budget_exhausted", calls_made)
        except (KeyboardInterrupt, TurnInterrupted):
            self._cancel.set()
            self._keep_partial_answer()
            self.sink.emit(Notice("warning", "interrupted; the session is kept"))
            return self._finish("", iterations, "interrupted", calls_made)

    def _tell_news(self) -> None:
        """One user-role note with what the session's tools asked to tell the model before this step."""
        lines: list[str] = []
        for key, notes in list((self.state.get(MODEL_NOTES_KEY) or {}).items()):
            try:
                lines += [str(line) for line in notes()]
            except Exception:
                logger.warning("notes for the model from %s failed", key, exc_info=True)
        if lines:
            self.append({"role": "user", "content": NEWS_NOTE + "\n\n" + "\n\n".join(lines)})

    # -- model ----------------------------------------------------------------------------------------
    def _on_text(self, piece: str) -> None:
        if self._cancel.is_set():  # an abandoned stream's last chunk: neither shown nor kept
            return
        self._streaming.append(piece)
        self.sink.emit(TextDelta(piece))

    def _keep_partial_answer(self) -> None:
        """Store the text an interrupted reply had streamed, marked as interrupted (nothing if none)."""
        partial, self._streaming = "".join(self._streaming), []
        if partial.strip():
            self.append({"role": "assistant", "content": f"{partial.rstrip()}\n\n{INTERRUPTED_ANSWER_MARK}"})

    def _complete(self, tools: list[dict[str, Any]] | None) -> Completion:
        self._streaming = []
        options = CallOptions(
            on_text=self._on_text,
            on_reasoning=lambda t: self.sink.emit(ReasoningDelta(t)),
            on_retry=lambda n, d, r: self.sink.emit(Retrying(n, d, r)),
            cancel=self._cancel,
            tool_choice=self.tool_choice if tools else None,
        )
        completion = self.provider.complete(self.messages, tools, options)
        self._streaming = []
        if completion.prompt_tokens or completion.completion_tokens:
            self.sink.emit(Usage(completion.prompt_tokens, completion.completion_tokens))
        self.sink.emit(AssistantMessage(completion.content, tuple(c.name for c in completion.tool_calls)))
        return completion

    # -- tools ----------------------------------------------------------------------------------------
    def _run_tools(self, calls: list[ToolCall]) -> None:
        """Run the calls of one model reply; results are appended in the order of the calls."""
        results: dict[str, str] = {}
        self._tool_images = {}
        try:
            for group in self._groups(calls):
                if self._cancel.is_set():
                    raise TurnInterrupted("interrupted")
                if len(group) == 1:
                    results[group[0].id] = self._run_one(group[0])
                else:
                    results.update(self._run_parallel(group))
        finally:
            for call in calls:
                self.append({
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": results.get(call.id, error_json(INTERRUPTED_RESULT)),
                })
            images = [url for call in calls for url in self._tool_images.get(call.id, ())]
            if images:
                self._append_images(images)

    def _append_images(self, images: list[str]) -> None:
        """Show the model the images tools returned: one user-role message after the results. The store
        keeps a placeholder instead (screenshots are for the model only), and the live history keeps the
        latest :data:`KEEP_TOOL_IMAGES`."""
        parts: list[dict[str, Any]] = [{"type": "text", "text": IMAGES_NOTE}]
        parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
        message = {"role": "user", "content": parts}
        seen = len(images)
        for older in reversed(self.messages):
            content = older.get("content")
            if older.get("role") != "user" or not isinstance(content, list) or from_the_person(older):
                continue
            kept: list[Any] = []
            for part in reversed(content):
                if isinstance(part, dict) and part.get("type") == "image_url":
                    seen += 1
                    if seen > KEEP_TOOL_IMAGES:
                        part = {"type": "text", "text": IMAGE_LEFT_OUT}
                kept.append(part)
            older["content"] = kept[::-1]
        self.messages.append(message)
        if self.store is not None and self.session_id is not None:
            self.store.append_message(self.session_id, _without_images(message))

    def _groups(self, calls: list[ToolCall]) -> list[list[ToolCall]]:
        """Consecutive independent calls form one parallel group; interactive calls run alone."""
        groups: list[list[ToolCall]] = []
        current: list[ToolCall] = []
        for call in calls:
            entry = self.registry.get(call.name)
            if entry is not None and entry.runs_alone:
                if current:
                    groups.append(current)
                    current = []
                groups.append([call])
            else:
                current.append(call)
        if current:
            groups.append(current)
        return groups

    def _run_parallel(self, group: list[ToolCall]) -> dict[str, str]:
        out: dict[str, str] = {}
        pool = ThreadPoolExecutor(max_workers=min(self.config.max_parallel_tools, len(group)),
                                  thread_name_prefix="hermes-tool")
        try:
            futures: dict[Future[str], ToolCall] = {pool.submit(self._run_one, c): c for c in group}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
                for fut in done:
                    out[futures[fut].id] = fut.result()
                if self._cancel.is_set():
                    raise TurnInterrupted("interrupted")
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return out

    def _run_one(self, call: ToolCall) -> str:
        self.sink.emit(ToolStarted(call.id, call.name, call.arguments))
        started = time.perf_counter()
        result: ToolResult = self.session.dispatch(call.name, call.arguments)
        images = result.metadata.get("images")
        if images:
            self._tool_images[call.id] = [str(url) for url in images]
        self.sink.emit(ToolFinished(call.id, call.name, result.text, result.is_error,
                                    time.perf_counter() - started))
        for notice in result.metadata.get("notices", ()):
            self.sink.emit(Notice("info", str(notice)))  # for the person, whatever the model says of it
        return result.text

    # -- history --------------------------------------------------------------------------------------
    def append(self, message: dict[str, Any]) -> None:
        """Add a message to the history (and to the store, when the session is stored)."""
        self.messages.append(message)
        if self.store is not None and self.session_id is not None:
            self.store.append_message(self.session_id, message)

    def truncate(self, keep: int) -> list[dict[str, Any]]:
        """Drop every message after the first ``keep`` (here and in the store); returns the dropped ones."""
        keep = max(0, keep)
        dropped = self.messages[keep:]
        del self.messages[keep:]
        if dropped and self.store is not None and self.session_id is not None:
            self.store.truncate_messages(self.session_id, keep)
        return dropped

    def _finish(self, final: str, iterations: int, reason: str, calls: int) -> TurnResult:
        self.sink.emit(TurnFinished(final, iterations, reason))  # type: ignore[arg-type]
        return TurnResult(final, iterations, reason, calls)


def _cron_runner(settings: Settings) -> Any:
    """The job runner the cron tool's ``action='run'`` uses inside an agent session."""
    from hermes.agent.cron import AgentRunner

    return AgentRunner(settings)
