"""The Textual application of ``hermes tui``: a full-screen client of the app server (docs/tui.md).

Layout: a status line (server, model, session), the sessions list on the left (Enter resumes one), the
conversation (answers streaming as they come, each tool call a collapsible line with its result), and
the composer. A clarify request replaces the composer with the card of T-CLAR (TUI behaviour, the
:class:`~hermes.surfaces.clarify_card.ClarifyCard` the chat's prompt also uses); an approval asks
``[o]nce / [s]ession / [a]lways / [d]eny``. Keys: Enter sends, Esc interrupts a running turn (or
cancels a card), Ctrl+N starts a new session, Ctrl+Q quits.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Collapsible, Input, OptionList, Static
from textual.widgets.option_list import Option

from hermes.surfaces.clarify_card import ClarifyCard
from hermes.surfaces.tui.client import AppClient, RpcFailure
from hermes.tools.clarify.core import ClarifySession, Question

STYLES = {"bold": "bold", "dim": "grey50", "current": "bold", "answered": "green", "hl": "reverse", "": ""}
APPROVAL_KEYS = {"o": "once", "s": "session", "a": "always", "d": "deny"}


def card_text(card: ClarifyCard) -> Text:
    out = Text()
    for style, piece in card.lines():
        out.append(piece, style=STYLES.get(style, ""))
    return out


class ClarifyPanel(Vertical):
    """The clarify card: the status list and a one-line field; keys as in the module docstring."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False, priority=True),
        Binding("down", "move(1)", show=False, priority=True),
        Binding("space", "tick", show=False, priority=True),
        Binding("tab", "go(1)", show=False, priority=True),
        Binding("shift+tab", "go(-1)", show=False, priority=True),
        Binding("escape", "cancel", show=False, priority=True),
    ]

    def __init__(self, tui: HermesTui, request: dict[str, Any]) -> None:
        super().__init__(id="clarify")
        self.tui, self.request = tui, request
        questions = [Question.from_payload(q) for q in request.get("questions", [])]
        self.card = ClarifyCard(ClarifySession(questions))

    def compose(self) -> ComposeResult:
        yield Static(card_text(self.card), id="clarify-card")
        yield Input(placeholder="type an answer, or choose with ↑↓", id="clarify-input")

    def on_mount(self) -> None:
        self.query_one("#clarify-input", Input).focus()

    @property
    def field(self) -> Input:
        return self.query_one("#clarify-input", Input)

    def _redraw(self, text: str | None = None) -> None:
        if text is not None:
            self.field.value = text
        self.query_one("#clarify-card", Static).update(card_text(self.card))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "move":
            return self.card.has_choices
        if action == "tick":
            return self.card.can_tick(self.field.value)
        return True

    def action_move(self, step: int) -> None:
        (self.card.up if step < 0 else self.card.down)()
        self._redraw()

    def action_tick(self) -> None:
        self.card.tick()
        self._redraw()

    def action_go(self, step: int) -> None:
        self._redraw(self.card.go(step, self.field.value))

    async def action_cancel(self) -> None:
        self.card.cancel()
        await self.tui.answer_clarify(self, cancel=True)

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._redraw(self.card.confirm(event.value))
        if self.card.state.done:
            await self.tui.answer_clarify(self)


class ApprovalPanel(Static):
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(k, f"choose('{v}')", show=False) for k, v in APPROVAL_KEYS.items()),
        Binding("escape", "choose('deny')", show=False, priority=True),
    ]

    can_focus = True

    def __init__(self, tui: HermesTui, request: dict[str, Any]) -> None:
        text = Text()
        text.append(f"⚠ {request.get('reason') or 'this command needs your approval'}\n", style="bold yellow")
        text.append(f"  $ {request.get('command', '')}\n")
        text.append("Allow? [o]nce / [s]ession / [a]lways / [d]eny", style="bold")
        super().__init__(text, id="approval")
        self.tui, self.request = tui, request

    def on_mount(self) -> None:
        self.focus()

    async def action_choose(self, choice: str) -> None:
        await self.tui.answer_approval(self, choice)


