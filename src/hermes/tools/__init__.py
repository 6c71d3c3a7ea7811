"""Tools: the registry, the toolset table, and one package per tool family.

Tool families are discovered automatically (see :func:`hermes.tools.registry.discover_builtin_tools`);
nothing here imports them.
"""
