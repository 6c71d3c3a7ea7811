"""Tests of hermes.routing: credentials, endpoints, selection, the portal login."""
