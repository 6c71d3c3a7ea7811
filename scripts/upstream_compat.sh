#!/usr/bin/env bash
# Upstream-client compatibility check for the Tool Gateway (docs/gateway/compat.md).
#
# Creates (or reuses) a separate venv with the unmodified upstream client, hermes-agent 0.19.0, plus the
# two SDKs it would otherwise pip-install on first use (firecrawl-py, fal-client), then runs
# tests/compat/upstream_driver.py with OUR venv: vendor fakes + `hermes toolgateway serve`, a device-code
# login of the upstream client through our portal, and its web search, web extract, image generation (FAL
# and Krea), text-to-speech, speech-to-text and terminal (managed Modal sandbox) paths through our relays.
#
#   scripts/upstream_compat.sh                  # set up if needed, then run the check
#   scripts/upstream_compat.sh --setup-only     # only create/refresh the upstream venv
#   scripts/upstream_compat.sh --workdir DIR    # keep the homes and logs of the run in DIR
#
# HERMES_UPSTREAM_VENV  the upstream venv (default ${XDG_CACHE_HOME:-~/.cache}/hermes/upstream-venv-0.19.0)
# PYTHON                the interpreter that creates it (default python3; 3.11 or newer)
set -euo pipefail
cd "$(dirname "$0")/.."

UPSTREAM="hermes-agent==0.19.0"
SDKS=("firecrawl-py==4.17.0" "fal-client==0.13.1")  # pinned by hermes-agent 0.19.0 (tools/lazy_deps.py)
VENV=${HERMES_UPSTREAM_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/hermes/upstream-venv-0.19.0}
PY=${PYTHON:-python3}

setup_only=0
if [ "${1:-}" = "--setup-only" ]; then
  setup_only=1
  shift
fi

installed() {
  "$VENV/bin/python" - <<'EOF' 2>/dev/null
import importlib.metadata as m
wanted = {"hermes-agent": "0.19.0", "firecrawl-py": "4.17.0", "fal-client": "0.13.1"}
raise SystemExit(0 if all(m.version(n) == v for n, v in wanted.items()) else 1)
EOF
}

if ! installed; then
  echo "== installing $UPSTREAM into $VENV (a few minutes the first time)"
  mkdir -p "$(dirname "$VENV")"
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$UPSTREAM" "${SDKS[@]}"
  installed || { echo "error: $VENV does not have $UPSTREAM ${SDKS[*]} after installing" >&2; exit 1; }
fi
[ "$setup_only" = 1 ] && { echo "upstream venv ready: $VENV"; exit 0; }

if [ ! -x .venv/bin/python ]; then
  echo "error: no .venv here; run scripts/test.sh (or pip install -e '.[test]' into .venv) first" >&2
  exit 1
fi
exec .venv/bin/python tests/compat/upstream_driver.py --venv "$VENV" "$@"
