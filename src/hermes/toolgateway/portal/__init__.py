"""Accounts, tokens and device login: the portal of the gateway.

* :mod:`.accounts` — users, plans, access tokens, claims, revocation (in the gateway database);
* :mod:`.oauth` — device codes, refresh rotation with reuse detection, login links;
* :mod:`.auth` — token → :class:`~.auth.Principal`; entitlement checks;
* :mod:`.jwt` — HS256 sign/verify;  :mod:`.keys` — the signing secret and admin token files;
* :mod:`.routes` — the portal's HTTP endpoints (``/api/oauth/…``, ``/device``, ``/api/account``).

Nothing is imported here: each module is loaded where it is used.
"""
