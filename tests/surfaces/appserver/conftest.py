"""Fixtures of the app server's tests: ``serve`` starts a real app server on a free loopback port."""

from surfaces.appserver.harness import serve

__all__ = ["serve"]
