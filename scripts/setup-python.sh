#!/usr/bin/env bash
# The aioquic test client's project-local virtualenv (.venv), pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
AIOQUIC=1.7.2
if [[ -x .venv/bin/python ]] && .venv/bin/python -c "import aioquic,sys; sys.exit(aioquic.__version__ != '$AIOQUIC')" 2>/dev/null; then
  exit 0
fi
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  apt-get update -qq && apt-get install -y -qq python3-venv
fi
python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check "aioquic==$AIOQUIC"
