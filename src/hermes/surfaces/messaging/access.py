"""Who may talk to the messaging gateway, and when it stays quiet.

Checked for every incoming message, before anything runs (:meth:`AccessGate.check`):

1. **Loop protection**: at most ``loop_max_events`` messages per chat in a minute. Past the cap the
   chat gets one notice and a cool-down of ``loop_cooldown_seconds`` in which nothing it sends is
   answered — two bots answering each other stop within a minute.
2. **Mentions**: in a group chat with ``require_mention`` (the default), only messages that address
   the bot are answered; direct conversations always are.
3. **Who**: a person on the platform's ``allow_users`` list, or admitted by pairing before, passes.
   Anyone else in a direct conversation is asked for a pairing code: a fresh one-time code (8 letters
   and digits, no look-alikes) is shown to the owner — on the gateway's console and log — and the
   person sends it back in the chat to be admitted (stored in ``state.db``, ``messaging_access``).
   Codes expire after ``pairing_ttl_seconds``; five wrong codes lock that person out for an hour.
   Strangers in groups are ignored (no code is offered there).
"""

from __future__ import annotations

import fnmatch
import logging
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from hermes.store.conversations import ConversationStore
from hermes.surfaces.messaging.adapter import Inbound

logger = logging.getLogger(__name__)

_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8
MAX_WRONG_CODES = 5
LOCKOUT_SECONDS = 3600.0

Verdict = Literal["run", "ignore", "pair", "paired", "cooldown"]


@dataclass
class PlatformAccess:
    """One platform's access settings (``gateway.platforms.NAME.*``)."""

    #: user ids, or shell-style patterns of them (``*``: everybody; IRC: ``nick!user@host``)
    allow_users: frozenset[str] = frozenset()
    #: chats (ids) whose members all pass without pairing
    allow_chats: frozenset[str] = frozenset()
    require_mention: bool = True
    #: per chat: overrides ``require_mention``
    mention_chats: dict[str, bool] = field(default_factory=dict)


@dataclass
class _Pending:
    code: str
    expires: float
    user_name: str


@dataclass
class Decision:
    verdict: Verdict
    #: what to tell the chat, if anything
    reply: str = ""


class AccessGate:
    """Applies loop protection, mention gating, allowlists and pairing (see the module docstring)."""

    def __init__(
        self,
        store: ConversationStore,
        platforms: dict[str, PlatformAccess],
        *,
        loop_max_events: int = 20,
        loop_cooldown_seconds: float = 300.0,
        pairing_ttl_seconds: float = 3600.0,
        show_owner: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.platforms = platforms
        self.loop_max_events = loop_max_events
        self.loop_cooldown_seconds = loop_cooldown_seconds
        self.pairing_ttl_seconds = pairing_ttl_seconds
        self.show_owner = show_owner or (lambda line: logger.warning("%s", line))
        self.clock = clock
        self._recent: dict[str, deque[float]] = {}
        self._cooling: dict[str, float] = {}
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._wrong: dict[tuple[str, str], list[float]] = {}

    def access(self, platform: str) -> PlatformAccess:
        return self.platforms.setdefault(platform, PlatformAccess())

    # -- the check ---------------------------------------------------------------------------------

    def check(self, msg: Inbound) -> Decision:
        loop = self._loop_guard(msg)
        if loop is not None:
            return loop
        rules = self.access(msg.platform)
        if not msg.direct and not msg.button and rules.mention_chats.get(msg.chat, rules.require_mention) \
                and not msg.mentioned:
            return Decision("ignore")
        if self.admitted(msg):
            return Decision("run")
        if not msg.direct:
            return Decision("ignore")
        return self._pairing(msg)

    def admitted(self, msg: Inbound) -> bool:
        rules = self.access(msg.platform)
        return (any(fnmatch.fnmatchcase(msg.user, pattern) for pattern in rules.allow_users)
                or msg.chat in rules.allow_chats or self.store.is_admitted(msg.platform, msg.user))

    # -- loop protection ---------------------------------------------------------------------------

    def _loop_guard(self, msg: Inbound) -> Decision | None:
        now = self.clock()
        chat = f"{msg.platform}:{msg.chat}"
        until = self._cooling.get(chat)
        if until is not None:
            if now < until:
                return Decision("ignore")
            del self._cooling[chat]
            self._recent.pop(chat, None)
        recent = self._recent.setdefault(chat, deque())
        while recent and now - recent[0] >= 60.0:
            recent.popleft()
        recent.append(now)
        if len(recent) > self.loop_max_events:
            self._cooling[chat] = now + self.loop_cooldown_seconds
            logger.warning("%s: more than %d messages in a minute; cooling down for %.0fs",
                           chat, self.loop_max_events, self.loop_cooldown_seconds)
            minutes = max(1, round(self.loop_cooldown_seconds / 60))
            return Decision("cooldown", f"Too many messages in a minute here; I'll be quiet for {minutes}m.")
        return None

    def prune(self) -> None:
        """Forget the counts of chats quiet for a minute and finished cool-downs (memory of idle chats)."""
        now = self.clock()
        for chat in [c for c, times in self._recent.items() if not times or now - times[-1] >= 60.0]:
            del self._recent[chat]
        for chat in [c for c, until in self._cooling.items() if now >= until]:
            del self._cooling[chat]

    # -- pairing -------------------------------------------------------------------------------------

    def _pairing(self, msg: Inbound) -> Decision:
        who = (msg.platform, msg.user)
        now = self.clock()
        wrong = [t for t in self._wrong.get(who, []) if now - t < LOCKOUT_SECONDS]
        self._wrong[who] = wrong
        if len(wrong) >= MAX_WRONG_CODES:
            return Decision("ignore")
        pending = self._pending.get(who)
        if pending is not None and now < pending.expires:
            if msg.text.strip().upper().replace("-", "") == pending.code:
                del self._pending[who]
                self.store.admit(msg.platform, msg.user, msg.user_name or None)
                logger.warning("%s: admitted %s (%s) by pairing", msg.platform, msg.user, msg.user_name)
                return Decision("paired", "Paired — you can talk to me now.")
            wrong.append(now)
            return Decision("pair", "That is not the pairing code. Ask the owner of this bot for it.")
        code = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(CODE_LENGTH))
        self._pending[who] = _Pending(code, now + self.pairing_ttl_seconds, msg.user_name)
        self.show_owner(f"pairing: {msg.platform} user {msg.user} ({msg.user_name or '?'}) asks for access; "
                        f"give them the code {code}")
        return Decision("pair", "I don't know you yet. Ask the owner of this bot for the pairing code "
                                "and send it here.")
