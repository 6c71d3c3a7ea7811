"""The platform adapters, one module each, and the table that builds them from config (:mod:`.table`)."""
