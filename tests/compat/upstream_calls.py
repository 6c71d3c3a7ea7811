"""Runs INSIDE the upstream ``hermes-agent`` venv (never in ours): calls its tools the way its agent loop does.

``python upstream_calls.py SPEC.json`` reads ``{"toolsets": [...], "calls": [{"tool", "args"}, ...]}``,
asks the upstream registry which tools it would offer a model for those toolsets
(``model_tools.get_tool_definitions``), then runs each call through the same dispatcher the agent uses
(``model_tools.handle_function_call``). The last line of stdout is one JSON object:
``{"offered": [tool names], "results": {tool: raw tool output string}}``.

This file only uses the upstream package's public entry points; it contains none of its code. It must
stay importable with the upstream venv's own interpreter, so it uses the standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    spec: dict[str, Any] = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    import model_tools  # the upstream package's tool dispatcher

    definitions = model_tools.get_tool_definitions(enabled_toolsets=list(spec["toolsets"]), quiet_mode=True)
    offered = sorted(str(d.get("function", {}).get("name", "")) for d in definitions)
    results: dict[str, str] = {}
    for call in spec["calls"]:
        results[call["tool"]] = model_tools.handle_function_call(call["tool"], dict(call["args"]),
                                                                 task_id="upstream-compat")
    sys.stdout.write("\n" + json.dumps({"offered": offered, "results": results}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
