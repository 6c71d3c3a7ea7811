"""Connector accounts for the agent (SPEC GW-12, GW-13): the ``connector_accounts`` tool (list and name,
never delete) and the registry hook that gives every connector tool its ``connector_alias``.

A tool belongs to a connector when it is registered with ``connector="<app id>"``::

    registry.register(name="gmail_search", toolset="connections", schema=SCHEMA, handler=search,
                      connector="gmail")

Its handler then receives the chosen account as ``connector_account`` (a
:class:`hermes.connectors.Account`) in ``**kw``, and its result gets ``account`` when that account is named.
"""
