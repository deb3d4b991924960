#!/usr/bin/env bash
# Build Callisto.app and its .dmg on a Mac, by hand (what release.yml's macOS job runs).
#
#   installer/macos/build.sh          # from the repository root; uses .venv (created if missing)
#
# llama.cpp is built from source with Metal on and native CPU tuning off, so the app runs on
# every Mac of its architecture, not only the one that built it.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --upgrade pip
CMAKE_ARGS="-DGGML_METAL=on -DGGML_NATIVE=OFF" .venv/bin/python -m pip install --no-cache-dir \
  --force-reinstall --no-deps --no-binary llama-cpp-python "llama-cpp-python==0.3.36"
.venv/bin/python -m pip install -c constraints.txt -e '.[bundle]'
.venv/bin/python installer/build.py all
