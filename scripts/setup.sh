#!/usr/bin/env bash
# Sets up .venv from scratch and builds harness into it.
#
# - The venv sees system site-packages, so a torch already installed on the
#   machine (e.g. a CUDA build on a GPU box) is reused as is.
# - When no torch is importable, torch==2.13.0 is installed first: building
#   harness with build isolation, or installing a plain `torch` requirement
#   into an empty environment, would download a multi-GB CUDA wheel.
# - harness is then built with --no-build-isolation against that torch.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv --system-site-packages .venv
fi
PIP=(.venv/bin/python -m pip install --disable-pip-version-check --quiet)
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
  echo "setup: no torch importable; installing torch==2.13.0 (CPU build)"
  "${PIP[@]}" torch==2.13.0
fi
# Build tools for --no-build-isolation (cmake and ninja from PyPI, so only
# Python, g++ and pip are needed on the machine).
"${PIP[@]}" "scikit-build-core>=0.10" "pybind11>=2.12" "cmake>=3.18" "ninja>=1.11"
echo "setup: building harness (C++ core + Python package)"
"${PIP[@]}" --no-build-isolation -e ".[test]"
.venv/bin/python -c "import harness, harness._C; print('setup: harness', harness.__version__, 'ready in .venv')"
