#!/usr/bin/env bash
# Install hermes with its test dependencies into .venv and run lint, type checks and the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
echo "== ruff"
.venv/bin/ruff check src tests benchmarks
echo "== mypy (strict, src/)"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
