#!/usr/bin/env bash
# Sets up .venv from scratch and builds harness into it.
#
# - The venv sees system site-packages, so a torch already installed on the
#   machine (e.g. a CUDA build on a GPU box) is reused as is.
# - When no torch is importable, torch==2.13.0 is installed first: building
#   harness with build isolation, or installing a plain `torch` requirement
#   into an empty environment, would download a multi-GB CUDA wheel.
# - harness is then built with --no-build-isolation against that torch.
# - Then the C++ statement runtime and lean PCH are built into the harness
#   cache (python -m harness.measure.cpp.pch --prepare).
# - With --test, Ray (the optional `ray` extra) and tools only the tests need
#   are installed too when missing
#   (Chromium, which renders the HTML report in a test); where they cannot be
#   installed, a note says so and the tests that need them skip.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

TEST_TOOLS=0
for arg in "$@"; do
  case "$arg" in
    --test) TEST_TOOLS=1 ;;
    -h|--help)
      echo "usage: bash scripts/setup.sh [--test]"
      echo "  --test  also install Ray (the ray extra) and test-only tools when missing (chromium, via apt-get as root)"
      exit 0 ;;
    *) echo "setup: unknown option $arg (see --help)" >&2; exit 2 ;;
  esac
done

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
# With --test, Ray too (the optional `ray` extra: `bench --executor ray` and
# its tests); it does not pull another torch.
EXTRAS=test
[ "$TEST_TOOLS" = 1 ] && EXTRAS=test,ray,postgresql  # postgresql: psycopg, for the history's server test
"${PIP[@]}" --no-build-isolation -e ".[$EXTRAS]"
.venv/bin/python -c "import harness, harness._C; print('setup: harness', harness.__version__, 'ready in .venv')"
# The C++ statement runtime and the lean precompiled header, once per torch
# and compiler, so the first C++ statement does not wait for them. Not fatal:
# without them the first statement builds them itself (the PCH in the background).
echo "setup: precompiling the C++ statement headers (once per torch and compiler; about a minute)"
if ! .venv/bin/python -m harness.measure.cpp.pch --prepare; then
  echo "setup: note: precompiling failed; the first C++ statement will build the runtime and PCH itself"
fi

# A test-only Debian package: present, else installed with apt-get where this is root, else a note
# saying which tests will skip. Arguments: package, a command that finds it, what it is for, the skip.
test_package() {
  local package=$1 present=$2 purpose=$3 skipped=$4
  if eval "$present" >/dev/null 2>&1; then
    echo "setup: $package present ($purpose)"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $package with apt-get (test-only: $purpose)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null; }; then
      echo "setup: note: installing $package failed; $skipped will be skipped"
    fi
  else
    echo "setup: note: $package is not installed and cannot be installed here (needs root and apt-get);"
    echo "setup:       $skipped will be skipped (install the '$package' package to run it)"
  fi
}

if [ "$TEST_TOOLS" = 1 ]; then
  test_package chromium "command -v chromium || command -v chromium-browser" \
    "renders the HTML report" "the report's browser render test"
  # PostgreSQL's server programs (initdb, pg_ctl): the history test starts a throwaway cluster with them.
  test_package postgresql "command -v initdb || ls /usr/lib/postgresql/*/bin/initdb" \
    "the history database on a server" "the history's PostgreSQL test"
fi
