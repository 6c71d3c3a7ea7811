"""Connector accounts for the agent (requirement GW-12, GW-13): the ``connector_accounts`` tool (list and name,
never delete). Every connector tool gets its ``connector_alias`` from the session's wrapper
(:class:`hermes.tools.wrappers.ConnectorAccounts`), checked against :mod:`hermes.connectors.directory`.

A tool belongs to a connector when it is registered with ``connector="<app id>"``::

    registry.register(name="mail_search", toolset="connections", schema=SCHEMA, handler=search,
                      connector="gmail")

The gateway's own apps (OpenAPI documents it runs) are reached through the ``connections`` tool
instead (:mod:`hermes.tools.mcp.managed`), which applies the same rules itself.

Its handler then receives the chosen account as ``connector_account`` (a
:class:`hermes.connectors.Account`) in ``**kw``, and its result gets ``account`` when that account is named.
"""
