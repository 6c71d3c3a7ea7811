"""``x_search``: posts on X found by xAI's Grok (SPEC T-X). See :mod:`.tool` and :mod:`.search`."""
