"""An MCP server (the SDK's MCPServer, stdio) with many tools, for index mode: ``--prefix P --count N``
lists N tools named ``P_<verb>_<noun>``, each with a sentence of description and three arguments;
a call answers which tool ran with which arguments."""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

VERBS = ("list", "get", "create", "update", "archive", "search", "export", "assign")
NOUNS = ("issue", "project", "comment", "label", "milestone", "document", "invoice", "contact")


def make(name: str) -> Callable[..., str]:
    def action(item_id: str, limit: int = 10, include_archived: bool = False) -> str:
        return json.dumps({"tool": name, "item_id": item_id, "limit": limit, "archived": include_archived})

    return action


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prefix", default="app")
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args()
    app = MCPServer(args.prefix)
    pairs = itertools.islice(itertools.product(VERBS, NOUNS), args.count)
    for verb, noun in pairs:
        name = f"{args.prefix}_{verb}_{noun}"
        app.add_tool(make(name), name=name,
                     description=f"{verb.capitalize()} the {noun} records of the {args.prefix} workspace, "
                                 f"given the {noun}'s id; at most 'limit' rows, archived ones on request.")
    app.run()


if __name__ == "__main__":
    main()
