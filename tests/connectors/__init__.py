"""Tests of hermes.connectors (the client side of connector accounts)."""
