"""The terminal clarify card (T-CLAR, TUI/CLI) without a toolkit: what the chat's prompt_toolkit prompt
(:mod:`hermes.surfaces.clarify_cli`) and the Textual TUI (:mod:`hermes.surfaces.tui`) both draw and do.

A :class:`ClarifyCard` holds a :class:`~hermes.tools.clarify.core.ClarifySession` and the UI state around
it — the highlighted choice and the ticked ones per question, the text typed but not confirmed — and
turns keys into session changes. The toolkit owns the one-line text field; every action takes that
field's text and returns the text the field should show next:

* :meth:`up` / :meth:`down` highlight a choice, :meth:`tick` ticks it (multi-select);
* :meth:`confirm` (Enter) answers the current question with the highlighted/ticked choices or the typed
  text (a number or a choice's text picks it, commas separate several), or skips it when nothing is
  chosen, and moves to the next unanswered question;
* :meth:`go` (Tab / Shift-Tab) keeps the draft and moves to another question, in any order;
* :meth:`cancel` (Esc) cancels all.

:meth:`lines` is the compact status list (``✓`` answered, ``▸`` answering, ``·`` unanswered, only the
current question's choices open) as ``(style, text)`` pieces with style names ``bold``, ``dim``,
``current``, ``answered``, ``hl`` or ``""``.
"""

from __future__ import annotations

from hermes.tools.clarify.core import Answer, ClarifySession

HINT = "↑↓ choose · Enter confirm (empty: skip) · Tab next question · Esc cancel all"

Lines = list[tuple[str, str]]


def show_answer(answer: Answer | None) -> str:
    return ", ".join(answer) if isinstance(answer, list) else answer or ""


class ClarifyCard:
    """See the module docstring."""

    def __init__(self, state: ClarifySession) -> None:
        self.state = state
        #: highlighted choice per question (-1: none)
        self.cursor: dict[int, int] = {}
        #: ticked choices of multi-select questions
        self.ticked: dict[int, set[int]] = {}
        #: text typed but not confirmed, per question
        self.drafts: dict[int, str] = {}

    # -- what the keys may do now ----------------------------------------------------------------------
    @property
    def has_choices(self) -> bool:
        return bool(self.state.questions[self.state.current].choices)

    def can_tick(self, text: str) -> bool:
        i = self.state.current
        return self.state.questions[i].multi_select and self.cursor.get(i, -1) >= 0 and not text

    # -- actions -------------------------------------------------------------------------------------------
    def up(self) -> None:
        i = self.state.current
        self.cursor[i] = max(-1, self.cursor.get(i, -1) - 1)

    def down(self) -> None:
        i = self.state.current
        self.cursor[i] = min(len(self.state.questions[i].choices) - 1, self.cursor.get(i, -1) + 1)

    def tick(self) -> None:
        i = self.state.current
        self.ticked.setdefault(i, set()).symmetric_difference_update({self.cursor[i]})

    def current_answer(self, text: str) -> Answer | None:
        """What Enter would confirm for the current question (None: skip)."""
        i = self.state.current
        q = self.state.questions[i]
        typed = q.interpret(text)
        cur = self.cursor.get(i, -1)
        if not q.multi_select:
            if typed is not None:
                return typed
            return q.choices[cur] if 0 <= cur < len(q.choices) else None
        picked = [q.choices[n] for n in sorted(self.ticked.get(i, set()))]
        for extra in typed if isinstance(typed, list) else []:
            if extra not in picked:
                picked.append(extra)
        if not picked and 0 <= cur < len(q.choices):
            picked = [q.choices[cur]]
        return picked or None

    def confirm(self, text: str) -> str:
        """Enter: confirm (or skip) the current question and go on; the text field's next content."""
        i = self.state.current
        value = self.current_answer(text)
        self.drafts.pop(i, None)
        if value is None:
            self.state.skip(i)
        else:
            self.state.answer(i, value)
        return "" if self.state.done else self.load(self.state.current)

    def go(self, step: int, text: str) -> str:
        """Tab / Shift-Tab: keep the draft and move to another question."""
        self.drafts[self.state.current] = text
        return self.load(self.state.move(step))

    def cancel(self) -> None:
        self.state.cancel()

    def load(self, i: int) -> str:
        """Question ``i`` shown: its draft, or its confirmed answer so Enter keeps it."""
        q = self.state.questions[i]
        text = self.drafts.get(i)
        if text is None and self.state.statuses[i] == "answered":
            ans = self.state.answers[i]
            chosen = ans if isinstance(ans, list) else [ans] if ans else []
            self.ticked[i] = {q.choices.index(a) for a in chosen if a in q.choices} if q.multi_select else set()
            own = [a for a in chosen if a not in q.choices]
            if not q.multi_select and chosen and chosen[0] in q.choices:
                self.cursor[i] = q.choices.index(chosen[0])
            text = ", ".join(own)
        return text or ""

    # -- drawing -----------------------------------------------------------------------------------------
    def lines(self) -> Lines:
        st = self.state
        out: Lines = [("bold", f"❓ {len(st.questions)} question{'s' if len(st.questions) > 1 else ''} from Hermes"),
                      ("dim", f"\n  {HINT}\n" if not st.done else f"  ({st.outcome})\n")]
        for i, q in enumerate(st.questions):
            current = i == st.current and not st.done
            status = st.statuses[i]
            mark = "▸" if current else "✓" if status == "answered" else "·"
            style = "current" if current else "answered" if status == "answered" else ""
            out.append((style, f" {mark} {i + 1}. {q.text}"))
            if status == "answered" and not current:
                out.append(("dim", f"  → {show_answer(st.answers[i])}"))
            elif status == "skipped":
                out.append(("dim", "  (skipped)"))
            out.append(("", "\n"))
            if current:
                out.extend(self._choice_lines(i))
        if out and out[-1][1].endswith("\n"):
            out[-1] = (out[-1][0], out[-1][1][:-1])
        return out

    def _choice_lines(self, i: int) -> Lines:
        q = self.state.questions[i]
        out: Lines = []
        cur = self.cursor.get(i, -1)
        for n, choice in enumerate(q.choices):
            box = ("[x] " if n in self.ticked.get(i, set()) else "[ ] ") if q.multi_select else ""
            pointer = "❯ " if n == cur else "  "
            out.append(("hl" if n == cur else "", f"     {pointer}{box}{n + 1}) {choice}"))
            out.append(("", "\n"))
        if q.choices:
            extra = "Space ticks, " if q.multi_select else ""
            out.append(("dim", f"     ({extra}or type your own answer)\n"))
        return out
