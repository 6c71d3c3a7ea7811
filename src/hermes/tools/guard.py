"""Refusing stored content that must never reach a future system prompt (memory entries, skills).

Memory entries are injected into the system prompt of every later session, so an entry is a
persistent instruction channel. :func:`check_entry` refuses three kinds of content:

* **secrets** — anything :func:`hermes.redact.redact` would mask (key shapes such as ``sk-...``,
  ``ghp_...``, ``Bearer ...``, AWS key ids, values of secret-named environment variables), private-key
  blocks, JSON web tokens and ``password: value`` assignments;
* **prompt injection** — text that tries to override instructions ("ignore previous instructions",
  "you are now ...", fake ``<system>`` / chat-template tags, "do not tell the user", commands that
  send secrets somewhere);
* **invisible characters** — zero-width and bidirectional-override characters that hide text.

Every refusal is a :class:`~hermes.errors.ToolError` saying what was found and what to do instead.
"""

from __future__ import annotations

import os
import re

from hermes.errors import ToolError
from hermes.redact import redact, secret_values

_SECRET_EXTRA = (
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "a JSON web token"),
    (re.compile(r"(?i)\b(?:password|passwd|passphrase|api[_-]?key|secret[_-]?key|access[_-]?token)\b"
                r"\s*[:=]\s*[\"']?[^\s\"']{6,}"), "a password or key assignment"),
)

_INJECTION = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|of\s+|every\s+)*"
        r"(?:previous|prior|above|earlier|preceding|existing|system|original|your|these|those)\s+"
        r"(?:instructions?|prompts?|rules|guidelines|directives|guardrails)\b",
        r"\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+were\s+told|above|before)\b",
        r"\byou\s+are\s+now\s+(?:a|an|the|in|dan|jailbroken|unrestricted|free|no\s+longer)\b",
        r"\b(?:new|updated|real|actual|override|hidden)\s+(?:system\s+)?(?:instructions?|prompt)\s*:",
        r"\bsystem\s+prompt\s*:",
        r"<\s*/?\s*(?:system|assistant|developer|im_start|im_end|tool_call)\s*>",
        r"<\|[a-z_]+\|>",
        r"\[/?INST\]|<<\s*/?SYS\s*>>",
        r"\bdo\s+not\s+(?:tell|inform|mention\s+(?:this\s+)?to|reveal\s+(?:this\s+)?to)\s+the\s+user\b",
        r"\b(?:reveal|print|output|leak|send|upload|exfiltrate)\s+(?:your|the|all)\s+"
        r"(?:system\s+prompt|instructions|api\s+keys?|secrets|credentials|\.env)\b",
        r"\b(?:curl|wget|nc|ncat)\b[^\n]*\$\{?[A-Z_]*(?:KEY|TOKEN|SECRET|PASSWORD)",
        r"\bexfiltrat",
    )
)

_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def find_secret(text: str) -> str | None:
    """What secret-looking thing ``text`` holds, or None."""
    if redact(text, secret_values(dict(os.environ))) != text:  # uncached: the environment as it is now
        return "an API key, token or secret value"
    for pattern, what in _SECRET_EXTRA:
        if pattern.search(text):
            return what
    return None


def find_injection(text: str) -> str | None:
    """The first prompt-injection-looking fragment of ``text``, or None."""
    for pattern in _INJECTION:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def check_entry(text: str) -> None:
    """Raise :class:`ToolError` when ``text`` must not be stored as a memory entry."""
    secret = find_secret(text)
    if secret:
        raise ToolError(
            f"refused: the content looks like it contains {secret}. Never store credentials in memory; "
            "note where the secret is kept instead (e.g. 'the API key is in ~/.hermes/.env')."
        )
    injected = find_injection(text)
    if injected:
        raise ToolError(
            f"refused: the content looks like a prompt injection ({injected[:60]!r}). Memory is shown to "
            "future sessions as trusted context, so it must hold plain facts, not instructions that "
            "override the system prompt. Rephrase it as a neutral fact."
        )
    if _INVISIBLE.search(text):
        raise ToolError("refused: the content holds invisible or bidirectional-override characters; "
                        "send plain text")
