"""``execute_code``: run a Python script that can call the agent's tools (SPEC T-CODE).

* :mod:`.tool` — the schema, the handler and the registration;
* :mod:`.runner` — one run: temp dir, RPC server, child process, result;
* :mod:`.rpc` — the parent-side socket server that executes the child's tool calls;
* :mod:`.stub` — the generated ``hermes_tools`` module the script imports;
* :mod:`.limits` — configuration (``code_execution.*``) and the allowed tools;
* :mod:`.sandbox` — the child's scrubbed environment, process group handling and output caps.

See ``docs/tools/execute_code.md``.
"""
