"""Compatibility checks against other clients of our servers (the upstream ``hermes-agent`` client)."""
