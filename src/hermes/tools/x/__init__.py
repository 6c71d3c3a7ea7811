"""``x_search``: posts on X found by xAI's Grok (requirement T-X). See :mod:`.tool` and :mod:`.search`."""
