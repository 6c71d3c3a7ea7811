"""The app server (``hermes serve``): the desktop app's backend, a JSON-RPC 2.0 API over one WebSocket.

Every client (the desktop front end, the TUI, tests, scripts) uses only this API; docs/app-server.md
describes its methods, notifications and authentication. Sessions are hosted by the same
:class:`~hermes.surfaces.host.SessionHost` as the messaging gateway (many sessions per process, a turn
queue each), on the ``desktop`` surface. Each session the API opens has an opaque handle (``session``,
``app:...``) that requests name; its stored session id (``session_id``) is known after its first turn
or at once for a resumed session.

* :mod:`~hermes.surfaces.appserver.auth` — the bearer token and who needs one;
* :mod:`~hermes.surfaces.appserver.rpc` — the methods and the notifications sent for host events;
* :mod:`~hermes.surfaces.appserver.server` — the Starlette app, the WebSocket endpoint, serving.
"""
