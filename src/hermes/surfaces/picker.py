"""Arrow-key pickers for the terminal: one choice from a list, or a checklist (prompt_toolkit, inline).

* :func:`select` — ↑/↓ (or k/j, Home/End, a digit) move, Enter chooses, Esc / q / Ctrl-C go back (None);
  Ctrl-D (end of input) goes back too, or with ``quit_on_eof`` raises EOFError so a flow can end at once;
* :func:`checklist` — the same keys, Space ticks or unticks, Enter confirms the ticked set;
* :func:`ask_text` — one line of text, masked for secrets; None on Esc, Ctrl-C or end of input (or
  EOFError with ``quit_on_eof``).

They draw below the cursor (no full screen), so they work in a plain terminal, over ssh and in tmux, and
erase themselves when done; the caller prints what was chosen. Each takes an optional prompt_toolkit
``Input``/``Output`` so tests can drive them through a pipe.

:class:`ToolsPicker` is the ``hermes tools`` flow built on them (GW-8): a tool category, then its
backends — "Nous Subscription" first and every vendor, listed whether logged in or not — and for web
also "Route search and extract separately". Choosing the subscription while logged out runs the
``login`` callback first (and changes nothing when it fails); choosing a vendor whose key is missing asks
for it (saved in ``.env``; secrets masked, plain settings such as ``SEARXNG_URL`` shown). Only the chosen
category's selection key is written (:func:`hermes.routing.choose.apply_selection`). The row of the
backend in use is marked ``(current)``. Ctrl-D anywhere leaves the whole picker and says what was kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output
from prompt_toolkit.styles import Style

if TYPE_CHECKING:
    from hermes.config.settings import Settings
    from hermes.routing.choose import Choice, SelectionChange, Target
    from hermes.routing.report import GatewayReport

SELECT_HINT = "↑↓ move · Enter choose · Esc back"
CHECK_HINT = "↑↓ move · Space tick/untick · Enter confirm · Esc cancel"
STYLE = Style.from_dict({"title": "bold", "hint": "ansibrightblack", "note": "ansibrightblack",
                         "cursor": "reverse", "current": "ansigreen"})
#: how long a lone Esc waits for the rest of an escape sequence
ESC_WAIT = 0.05


@dataclass(frozen=True)
class Option:
    """One row: a label, a short dim note, and whether it is the value in use now."""

    label: str
    note: str = ""
    current: bool = False


class _Menu:
    def __init__(self, title: str, options: Sequence[Option], *, default: int, multi: bool,
                 checked: Iterable[int], hint: str, input: Input | None, output: Output | None) -> None:
        if not options:
            raise ValueError("a picker needs at least one option")
        self.title = title
        self.options = list(options)
        self.cursor = min(max(default, 0), len(options) - 1)
        self.multi = multi
        self.checked = {i for i in checked if 0 <= i < len(options)}
        self.hint = hint
        self.result: int | set[int] | None = None
        self.ended = False  # Ctrl-D or the end of the input
        self.width = max(len(o.label) for o in options)
        self.app: Application[None] = Application(
            layout=Layout(Window(FormattedTextControl(self.render, focusable=True, show_cursor=False),
                                 dont_extend_height=True, wrap_lines=True)),
            key_bindings=self.bindings(), style=STYLE, full_screen=False, erase_when_done=True,
            input=input, output=output,
        )
        self.app.ttimeoutlen = ESC_WAIT

    def render(self) -> StyleAndTextTuples:
        lines: StyleAndTextTuples = [("class:title", self.title + "\n"), ("class:hint", f"  {self.hint}\n")]
        for i, option in enumerate(self.options):
            pointer = "❯" if i == self.cursor else " "
            box = ("[x] " if i in self.checked else "[ ] ") if self.multi else ""
            style = "class:cursor" if i == self.cursor else ""
            lines.append((style, f" {pointer} {box}{option.label:<{self.width}}"))
            if option.note:
                lines.append(("class:note", f"  {option.note}"))
            if option.current:
                lines.append(("class:current", "  (current)"))
            lines.append(("", "\n" if i < len(self.options) - 1 else ""))
        return lines

    def move(self, step: int) -> None:
        self.cursor = (self.cursor + step) % len(self.options)

    def done(self, result: int | set[int] | None) -> None:
        self.result = result
        if not self.app.is_done:
            self.app.exit()

    def bindings(self) -> KeyBindings:
        kb = KeyBindings()

        def key(*names: str) -> Callable[[Callable[[KeyPressEvent], None]], Callable[[KeyPressEvent], None]]:
            def register(handler: Callable[[KeyPressEvent], None]) -> Callable[[KeyPressEvent], None]:
                for name in names:
                    kb.add(name, eager=name == "escape")(handler)
                return handler
            return register

        @key("up", "k", "s-tab")
        def _up(event: KeyPressEvent) -> None:
            self.move(-1)

        @key("down", "j", "tab")
        def _down(event: KeyPressEvent) -> None:
            self.move(1)

        @key("home")
        def _home(event: KeyPressEvent) -> None:
            self.cursor = 0

        @key("end")
        def _end(event: KeyPressEvent) -> None:
            self.cursor = len(self.options) - 1

        @key(*"123456789")
        def _digit(event: KeyPressEvent) -> None:
            index = int(event.data) - 1
            if index < len(self.options):
                self.cursor = index

        @key("space")
        def _tick(event: KeyPressEvent) -> None:
            if self.multi:
                self.checked.symmetric_difference_update({self.cursor})

        @key("enter")
        def _enter(event: KeyPressEvent) -> None:
            self.done(set(self.checked) if self.multi else self.cursor)

        @key("escape", "q", "c-c")
        def _cancel(event: KeyPressEvent) -> None:
            self.done(None)

        @key("c-d")
        def _leave(event: KeyPressEvent) -> None:
            self.ended = True
            self.done(None)

        return kb

    def run(self, quit_on_eof: bool = False) -> int | set[int] | None:
        try:
            self.app.run()
        except EOFError:
            self.ended = True
        if self.ended and quit_on_eof:
            raise EOFError("the picker was left with Ctrl-D")
        return self.result


def select(title: str, options: Sequence[Option], *, default: int = 0, hint: str = SELECT_HINT,
           input: Input | None = None, output: Output | None = None, quit_on_eof: bool = False) -> int | None:
    """The index chosen, or None when the person went back (EOFError on Ctrl-D with ``quit_on_eof``)."""
    result = _Menu(title, options, default=default, multi=False, checked=(), hint=hint,
                   input=input, output=output).run(quit_on_eof)
    return result if isinstance(result, int) else None


def checklist(title: str, options: Sequence[Option], checked: Iterable[int], *, hint: str = CHECK_HINT,
              input: Input | None = None, output: Output | None = None) -> set[int] | None:
    """The ticked indexes when confirmed, or None when cancelled."""
    result = _Menu(title, options, default=0, multi=True, checked=checked, hint=hint,
                   input=input, output=output).run()
    return result if isinstance(result, set) else None


def ask_text(message: str, *, secret: bool = False, default: str = "", input: Input | None = None,
             output: Output | None = None, quit_on_eof: bool = False) -> str | None:
    """One line of text (masked when ``secret``); None on Esc, Ctrl-C or end of input (EOFError with
    ``quit_on_eof``)."""
    from prompt_toolkit import PromptSession

    kb = KeyBindings()

    @kb.add("escape", eager=True)
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    session: PromptSession[str] = PromptSession(key_bindings=kb, input=input, output=output)
    session.app.ttimeoutlen = ESC_WAIT
    try:
        return session.prompt(message, is_password=secret, default=default)
    except KeyboardInterrupt:
        return None
    except EOFError:
        if quit_on_eof:
            raise
        return None


# -- the `hermes tools` flow -------------------------------------------------------------------------------
class ToolsPicker:
    """Category list → backend list → write, until Done or Esc (see the module docstring)."""

    def __init__(self, settings: Settings, out: Callable[[str], None], *, login: Callable[[Settings], None],
                 after: Callable[[SelectionChange], None], input: Input | None = None,
                 output: Output | None = None) -> None:
        self.settings = settings
        self.out = out
        self.login = login
        self.after = after
        self.input = input
        self.output = output
        self.changed: list[str] = []  # what was written, for the goodbye line

    def reload(self) -> None:
        self.settings = type(self.settings).load(self.settings.paths)

    def run(self) -> None:

        try:
            self._categories()
        except EOFError:
            if self.changed:
                self.out(f"Left the tools picker (Ctrl-D). Saved before that: {', '.join(self.changed)}; "
                         "nothing else was changed.")
            else:
                self.out("Left the tools picker (Ctrl-D); nothing was changed.")

    def _categories(self) -> None:
        from hermes.routing.categories import CATEGORIES
        from hermes.routing.choose import Target
        from hermes.routing.report import load_report

        names = list(CATEGORIES)
        position = 0
        while True:
            s = self.settings
            report = load_report(s.paths.auth, s.config.data, s.env.as_dict())
            options = []
            for name in names:
                rows = [r for _, r in report.rows() if r.name.split(".")[0] == name]
                options.append(Option(CATEGORIES[name].display, "; ".join(f"{r.mark} {r.message}" for r in rows)))
            options.append(Option("Done"))
            index = select("Tool backends — choose a tool category", options, default=position,
                           input=self.input, output=self.output, quit_on_eof=True)
            if index is None or index == len(names):
                return
            position = index
            self.pick(Target(CATEGORIES[names[index]]))
            self.reload()

    def pick(self, target: Target) -> None:
        """Choose the backend of one target (a category, or a web function)."""
        from hermes.routing.categories import GATEWAY_VALUE
        from hermes.routing.choose import Target, apply_selection, choices_for, missing_env
        from hermes.routing.credentials import load_credentials
        from hermes.routing.report import load_report

        s = self.settings
        env = s.env.as_dict()
        report = load_report(s.paths.auth, s.config.data, env)
        logged_in = report.auth.status not in ("not_logged_in", "expired")
        covered = None
        if logged_in and report.auth.plan is not None:
            covered = load_credentials(s.paths.auth, env).covers(target.category.coverage_key)
        choices = choices_for(target, s.config.data, env, logged_in=logged_in, covered=covered,
                              in_use=_in_use(report, target))
        plugins = _video_plugins(s, choices) if target.category.name == "video_gen" else {}
        choices += [c for c, _env in plugins.values()]
        options = [Option(c.label, c.note, c.current) for c in choices]
        split = target.function is None and len(target.category.functions) > 1
        if split:
            options.append(Option("Route search and extract separately…", "a backend for each function"))
        current = next((i for i, c in enumerate(choices) if c.current), 0)
        index = select(f"{target.display} — choose a backend", options, default=current,
                       input=self.input, output=self.output, quit_on_eof=True)
        if index is None:
            return
        if split and index == len(choices):
            for function in target.category.functions:
                self.pick(Target(target.category, function))
                self.reload()
            return
        choice = choices[index]
        if choice.value == GATEWAY_VALUE and not logged_in:
            from hermes.errors import GatewayError

            self.out(f"{choice.label} needs a Nous Portal login; starting it now (nothing else is changed).")
            try:
                self.login(s)
            except GatewayError as exc:
                self.out(f"✗ {exc}. {target.name} was not changed.")
                return
        vendor = target.category.vendor(choice.value)
        if vendor is not None:
            self.ask_keys(missing_env(vendor, env))
        elif choice.value in plugins:
            names = plugins[choice.value][1]
            if names and not any((env.get(n) or "").strip() for n in names):
                self.ask_keys([names[0]])
        self.out(f"{target.display} → {choice.label}")
        change = apply_selection(s.paths.config, target, choice.value)
        if change.changed:
            self.changed.append(f"{target.display} → {choice.label}")
        self.after(change)
        if target.category.name == "video_gen":
            self.reload()
            self.pick_video_model(choice.value)

    def pick_video_model(self, value: str) -> None:
        """Video generation's second step: the model of the chosen backend, from its table or its live
        catalog (read now), written to ``video_gen.model``."""
        from hermes.config.yamlfile import ConfigFile
        from hermes.errors import HermesError
        from hermes.routing.categories import GATEWAY_VALUE
        from hermes.tools.asyncbridge import run_sync
        from hermes.tools.routed.context import RoutedContext
        from hermes.tools.video.backend import backend_models

        name = "fal" if value == GATEWAY_VALUE else value
        ctx = RoutedContext(self.settings)
        try:
            backend, models = run_sync(backend_models(ctx, name, refresh=True))
        except HermesError as exc:
            self.out(f"The models of {name} could not be listed: {exc}. video_gen.model was not changed.")
            return
        if not models:
            self.out(f"{name} lists no models; video_gen.model was not changed.")
            return
        current = ctx.get_str("video_gen.model") or backend.default_model
        options = [Option(f"{m.display} ({m.id})" if m.display != m.id else m.id, m.capabilities.summary(),
                          m.id == current) for m in models]
        default = next((i for i, m in enumerate(models) if m.id == current), 0)
        index = select(f"Video generation — choose a {backend.display} model", options, default=default,
                       input=self.input, output=self.output, quit_on_eof=True)
        if index is None:
            return
        chosen = models[index].id
        cfg = ConfigFile.load(self.settings.paths.config)
        if cfg.get("video_gen.model") != chosen:
            cfg.set("video_gen.model", chosen)
            cfg.save()
            self.changed.append(f"video_gen.model → {chosen}")
        self.out(f"Video generation model → {chosen}")
        named = self.settings.requested_toolsets() or []
        if not {"video", "video_gen", "all"} & set(named):
            self.out("Video tools are opt-in: 'hermes tools enable video_gen' adds video_generate to new sessions.")

    def ask_keys(self, names: list[str]) -> None:
        from hermes.config.dotenv import set_dotenv_value
        from hermes.config.optional_env import is_secret_variable

        for name in names:
            secret = is_secret_variable(name)
            how = "input hidden" if secret else "shown as you type"
            value = ask_text(f"{name} (saved in .env, {how}; Enter to skip): ", secret=secret,
                             input=self.input, output=self.output, quit_on_eof=True)
            if value and value.strip():
                set_dotenv_value(self.settings.paths.env, name, value.strip())
                self.out(f"Saved {name} in {self.settings.paths.env} (mode 0600).")
                self.changed.append(f"{name} in .env")


def _video_plugins(settings: Settings, choices: list[Choice]) -> dict[str, tuple[Choice, tuple[str, ...]]]:
    """Installed video backend plugins the category table does not list: value → (picker row, key names)."""
    from hermes.plugins.video_gen.discovery import find_backends
    from hermes.routing.choose import Choice

    env = settings.env.as_dict()
    known = {c.value for c in choices}
    found = find_backends(settings.paths.plugins)
    saved = settings.config.get("video_gen.provider")
    rows: dict[str, tuple[Choice, tuple[str, ...]]] = {}
    for name in found.names():
        backend = found.found[name]
        if name in known or found.sources.get(name) == "builtin":
            continue
        has_key = not backend.env or any((env.get(n) or "").strip() for n in backend.env)
        note = "plugin; " + ("no key needed" if not backend.env else
                             f"uses your {backend.env[0]}" if has_key else f"needs {backend.env[0]}")
        rows[name] = (Choice(name, f"{backend.display} (plugin)", note, saved == name), backend.env)
    return rows


def _in_use(report: GatewayReport, target: Target) -> str | None:
    """The selection value of the backend ``target`` uses now (None: none, or web functions that differ)."""
    from hermes.routing.categories import GATEWAY_VALUE

    category = target.category
    names = ([target.name] if target.function or len(category.functions) == 1
             else [f"{category.name}.{f}" for f in category.functions])
    routes = [r for r in (report.routes.get(n) for n in names) if r is not None and r.route != "none"]
    values = {GATEWAY_VALUE if r.route == "gateway" else r.vendor for r in routes}
    return values.pop() if len(values) == 1 else None
