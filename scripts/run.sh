#!/usr/bin/env bash
# Install hermes into .venv (once) and run it; arguments go to the hermes command (default: chat).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/hermes ] || [ pyproject.toml -nt .venv/bin/hermes ]; then
  echo "Installing hermes into .venv ..." >&2
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e .
  touch .venv/bin/hermes
fi
if [ $# -eq 0 ]; then
  set -- chat
fi
exec .venv/bin/hermes "$@"
