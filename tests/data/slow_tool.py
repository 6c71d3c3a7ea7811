"""A plugin tool that sleeps and records when it ran, to observe parallel execution."""

import json
import os
import threading
import time

from hermes.tools.registry import registry


def _slow(args, **kw):
    start = time.time()
    time.sleep(float(args.get("seconds", 0.5)))
    end = time.time()
    record = {"label": args["label"], "start": start, "end": end, "thread": threading.current_thread().name,
              "task_id": kw.get("task_id")}
    with open(os.environ["SLOW_TOOL_LOG"], "a") as fh:
        fh.write(json.dumps(record) + "\n")
    return json.dumps({"label": args["label"], "done": True})


registry.register(
    name="slow_echo",
    toolset="slow",
    schema={
        "name": "slow_echo",
        "description": "Wait a little, then echo the label.",
        "parameters": {
            "type": "object",
            "properties": {"label": {"type": "string"}, "seconds": {"type": "number"}},
            "required": ["label"],
        },
    },
    handler=_slow,
)
