"""How a session meets a person: each surface implements the agent's event sink."""
