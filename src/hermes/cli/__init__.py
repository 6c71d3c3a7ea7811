"""The ``hermes`` command: one module per command group, each importing its heavy parts lazily."""