class HermesTui(App[None]):
    """See the module docstring."""

    TITLE = "hermes"
    CSS = """
    #status { height: 1; background: $boost; padding: 0 1; }
    #sessions { width: 32; border-right: solid $primary-darken-2; }
    #log { height: 1fr; padding: 0 1; }
    .user { color: $accent; margin-top: 1; }
    .answer { margin-bottom: 1; }
    .notice { color: $warning; }
    #clarify, #approval { height: auto; border: round $accent; padding: 0 1; }
    #composer { dock: bottom; }
    Collapsible { border-top: none; padding: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "new_session", "new session"),
        Binding("escape", "interrupt", "interrupt", show=False),
        Binding("ctrl+q", "quit", "quit", priority=True),
    ]

    def __init__(self, url: str, token: str | None, *, where: str) -> None:
        super().__init__()
        self.client = AppClient(url, token, self._queue_note)
        #: notifications in arrival order, handled one at a time by :meth:`_pump` (a handler may call the
        #: server, whose answer the client's reader must stay free to read)
        self._notes: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.where = where
        self.session: str | None = None
        self.session_id: str | None = None
        self.model = ""
        self._answer: Static | None = None
        self._answer_text = ""
        self._tools: dict[str, tuple[Collapsible, Static]] = {}

    # -- layout --------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static("connecting…", id="status")
        with Horizontal():
            yield OptionList(id="sessions")
            with Vertical():
                yield VerticalScroll(id="log")
                yield Input(placeholder="message hermes (Enter sends · Esc interrupts · Ctrl+N new · Ctrl+Q quit)",
                            id="composer")

    @property
    def log_view(self) -> VerticalScroll:
        return self.query_one("#log", VerticalScroll)

    @property
    def composer(self) -> Input:
        return self.query_one("#composer", Input)

    def _status(self) -> None:
        session = self.session_id or "new session"
        self.query_one("#status", Static).update(f"hermes tui · {self.where} · {self.model} · {session}")

    async def _add(self, widget: Static | Collapsible) -> None:
        await self.log_view.mount(widget)
        self.log_view.scroll_end(animate=False)

    async def _notice(self, text: str) -> None:
        await self._add(Static(Text(text), classes="notice"))

    # -- start ---------------------------------------------------------------------------------------------
    async def on_mount(self) -> None:
        self.run_worker(self._pump(), exclusive=False)
        try:
            await self.client.connect()
            models = await self.client.call("models.list")
        except Exception as exc:  # shown, not raised: the person reads why and quits
            await self._notice(f"✗ {exc}")
            return
        current = models.get("current") or {}
        self.model = str(current.get("model") or "no model")
        await self._refresh_sessions()
        await self.action_new_session()
        self.composer.focus()

    async def _refresh_sessions(self) -> None:
        listed = await self.client.call("sessions.list", {"limit": 50})
        options = self.query_one("#sessions", OptionList)
        options.clear_options()
        for s in listed["sessions"]:
            label = s.get("title") or s.get("preview") or s["session_id"]
            options.add_option(Option(f"{label[:28]}", id=s["session_id"]))

    async def action_new_session(self) -> None:
        created = await self.client.call("sessions.create", {"surface": "tui"})
        self.session, self.session_id = created["session"], None
        await self.log_view.remove_children()
        self._status()
        await self._notice("new session — say something")

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is None:
            return
        resumed = await self.client.call("sessions.resume", {"session_id": event.option.id})
        self.session, self.session_id = resumed["session"], resumed["session_id"]
        await self.log_view.remove_children()
        for message in resumed["messages"]:
            role = "user" if message["role"] == "user" else "answer"
            prefix = "you › " if role == "user" else ""
            await self._add(Static(Text(prefix + str(message.get("content") or "")), classes=role))
        self._status()
        if resumed.get("waiting"):
            await self._ask(resumed["waiting"])
        self.composer.focus()

    # -- sending -------------------------------------------------------------------------------------------
    async def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "composer" or not event.value.strip() or self.session is None:
            return
        text = event.value
        self.composer.value = ""
        await self._add(Static(Text(f"you › {text}"), classes="user"))
        try:
            await self.client.call("message.send", {"session": self.session, "text": text})
        except RpcFailure as exc:
            await self._notice(f"✗ {exc}")

    async def action_interrupt(self) -> None:
        if self.session is not None:
            await self.client.call("turn.interrupt", {"session": self.session})

    # -- what the server sends -------------------------------------------------------------------------
    def _queue_note(self, method: str, params: dict[str, Any]) -> None:
        self._notes.put_nowait((method, params))

    async def _pump(self) -> None:
        while True:
            method, params = await self._notes.get()
            try:
                await self.on_note(method, params)
            except Exception as exc:  # shown; the next notification is still handled
                await self._notice(f"✗ could not show {params.get('type') or method}: {exc}")

    async def on_note(self, method: str, params: dict[str, Any]) -> None:
        if params.get("session") != self.session:
            return
        if method == "request":
            await self._ask(params)
            return
        kind = params.get("type")
        if params.get("session_id") and params["session_id"] != self.session_id:
            self.session_id = params["session_id"]
            self._status()
        if kind == "text_delta":
            if self._answer is None:
                self._answer, self._answer_text = Static("", classes="answer"), ""
                await self._add(self._answer)
            self._answer_text += str(params.get("text", ""))
            self._answer.update(Text(self._answer_text))
            self.log_view.scroll_end(animate=False)
        elif kind == "tool_started":
            self._answer = None
            body = Static(Text("running…"))
            started = Collapsible(body, title=f"⚙ {params.get('name')}({_short(params)})", collapsed=True)
            self._tools[str(params.get("call_id"))] = (started, body)
            await self._add(started)
        elif kind == "tool_finished":
            done = self._tools.pop(str(params.get("call_id")), None)
            if done is not None:
                mark = "✗" if params.get("is_error") else "✓"
                done[0].title = f"{mark} {params.get('name')} · {float(params.get('seconds') or 0):.1f}s"
                done[1].update(Text(str(params.get("result", ""))[:4000]))
        elif kind == "notice":
            await self._notice(str(params.get("message", "")))
        elif kind == "turn_finished":
            if self._answer is None and params.get("final"):
                await self._add(Static(Text(str(params["final"])), classes="answer"))
            self._answer = None
            await self._clear_cards()
            await self._refresh_sessions()

    async def _ask(self, request: dict[str, Any]) -> None:
        await self._clear_cards()
        panel: ClarifyPanel | ApprovalPanel
        panel = ClarifyPanel(self, request) if request.get("kind") == "clarify" else ApprovalPanel(self, request)
        self.composer.display = False
        await self.query_one("#composer").parent.mount(panel, before=self.composer)  # type: ignore[union-attr]

    async def _clear_cards(self) -> None:
        for card in self.query("#clarify, #approval"):
            await card.remove()
        self.composer.display = True
        self.composer.focus()

    async def answer_clarify(self, panel: ClarifyPanel, *, cancel: bool = False) -> None:
        state = panel.card.state
        params: dict[str, Any] = {"session": self.session, "request_id": panel.request.get("request_id")}
        if cancel:
            params["cancel"] = True
        else:
            params["answers"] = [state.answers[i] if state.statuses[i] == "answered" else None
                                 for i in range(len(state.questions))]
        await self._clear_cards()
        try:
            await self.client.call("clarify.answer", params)
        except RpcFailure as exc:
            await self._notice(f"✗ {exc}")

    async def answer_approval(self, panel: ApprovalPanel, choice: str) -> None:
        await self._clear_cards()
        try:
            await self.client.call("approval.answer", {"session": self.session, "choice": choice,
                                                       "request_id": panel.request.get("request_id")})
        except RpcFailure as exc:
            await self._notice(f"✗ {exc}")

    async def action_quit(self) -> None:
        await self.client.close()
        self.exit()


def _short(params: dict[str, Any]) -> str:
    text = str(params.get("arguments") or "")
    return text if len(text) <= 60 else text[:59] + "…"
