"""A capped unified diff that stays cheap on large files.

The common leading and trailing lines of the two texts are skipped first (a few C-level comparisons
per line), so :class:`difflib.SequenceMatcher` only sees the changed middle plus its context, with the
line numbers shifted back to the whole file's.
"""

from __future__ import annotations

import difflib

MAX_DIFF_LINES = 200
MAX_DIFF_CHARS = 12_000
CONTEXT = 3


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: list[str], b: list[str], prefix: int) -> int:
    n = min(len(a), len(b)) - prefix
    i = 0
    while i < n and a[-1 - i] == b[-1 - i]:
        i += 1
    return i


def _span(start: int, count: int) -> str:
    if count == 0:
        return f"{start},0"
    return f"{start + 1}" if count == 1 else f"{start + 1},{count}"


def _window(old: str, new: str, head: int, tail: int) -> tuple[int, str, str]:
    """Cut both texts to whole lines around the changed region: (lines skipped, old part, new part).

    ``head``/``tail``: how many leading/trailing characters the texts are known to share.
    """
    head = min(head, len(old), len(new))
    tail = max(0, min(tail, len(old) - head, len(new) - head))
    start = old.rfind("\n", 0, head) + 1
    for _ in range(CONTEXT):
        if start == 0:
            break
        start = old.rfind("\n", 0, start - 1) + 1
    end = len(old) - tail
    for _ in range(CONTEXT + 1):
        found = old.find("\n", end)
        if found < 0:
            end = len(old)
            break
        end = found + 1
    cut = len(old) - end
    return old.count("\n", 0, start), old[start : len(old) - cut], new[start : len(new) - cut]


def unified_diff(old: str, new: str, name: str, head: int = 0, tail: int = 0) -> tuple[str, bool]:
    """``(diff text, truncated)`` between two texts; the diff is capped in lines and characters.

    Callers that know how many leading (``head``) and trailing (``tail``) characters are unchanged pass
    them, and only the lines around the change are split and compared.
    """
    skipped, old, new = _window(old, new, head, tail)
    a, b = old.split("\n"), new.split("\n")
    if a[-1] == "" and b[-1] == "":  # both end with a newline: no empty last line
        a.pop()
        b.pop()
    prefix = _common_prefix(a, b)
    suffix = _common_suffix(a, b, prefix)
    lo = max(0, prefix - CONTEXT)
    a_mid, b_mid = a[lo : len(a) - max(0, suffix - CONTEXT)], b[lo : len(b) - max(0, suffix - CONTEXT)]
    out = [f"--- a/{name}", f"+++ b/{name}"]
    matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{_span(skipped + lo + i1, i2 - i1)} +{_span(skipped + lo + j1, j2 - j1)} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(" " + line for line in a_mid[a1:a2])
                continue
            if tag in ("replace", "delete"):
                out.extend("-" + line for line in a_mid[a1:a2])
            if tag in ("replace", "insert"):
                out.extend("+" + line for line in b_mid[b1:b2])
    if len(out) == 2:
        return "", False
    kept: list[str] = []
    size = 0
    for line in out:
        if len(kept) >= MAX_DIFF_LINES or size + len(line) + 1 > MAX_DIFF_CHARS:
            omitted = len(out) - len(kept)
            kept.append(f"… [diff truncated: {omitted} more line(s)]")
            return "\n".join(kept), True
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), False
