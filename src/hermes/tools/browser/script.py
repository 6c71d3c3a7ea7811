"""``browser_exec``: a short script of browser actions in one call, for the repetitive parts of a task.

Each step is one of the core actions (``navigate``, ``click``, ``type``, ``press``, ``scroll``, ``back``,
``evaluate`` — JavaScript in the page — and ``wait``), checked against the schema of the tool it stands
for before anything runs, so a malformed step fails the whole call up front with its number. Steps run
in order on the task's tab; the first failing step stops the script. The whole script has one time
limit (``timeout``, default 60 s); each step answers one short line (no snapshots in between), and the
final page comes as one budgeted snapshot (``snapshot: false`` leaves it out).
"""

from __future__ import annotations

import time
from typing import Any

from hermes.errors import ToolArgumentError, ToolError
from hermes.tools.browser.tool import SCHEMAS, browser_available
from hermes.tools.registry import registry
from hermes.tools.validation import validate_arguments

MAX_STEPS = 50
STEP_TEXT = 500
#: step action → the tool it stands for (its handler in :mod:`.actions`, imported on the first call)
_ACTIONS: dict[str, str] = {
    "navigate": "browser_navigate", "click": "browser_click", "type": "browser_type", "press": "browser_press",
    "scroll": "browser_scroll", "back": "browser_back", "evaluate": "browser_console",
}
_WAIT_SCHEMA = {"type": "object", "properties": {"ms": {"type": "integer", "minimum": 1, "maximum": 30_000}},
                "required": ["ms"], "additionalProperties": False}


def _prepared(steps: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(action, arguments of its tool) per step; a ToolArgumentError names the first bad step."""
    out: list[tuple[str, dict[str, Any]]] = []
    for number, step in enumerate(steps, 1):
        fields = dict(step)
        action = str(fields.pop("action", ""))
        if action == "evaluate":
            fields = {"expression": fields.pop("expression", None), **fields}
        try:
            if action == "wait":
                validate_arguments(fields, _WAIT_SCHEMA)
            elif action in _ACTIONS:
                validate_arguments(fields, SCHEMAS[_ACTIONS[action]]["parameters"])
                if action == "evaluate" and not fields.get("expression"):
                    raise ToolArgumentError("'expression' is required")
            else:
                raise ToolArgumentError(f"'action' must be one of {', '.join([*_ACTIONS, 'wait'])}")
        except ToolArgumentError as exc:
            raise ToolArgumentError(f"step {number} ({action or 'no action'}): {exc}") from None
        out.append((action, fields))
    return out


def _line(action: str, answer: dict[str, Any]) -> dict[str, Any]:
    """One short line of a step's answer."""
    if action == "navigate":
        return {"result": f"opened {answer.get('title', '')!r}", "url": answer.get("url")}
    if action == "evaluate":
        return {"result": str(answer.get("result", ""))[-STEP_TEXT:]}
    line: dict[str, Any] = {"result": answer.get("result"), "url": answer.get("url")}
    changed = answer.get("changed")
    if isinstance(changed, dict):
        line["changed"] = {k: v for k, v in changed.items() if k != "new_elements"}
    return line


async def browser_exec(args: dict[str, Any], **kw: Any) -> dict[str, Any]:
    import asyncio

    from hermes.tools.browser import actions
    from hermes.tools.browser.page import page_view, settle, tab_of, take_snapshot

    plan = _prepared(list(args["steps"]))
    limit = float(args.get("timeout") or 60)
    done: list[dict[str, Any]] = []
    started = time.monotonic()

    async def run() -> None:
        for number, (action, fields) in enumerate(plan, 1):
            if action == "wait":
                await asyncio.sleep(fields["ms"] / 1000)
                done.append({"step": number, "action": "wait", "result": f"waited {fields['ms']} ms"})
                continue
            try:
                answer = await getattr(actions, _ACTIONS[action])(fields, **kw)
            except ToolError as exc:
                done.append({"step": number, "action": action, "error": str(exc)})
                return
            done.append({"step": number, "action": action, **_line(action, answer)})

    out: dict[str, Any] = {"steps": done}
    try:
        await asyncio.wait_for(run(), limit)
    except TimeoutError:
        out["stopped"] = f"the time limit ({limit:g} s) ran out after {len(done)} of {len(plan)} steps"
    failed = next((s for s in done if "error" in s), None)
    if failed is not None:
        out["stopped"] = f"step {failed['step']} failed; the steps after it did not run"
    out["seconds"] = round(time.monotonic() - started, 2)
    if args.get("snapshot", True) and ("stopped" not in out or failed is not None):
        tab = await tab_of(kw)
        if not tab.pending_dialogs:
            await settle(tab)
            await take_snapshot(tab)
            out["page"] = await page_view(tab)
    return out


_STEP = {"type": "object", "description": (
    "One action: {action: navigate, url} | {action: click, ref} | {action: type, ref, text, submit?} | "
    "{action: press, key} | {action: scroll, direction, amount?} | {action: back} | "
    "{action: evaluate, expression} | {action: wait, ms}."),
    "properties": {"action": {"type": "string", "enum": [*_ACTIONS, "wait"]}}, "required": ["action"]}

BROWSER_EXEC_SCHEMA: dict[str, Any] = {
    "name": "browser_exec",
    "description": ("Run a short script of browser actions in one call (fill several fields, click through a "
                    "wizard). Steps run in order and stop at the first failure; each answers one line, and the "
                    "final page comes as one snapshot. Refs must come from an earlier snapshot."),
    "parameters": {
        "type": "object",
        "properties": {
            "steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": _STEP},
            "timeout": {"type": "number", "minimum": 1, "maximum": 300,
                        "description": "Seconds for the whole script (default 60)."},
            "snapshot": {"type": "boolean", "description": "End with a snapshot of the page (default true)."},
        },
        "required": ["steps"],
        "additionalProperties": False,
    },
}

registry.register(name="browser_exec", toolset="browser", schema=BROWSER_EXEC_SCHEMA, handler=browser_exec,
                  check_fn=browser_available, is_async=True, needs_session=True)
