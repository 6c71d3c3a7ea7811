"""Chat platforms (Telegram, Discord, ...): the platform-independent engines their adapters plug into.

Each engine here talks to a small transport protocol instead of a platform SDK, so an adapter only has
to send messages and hand over the person's replies; see :mod:`hermes.surfaces.messaging.clarify`.
"""
