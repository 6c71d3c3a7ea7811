"""``execute_code``: run a Python script that can call the agent's tools (requirement T-CODE).

* :mod:`.tool` — the schema, the handler and the registration;
* :mod:`.runner` — one run: temp dir, RPC server, child process, result;
* :mod:`.rpc` — the parent-side socket server that executes the child's tool calls;
* :mod:`.stub` — the generated ``hermes_tools`` module the script imports;
* :mod:`.limits` — configuration (``code_execution.*``) and the allowed tools;
* :mod:`.sandbox` — the child's scrubbed environment, process group handling and output caps.

See ``docs/tools/execute_code.md``.

The limits the schema names live here, so that discovery (which imports :mod:`.tool` at every start-up)
does not import :mod:`.limits`.
"""

TOOL_NAME = "execute_code"

#: what scripts may call unless ``code_execution.allowed_tools`` says otherwise
DEFAULT_ALLOWED_TOOLS: tuple[str, ...] = (
    "read_file", "write_file", "patch", "search_files", "terminal", "web_search", "web_extract",
)
MAX_TIMEOUT = 600
#: the most source a script may have, in characters
MAX_CODE_CHARS = 200_000
