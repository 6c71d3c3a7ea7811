"""Shared fixtures: an isolated HERMES_HOME and scripted model servers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakes.model_server import Reply, ScriptedModelServer

_MODEL_ENV = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "HERMES_MODEL", "OPENAI_MODEL")


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty HERMES_HOME; the model endpoint variables of the real environment are removed."""
    home = tmp_path / "hermes_home"
    home.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    for name in _MODEL_ENV:
        monkeypatch.delenv(name, raising=False)
    return home


ServerFactory = Callable[..., ScriptedModelServer]


@pytest.fixture
def model_server() -> Iterator[ServerFactory]:
    """Factory: ``model_server([text("hi")], model="m")`` starts a server; all are stopped at teardown."""
    started: list[ScriptedModelServer] = []

    def make(script: list[Reply] | Callable[[dict[str, Any]], Reply], **kwargs: Any) -> ScriptedModelServer:
        server = ScriptedModelServer(script, **kwargs)
        started.append(server)
        return server.start()

    yield make
    for server in reversed(started):
        server.stop()


# -- PostgreSQL and Redis for the gateway's multi-host tests (helpers: tests/fakes/pg_redis.py) -----------
# Session-scoped: one throw-away PostgreSQL cluster and one redis-server for the whole run, stopped at the
# end. Missing programs skip the tests that use them (fail instead when the CI variable is set).


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A :class:`fakes.pg_redis.PostgresServer`; ``postgres_server.database()`` gives a fresh database URL."""
    from fakes.pg_redis import PostgresServer

    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """A :class:`fakes.pg_redis.RedisServer` (``redis_server.url`` carries its password)."""
    from fakes.pg_redis import RedisServer

    server = RedisServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def traversable_root() -> Iterator[Path]:
    """A 0711 folder under /tmp: a user such as ``nobody`` can pass through it (pytest's own tmp is 0700),
    for the gateway's sandbox engine to create per-user folders in."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="hermes-root-", dir="/tmp"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pipe() -> Iterator[Any]:
    """A prompt_toolkit pipe input (``send_text`` types into it) for driving the interactive widgets."""
    from prompt_toolkit.input import create_pipe_input

    with create_pipe_input() as inp:
        yield inp
