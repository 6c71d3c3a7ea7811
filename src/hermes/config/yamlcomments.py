"""Keeping comment lines in place when ruamel appends a key to a mapping.

ruamel stores the blank lines and comments after the last item of a mapping — typically the comment that
introduces the *next* section — on that last item, so a key appended to the mapping would be written after
them, under the next section's heading. :func:`append_keeping_comments` moves those lines onto the new key,
so they stay in front of the section they introduce.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def append_keeping_comments(node: Any, add: Callable[[], None]) -> None:
    """Run ``add`` (which appends a key to mapping ``node``), then restore the trailing comment lines."""
    taken = _take_tail(node)
    add()
    if taken is not None:
        _give_tail(node, *taken)


def _last_slot(node: Any) -> tuple[Any, Any, int] | None:
    """(container, key or index, slot) of the comment after the deepest last item of ``node``."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    while True:
        if isinstance(node, CommentedMap) and len(node):
            key: Any = list(node)[-1]
            slot = 2
        elif isinstance(node, CommentedSeq) and len(node):
            key, slot = len(node) - 1, 0
        else:
            return None
        child = node[key]
        if isinstance(child, CommentedMap | CommentedSeq) and len(child):
            node = child
            continue
        return node, key, slot


def _take_tail(node: Any) -> tuple[str, Any] | None:
    found = _last_slot(node)
    if found is None:
        return None
    container, key, slot = found
    entry = container.ca.items.get(key)
    token = entry[slot] if entry and len(entry) > slot else None
    if token is None:
        return None
    text = token.value
    if text.startswith("#"):
        head, sep, tail = text.partition("\n")
        head += sep
    else:
        head, tail = "", text[1:] if text.startswith("\n") else text
    if not tail:
        return None
    if head:
        token.value = head
    else:
        entry[slot] = None
    return tail, token.start_mark


def _give_tail(node: Any, tail: str, mark: Any) -> None:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.tokens import CommentToken

    found = _last_slot(node)
    if found is None:  # the key was just added, so there is a last item
        return
    container, key, slot = found
    entry = container.ca.items.setdefault(key, [None] * (4 if isinstance(container, CommentedMap) else 2))
    if entry[slot] is not None:
        entry[slot].value += tail
    else:
        entry[slot] = CommentToken("\n" + tail, mark)
