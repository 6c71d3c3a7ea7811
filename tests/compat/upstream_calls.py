"""Runs INSIDE the upstream ``hermes-agent`` venv (never in ours): calls its tools the way its agent loop does.

``python upstream_calls.py SPEC.json`` reads ``{"toolsets": [...], "calls": [...]}``, asks the upstream
registry which tools it would offer a model for those toolsets (``model_tools.get_tool_definitions``),
then runs each call in order:

* ``{"tool": NAME, "args": {...}, ["key": K]}`` goes through the same dispatcher the agent uses
  (``model_tools.handle_function_call``);
* ``{"function": NAME, "args": {...}, ["key": K]}`` calls one of the upstream entry points in
  :data:`FUNCTIONS` that are not model tools (speech-to-text is what the upstream messaging gateway and
  voice mode call on an incoming voice message, not a tool the model sees).

The last line of stdout is one JSON object: ``{"offered": [tool names], "results": {K or NAME: output}}``
(a tool's raw output string; a function's return value as JSON). Environments the calls created (the
terminal tool's sandbox) are cleaned up by the upstream's own exit hook when this process ends.

This file only uses the upstream package's public entry points; it contains none of its code. It must
stay importable with the upstream venv's own interpreter, so it uses the standard library only.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

#: the non-tool entry points a spec may name: name → (module, attribute) in the upstream package
FUNCTIONS = {"transcribe_audio": ("tools.transcription_tools", "transcribe_audio")}


def main(argv: list[str]) -> int:
    spec: dict[str, Any] = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    import model_tools  # the upstream package's tool dispatcher

    definitions = model_tools.get_tool_definitions(enabled_toolsets=list(spec["toolsets"]), quiet_mode=True)
    offered = sorted(str(d.get("function", {}).get("name", "")) for d in definitions)
    results: dict[str, Any] = {}
    for call in spec["calls"]:
        if "function" in call:
            module, attribute = FUNCTIONS[call["function"]]
            function = getattr(importlib.import_module(module), attribute)
            results[call.get("key", call["function"])] = json.dumps(function(**dict(call["args"])), default=str)
        else:
            results[call.get("key", call["tool"])] = model_tools.handle_function_call(
                call["tool"], dict(call["args"]), task_id="upstream-compat")
    sys.stdout.write("\n" + json.dumps({"offered": offered, "results": results}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
