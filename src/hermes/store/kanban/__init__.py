"""The kanban board (requirement T-KAN): tasks, their links, runs and history in ``HERMES_HOME/kanban.db``.

:mod:`.states` is the state machine table, :mod:`.board` the store, :mod:`.workspace` the folder each task
runs in. Tools (``hermes.tools.kanban``), the CLI and the dispatcher all go through :class:`Board`.
"""
