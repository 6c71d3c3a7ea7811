"""``.env`` reading as a person meets it: quotes and comments, bad lines named once, bad bytes survive."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.config.dotenv import parse_dotenv, read_dotenv, set_dotenv_value


def test_quoted_values_with_a_comment_lose_their_quotes() -> None:
    assert parse_dotenv('HERMES_MODEL="fake" # comment\nA=\'x y\'  # c\nB=plain # c\nC="a\\"b\\nz"\n') == {
        "HERMES_MODEL": "fake", "A": "x y", "B": "plain", "C": 'a"b\nz'}


def test_unreadable_lines_are_skipped_with_one_warning_each(caplog: pytest.LogCaptureFixture) -> None:
    text = 'broken line\nD="open\nE="x" junk\nF=ok\n'
    with caplog.at_level(logging.WARNING, logger="hermes.config"):
        assert parse_dotenv(text, where="/h/.env") == {"F": "ok"}
        assert parse_dotenv(text, where="/h/.env") == {"F": "ok"}
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "/h/.env line 1 is skipped: it is not KEY=value",
        "/h/.env line 2 is skipped: the value of D cannot be read (its quote is never closed)",
        "/h/.env line 3 is skipped: the value of E cannot be read (text after the closing quote: 'junk')",
    ]


def test_a_non_utf8_byte_costs_its_line_only_and_survives_an_edit(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / ".env"
    path.write_bytes(b"A=1\nB=caf\xe9\nC=3\n")
    with caplog.at_level(logging.WARNING, logger="hermes.config"):
        assert read_dotenv(path) == {"A": "1", "C": "3"}
    assert f"{path} line 2 is skipped: byte 0xe9 at column 6 is not UTF-8" in caplog.text
    set_dotenv_value(path, "D", "4")
    assert path.read_bytes() == b"A=1\nB=caf\xe9\nC=3\nD=4\n"
    assert path.stat().st_mode & 0o777 == 0o600


def test_every_command_still_runs_with_a_bad_byte_in_env(hermes_home: Path) -> None:
    (hermes_home / ".env").write_bytes(b"OPENAI_API_KEY=sk-\xff\nHERMES_MODEL=\"m\" # mine\n")
    env = {k: v for k, v in os.environ.items() if k not in ("HERMES_MODEL", "OPENAI_API_KEY")}
    env["HERMES_HOME"] = str(hermes_home)
    proc = subprocess.run([sys.executable, "-m", "hermes", "tools", "list"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"{hermes_home / '.env'} line 1 is skipped: byte 0xff at column 19 is not UTF-8" in proc.stderr
